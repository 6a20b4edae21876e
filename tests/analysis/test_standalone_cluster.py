"""``mediadriver analyze-loss --master spark://...`` on a real Spark standalone cluster (a master and two workers
on loopback, from pyspark's own classes) over the loss reports of three drivers: the same report as local mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from driver.analysis.corpus import generate_corpus
from harness.spark_cluster import spark_cluster

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DRIVERS = 3
ENTRIES = 3_000
RUN_TIMEOUT_S = 300


def start_analyze_loss(pattern: str, master: str, out: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AERON_", "SPARK_"))}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.Popen(
        [sys.executable, "-m", "driver", "analyze-loss", pattern, "--master", master, "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=out.parent,
    )  # fmt: skip


def finish_analyze_loss(process: subprocess.Popen[str], out: Path) -> dict[str, Any]:
    try:
        _, stderr = process.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return summary


def test_the_standalone_cluster_writes_the_same_report_as_local_mode(tmp_path: Path) -> None:
    corpus = generate_corpus(tmp_path / "drivers", DRIVERS, ENTRIES, seed=5)
    pattern = f"{tmp_path}/drivers/host-*/loss-report.dat"
    # Local mode runs while the cluster's daemons start: both are mostly JVMs starting up.
    local_run = start_analyze_loss(pattern, "local[2]", tmp_path / "local")
    try:
        with spark_cluster(tmp_path / "cluster", workers=2) as cluster:
            local = finish_analyze_loss(local_run, tmp_path / "local")
            remote_run = start_analyze_loss(pattern, cluster.master_url, tmp_path / "remote")
            remote = finish_analyze_loss(remote_run, tmp_path / "remote")
    finally:
        if local_run.poll() is None:
            local_run.kill()
            local_run.wait()
    assert local["totals"]["entries"] == corpus.entries == ENTRIES
    assert local["files_read"] == remote["files_read"] == DRIVERS
    for key in ("totals", "top_offenders", "top_images", "by_host", "by_channel", "by_source", "over_time"):
        assert remote[key] == local[key], key
    assert remote == local
