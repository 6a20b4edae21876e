"""The per-file decoder the Spark job runs, the synthetic corpus, and the report writer (no Spark here)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from driver.analysis.corpus import FILE_LENGTH, file_sizes, generate_corpus
from driver.analysis.decode import ROW_FIELDS, file_rows, host_of
from driver.analysis.report import Aggregates, write_report
from driver.reports.loss_report import LossReportFile

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("path", "host"),
    [
        ("file:/data/fleet/host-17/loss-report.dat", "host-17"),
        ("hdfs://nn:8020/loss/2024-05-01/edge-3.loss-report.dat", "edge-3"),
        ("s3a://bucket/drivers/edge-4_loss-report.dat", "edge-4"),
        ("/x/garbage.dat", "garbage"),
        ("/x/loss-report.bin", "loss-report.bin"),
        ("loss-report.dat", "loss-report.dat"),
    ],
)
def test_host_of(path: str, host: str) -> None:
    assert host_of(path) == host


def test_file_sizes_sum_exactly() -> None:
    rng = np.random.default_rng(3)
    for files, entries in [(1000, 1_000_000), (7, 100), (1, 5), (10, 3)]:
        sizes = file_sizes(files, entries, rng)
        assert len(sizes) == files and sum(sizes) == entries and min(sizes) >= 0


def test_a_small_corpus_reads_back_the_same_with_both_decoders(tmp_path: Path) -> None:
    corpus = generate_corpus(tmp_path, files=10, entries=5_000, seed=5)
    assert corpus.entries == 5_000 and len(corpus.files) == 10
    total = 0
    for path in corpus.files:
        assert path.stat().st_size == FILE_LENGTH
        with LossReportFile.map_existing(path) as f:
            reference = list(f.entries())
        rows = file_rows(f"file:{path}", path.read_bytes())
        assert [tuple(r[6:8]) + tuple(r[8:10]) + (r[5], r[4], r[2], r[3]) for r in rows] == [
            tuple(e) for e in reference
        ]
        assert {r[1] for r in rows} == {path.parent.name}
        total += len(rows)
    assert total == 5_000
    assert len(ROW_FIELDS) == len(rows[0])


def _aggregates(with_loss: bool) -> Aggregates:
    if not with_loss:
        return Aggregates(
            totals={"entries": 0, "bytes_lost": 0, "observations": 0, "files_with_loss": 0, "streams": 0,
                    "first_ms": None, "last_ms": None},
            by_channel=[], by_source=[], by_host=[], top_offenders=[], top_images=[], over_time=[], bucket_ms=0,
            files_read=2,
        )  # fmt: skip
    t0 = 1_700_000_000_000
    return Aggregates(
        totals={"entries": 3, "bytes_lost": 700, "observations": 5, "files_with_loss": 2, "streams": 2,
                "first_ms": t0, "last_ms": t0 + 7_200_000},
        by_channel=[{"channel": "aeron:udp?endpoint=a:1", "bytes_lost": 600, "observations": 4, "images": 2,
                     "hosts": 2}, {"channel": "aeron:udp?endpoint=b:2|x=y", "bytes_lost": 100, "observations": 1,
                                   "images": 1, "hosts": 1}],
        by_source=[{"source": "/10.0.0.1:5", "bytes_lost": 700, "observations": 5, "images": 3, "hosts": 2}],
        by_host=[{"host": "h1", "bytes_lost": 500, "observations": 3, "images": 2},
                 {"host": "h2", "bytes_lost": 200, "observations": 2, "images": 1}],
        top_offenders=[{"channel": "aeron:udp?endpoint=a:1", "stream_id": 10, "bytes_lost": 600, "observations": 4,
                        "images": 2, "hosts": 2}],
        top_images=[{"host": "h1", "channel": "aeron:udp?endpoint=a:1", "stream_id": 10, "session_id": -1,
                     "source": "/10.0.0.1:5", "observation_count": 3, "total_bytes_lost": 400, "first_ms": t0,
                     "last_ms": t0 + 60_000}],
        over_time=[{"bucket_ms": t0, "bytes_lost": 400, "new_images": 3},
                   {"bucket_ms": t0 + 3_600_000, "bytes_lost": 300, "new_images": 0}],
        bucket_ms=3_600_000, files_read=3, skipped=[("file:/bad.dat", "entry at offset 0: negative count")],
        inputs=["/fleet/*"],
    )  # fmt: skip


@pytest.mark.parametrize("with_loss", [True, False])
def test_report_writes_markdown_json_and_pngs(tmp_path: Path, with_loss: bool) -> None:
    report, summary, charts = write_report(_aggregates(with_loss), tmp_path)
    assert [c.name for c in charts] == [
        "loss_by_channel.png", "loss_by_source.png", "loss_by_host.png", "top_offenders.png", "loss_over_time.png",
    ]  # fmt: skip
    for chart in charts:
        assert chart.read_bytes()[:8] == PNG_MAGIC and chart.stat().st_size > 2000
    text = report.read_text()
    for heading in (
        "## Summary",
        "## Top offenders",
        "## Loss by channel",
        "## Loss by source",
        "## Loss over time",
    ):
        assert heading in text
    for chart in charts:
        assert f"]({chart.name})" in text
    data = json.loads(summary.read_text())
    assert data["totals"]["bytes_lost"] == (700 if with_loss else 0)
    if with_loss:
        assert "## Skipped files" in text and "file:/bad.dat" in text
        assert "aeron:udp?endpoint=b:2\\|x=y" in text  # pipes escaped in tables
        assert data["skipped"] == [["file:/bad.dat", "entry at offset 0: negative count"]]
        assert data["top_offenders"][0]["stream_id"] == 10
