"""`mediadriver archive export`: on a standalone cluster (a master and two workers started with pyspark's own
scripts) it writes, message for message, what a full replay through the archive delivers; a damaged frame fails it
by name, or is skipped and counted."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

import pyarrow.parquet as pq

from harness.recorded_streams import Session, record, recording_archive, replay_messages
from harness.spark_cluster import spark_cluster
from tests.analysis.test_recording_source import messages

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = 50_000
RUN_TIMEOUT_S = 600


def export(archive_dir: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AERON_", "SPARK_"))}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "driver", "archive", "--dir", str(archive_dir), "export", "--out", str(out), *args],
        capture_output=True, text=True, env=env, cwd=out.parent, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip


def test_a_standalone_cluster_exports_what_a_replay_delivers(tmp_path: Path) -> None:
    rng = random.Random(45)
    with recording_archive(tmp_path, segment_length=1 << 20) as env:
        ids = record(
            env, [Session(messages(rng, MESSAGES, 0)), Session(messages(rng, 5000, 1 << 40), late=333)]
        )
        replayed = {r: replay_messages(env, r) for r in ids}
    archive_dir = tmp_path / "archive"
    with spark_cluster(tmp_path / "cluster", workers=2) as cluster:
        done = export(archive_dir, tmp_path / "all.parquet", "--master", cluster.master_url)
        assert done.returncode == 0, done.stderr
        one = export(archive_dir, tmp_path / "one.csv", "--master", cluster.master_url, "--format", "csv",
                     "--recording", str(ids[1]))  # fmt: skip
        assert one.returncode == 0, one.stderr
    assert f"{MESSAGES + 5000 - 333:,d} messages written" in done.stdout
    table = pq.read_table(tmp_path / "all.parquet").sort_by(
        [("recording_id", "ascending"), ("position", "ascending")]
    )
    got: dict[int, list[tuple[bytes, int]]] = {}
    for recording_id, payload, reserved in zip(
        *(table.column(n).to_pylist() for n in ("recording_id", "payload", "reserved_value")), strict=True
    ):
        got.setdefault(recording_id, []).append((payload, reserved))
    assert got == replayed
    assert f"{5000 - 333:,d} messages written" in one.stdout
    csv_lines = sum(len(p.read_text().splitlines()) - 1 for p in (tmp_path / "one.csv").glob("part-*.csv"))
    assert csv_lines == 5000 - 333


def test_export_names_a_damaged_frame_and_skips_it_when_asked(tmp_path: Path) -> None:
    with recording_archive(tmp_path) as env:
        recording_id = record(env, [Session(messages(random.Random(3), 300, 0))])[0]
    archive_dir = tmp_path / "archive"
    segment = archive_dir / f"{recording_id}-0.rec"
    with open(segment, "r+b") as f:
        f.seek(4096 + 32 * 3 + 8)  # inside some frame of the first segment
        f.write(b"\x5a\xa5")
    failed = export(archive_dir, tmp_path / "out.parquet", "--master", "local[1]")
    assert failed.returncode == 1
    assert f"{segment}: position" in failed.stderr
    skipped = export(archive_dir, tmp_path / "out.parquet", "--master", "local[1]", "--skip-corrupt")
    assert skipped.returncode == 0, skipped.stderr
    assert "1 damaged place(s) skipped" in skipped.stdout
