"""The Spark job on a fleet: 1,000 loss files with 1,000,000 entries (our writer) plus a truncated and a garbage file.

Spark output is checked against the plain-Python reader (``driver.reports.loss_report``, a separate decoder
from the job's): per-file and per-channel aggregates, and a checksum over every row (sum of 60-bit prefixes of
the SHA-256 of each row's canonical text, computed by Spark over the Parquet and by Python over the reference).
One SparkSession (local[2]) and one job run for the module.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyspark")

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from driver.analysis.corpus import FILE_LENGTH, generate_corpus
from driver.analysis.job import AnalysisResult, analyze, create_session
from driver.reports.loss_report import CorruptLossReportError, LossReportFile, entry_length
from harness.spark_cluster import stop_session
from tests.support.scratch import scratch_dir

pytestmark = pytest.mark.slow

FILES = 1000
ENTRIES = 1_000_000
COLUMNS = (
    "file", "host", "channel", "source", "stream_id", "session_id", "observation_count", "total_bytes_lost",
    "first_ms", "last_ms",
)  # fmt: skip


@dataclass
class Fleet:
    root: Path
    pattern: str
    truncated: Path
    garbage: Path
    rows: list[tuple[Any, ...]]  # reference rows in COLUMNS order
    generate_seconds: float


def _uri(path: Path) -> str:
    return f"file:{path}"  # how Spark's binaryFiles names a local file


def _row_hash(row: tuple[Any, ...]) -> int:
    return int(hashlib.sha256("|".join(map(str, row)).encode()).hexdigest()[:15], 16)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The module's files (the fleet's loss reports, the analysis's output), removed after it."""
    with scratch_dir(tmp_path_factory, "analyze-loss") as path:
        yield path


@pytest.fixture(scope="module")
def fleet(scratch: Path) -> Fleet:
    root = scratch / "fleet"
    root.mkdir()
    started = time.perf_counter()
    corpus = generate_corpus(root, FILES, ENTRIES, seed=11)
    generate_seconds = time.perf_counter() - started
    assert corpus.entries == ENTRIES and len(corpus.files) == FILES

    # A copy of a good file cut in the middle of its 500th entry, and a file of random bytes.
    source = corpus.files[0]
    with LossReportFile.map_existing(source) as f:
        good = list(f.entries())
    cut = sum(entry_length(e.channel, e.source) for e in good[:499]) + 20
    truncated = root / "host-trunc" / "loss-report.dat"
    truncated.parent.mkdir()
    truncated.write_bytes(source.read_bytes()[:cut])
    garbage = root / "host-garbage" / "loss-report.dat"
    garbage.parent.mkdir()
    garbage.write_bytes(np.random.default_rng(2).integers(0, 256, FILE_LENGTH, dtype=np.uint8).tobytes())
    for bad in (truncated, garbage):
        with LossReportFile.map_existing(bad) as f, pytest.raises(CorruptLossReportError):
            list(f.entries())

    rows = []
    for path in corpus.files:
        uri, host = _uri(path), path.parent.name
        with LossReportFile.map_existing(path) as f:
            rows.extend(
                (uri, host, e.channel, e.source, e.stream_id, e.session_id, e.observation_count, e.total_bytes_lost,
                 e.first_observation_ms, e.last_observation_ms)
                for e in f.entries()
            )  # fmt: skip
    assert len(rows) == ENTRIES
    return Fleet(root, f"{root}/*/loss-report.dat", truncated, garbage, rows, generate_seconds)


@pytest.fixture(scope="module")
def spark() -> Any:
    session = create_session("local[2]")
    yield session
    stop_session(session)  # with pyspark's gateway JVM, which stop() leaves running


@dataclass
class Run:
    result: AnalysisResult
    progress: list[str]


@pytest.fixture(scope="module")
def run(spark: SparkSession, fleet: Fleet, scratch: Path) -> Run:
    progress: list[str] = []

    def record(message: str) -> None:
        progress.append(message)
        print(f"analyze-loss: {message}", file=sys.stderr, flush=True)

    result = analyze(spark, [fleet.pattern], scratch / "analysis", progress=record)
    return Run(result, progress)


@pytest.fixture(scope="module")
def stored(spark: SparkSession, run: Run) -> Any:
    """The Parquet output with the timestamps back as epoch ms, in COLUMNS order."""
    df = spark.read.parquet(run.result.parquet.as_uri())
    return df.select(
        *COLUMNS[:-2],
        F.unix_millis("first_observation").alias("first_ms"),
        F.unix_millis("last_observation").alias("last_ms"),
    )


def test_spark_rows_match_the_plain_python_decoder(fleet: Fleet, run: Run, stored: Any) -> None:
    assert run.result.entries == ENTRIES and run.result.files_read == FILES

    # Per file: entries, bytes, observations, time range.
    expected: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 2**63, 0])
    for row in fleet.rows:
        agg = expected[row[0]]
        agg[0] += 1
        agg[1] += row[7]
        agg[2] += row[6]
        agg[3] = min(agg[3], row[8])
        agg[4] = max(agg[4], row[9])
    per_file = stored.groupBy("file").agg(
        F.count(F.lit(1)),
        F.sum("total_bytes_lost"),
        F.sum("observation_count"),
        F.min("first_ms"),
        F.max("last_ms"),
    )
    assert {r[0]: list(r[1:]) for r in per_file.collect()} == dict(expected)

    # Per (channel, stream): bytes lost.
    by_stream: dict[tuple[str, int], int] = defaultdict(int)
    for row in fleet.rows:
        by_stream[(row[2], row[4])] += row[7]
    spark_by_stream = stored.groupBy("channel", "stream_id").agg(F.sum("total_bytes_lost")).collect()
    assert {(r[0], r[1]): r[2] for r in spark_by_stream} == dict(by_stream)

    # Every row: count and an order-independent checksum of the full row set.
    canonical = F.concat_ws("|", *[F.col(c).cast("string") for c in COLUMNS])
    row_hash = F.conv(F.substring(F.sha2(canonical, 256), 1, 15), 16, 10).cast("decimal(38,0)")
    count, checksum = stored.agg(F.count(F.lit(1)), F.sum(row_hash)).first()
    assert count == len(fleet.rows)
    assert int(checksum) == sum(_row_hash(row) for row in fleet.rows)


def test_truncated_and_garbage_files_are_named_and_skipped(fleet: Fleet, run: Run, stored: Any) -> None:
    skipped = dict(run.result.skipped)
    assert set(skipped) == {_uri(fleet.truncated), _uri(fleet.garbage)}
    assert "past the end" in skipped[_uri(fleet.truncated)]
    assert skipped[_uri(fleet.garbage)].startswith("entry at offset 0: ")
    for path, reason in skipped.items():
        assert f"skipped {path}: {reason}" in run.progress
    assert stored.filter(F.col("host").isin("host-trunc", "host-garbage")).count() == 0
    report = run.result.report.read_text()
    assert "## Skipped files" in report and "host-trunc" in report and "host-garbage" in report


def test_report_charts_and_summary(fleet: Fleet, run: Run) -> None:
    out = run.result.out_dir
    for name in ("loss_by_channel", "loss_by_source", "loss_by_host", "top_offenders", "loss_over_time"):
        png = out / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000, png
        assert f"]({name}.png)" in run.result.report.read_text()
    summary = json.loads(run.result.summary.read_text())
    by_stream: dict[tuple[str, int], int] = defaultdict(int)
    for row in fleet.rows:
        by_stream[(row[2], row[4])] += row[7]
    top = max(by_stream.items(), key=lambda kv: kv[1])
    assert (summary["top_offenders"][0]["channel"], summary["top_offenders"][0]["stream_id"]) == top[0]
    assert summary["top_offenders"][0]["bytes_lost"] == top[1]
    assert summary["totals"]["entries"] == ENTRIES
    assert summary["totals"]["bytes_lost"] == sum(r[7] for r in fleet.rows)
    assert summary["files_read"] == FILES and len(summary["skipped"]) == 2
    assert sum(b["bytes_lost"] for b in summary["over_time"]) == summary["totals"]["bytes_lost"]
    assert sum(b["new_images"] for b in summary["over_time"]) == ENTRIES
    assert any(line.startswith("decoding: ") for line in run.progress), run.progress


def test_parquet_is_readable_with_typed_columns(spark: SparkSession, fleet: Fleet, run: Run) -> None:
    df = spark.read.parquet(run.result.parquet.as_uri())
    types = dict(df.dtypes)
    assert types == {
        "file": "string", "host": "string", "channel": "string", "source": "string", "stream_id": "int",
        "session_id": "int", "observation_count": "bigint", "total_bytes_lost": "bigint",
        "first_observation": "timestamp", "last_observation": "timestamp",
    }  # fmt: skip
    first = fleet.rows[0]
    match = df.filter((F.col("file") == first[0]) & (F.col("session_id") == first[5])).collect()
    assert len(match) >= 1
    assert int(match[0]["first_observation"].timestamp() * 1000) == first[8]


def test_decode_rate_on_local_2(fleet: Fleet, run: Run, capsys: pytest.CaptureFixture[str]) -> None:
    with capsys.disabled():
        print(
            f"\n[analyze-loss] corpus of {FILES} files / {ENTRIES:,d} entries generated in "
            f"{fleet.generate_seconds:.1f} s; Spark local[2] decode + Parquet write: "
            f"{run.result.decode_seconds:.1f} s = {run.result.entries_per_second:,.0f} entries/s"
        )
    assert run.result.entries_per_second > 0
