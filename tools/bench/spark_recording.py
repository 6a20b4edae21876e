#!/usr/bin/env python3
"""Recordings read by Spark (the ``aeron-recording`` source) against a replay through the archive into a Python
subscriber, in one run, as one JSON line.

Records ``--messages`` messages of ``--size`` bytes (every ``--fragmented``-th one 3 KiB, so fragmented) from a
Python publication with our archive on an embedded driver (IPC, 1 MiB terms, ``--segment-mib`` segments), then:
- ``replay``: the whole recording replayed through the archive into a Python subscriber (a ``FragmentAssembler``
  counting messages), the driver and archive in this process;
- Spark, with the driver stopped (files only): rows/s into a DataFrame ``count()`` and into Parquet, on
  ``local[2]`` and, unless ``--cluster-workers 0``, on a standalone cluster of that many 1-core workers on
  loopback started here. The first Spark run of a session (JVM warm-up, Python workers starting) is reported
  apart as ``cold``; the figures are the best warm run of ``--repeat``.
Ratios: each Spark rate against the replay's. The load average is printed too: every figure moves with it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.recorded_streams import Session, record, recording_archive, replay
from tools.bench.spark_loss import best_of

FRAGMENTED_SIZE = 3 * 1024


def make_messages(count: int, size: int, fragmented_every: int) -> list[tuple[bytes, int]]:
    small, large = bytes(range(256)) * (size // 256 + 1), bytes(FRAGMENTED_SIZE)
    small = small[:size]
    return [
        (large if fragmented_every and i % fragmented_every == fragmented_every - 1 else small, i)
        for i in range(count)
    ]


def spark_rates(archive_dir: Path, out: Path, master: str, repeat: int) -> dict[str, Any]:
    from driver.analysis.recording_export import read_recordings, recording_session

    spark = recording_session(master)
    try:

        def count() -> int:
            return int(read_recordings(spark, str(archive_dir)).count())

        def parquet() -> int:
            read_recordings(spark, str(archive_dir)).write.mode("overwrite").parquet(str(out))
            return int(spark.read.parquet(str(out)).count())

        cold = best_of(1, count)
        figures: dict[str, Any] = {"cold_count_seconds": cold["seconds"]}
        for name, run in (("count", count), ("parquet", parquet)):
            warm = best_of(repeat, run)
            figures[name] = {**warm, "rows_per_s": warm.pop("entries_per_s"), "rows": warm.pop("entries")}
    finally:
        spark.stop()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--messages", type=int, default=1_000_000, help="default 1,000,000 (10000000: the full figure)"
    )
    parser.add_argument("--size", type=int, default=100, help="message bytes (default 100)")
    parser.add_argument("--fragmented", type=int, default=100, help="every Nth message 3 KiB (0: none)")
    parser.add_argument("--segment-mib", type=int, default=64, help="segment file length (default 64 MiB)")
    parser.add_argument("--repeat", type=int, default=3, help="warm Spark runs of each kind (best)")
    parser.add_argument(
        "--cluster-workers", type=int, default=2, help="1-core workers of the cluster (0: none)"
    )
    parser.add_argument("--dir", type=Path, help="work here (kept) instead of in a temporary dir")
    args = parser.parse_args()

    work = args.dir or Path(tempfile.mkdtemp(prefix="spark-recording-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    try:
        started = time.perf_counter()
        counted = 0

        def on_message(*_: Any) -> None:
            nonlocal counted
            counted += 1

        with recording_archive(work, term_length=1 << 20, segment_length=args.segment_mib << 20) as env:
            messages = make_messages(args.messages, args.size, args.fragmented)
            recording_id = record(env, [Session(messages)])[0]
            del messages
            record_s = time.perf_counter() - started
            print(
                f"spark_recording: recorded {args.messages:,d} messages in {record_s:.1f} s", file=sys.stderr
            )

            def run_replay() -> int:
                nonlocal counted
                counted = 0
                replay(env, recording_id, on_message)
                return counted

            replayed = best_of(1, run_replay)
        replay_figures = {
            **replayed,
            "rows_per_s": replayed.pop("entries_per_s"),
            "rows": replayed.pop("entries"),
        }
        print(f"spark_recording: replay {replay_figures}", file=sys.stderr)

        archive_dir = work / "archive"
        spark: dict[str, dict[str, Any]] = {"local[2]": spark_rates(archive_dir, work / "out.parquet", "local[2]",
                                                                     args.repeat)}  # fmt: skip
        if args.cluster_workers:
            from harness.spark_cluster import spark_cluster

            with spark_cluster(work / "cluster", workers=args.cluster_workers) as cluster:
                spark[f"standalone, {args.cluster_workers} workers of 1 core"] = spark_rates(
                    archive_dir, work / "out.parquet", cluster.master_url, args.repeat
                )
        for master, figures in spark.items():
            print(f"spark_recording: {master}: {figures}", file=sys.stderr)
            for kind in ("count", "parquet"):
                if figures[kind]["rows"] != replay_figures["rows"]:
                    print(
                        f"spark_recording: {master} {kind}: {figures[kind]['rows']} rows, the replay "
                        f"{replay_figures['rows']}",
                        file=sys.stderr,
                    )
                    return 1
        ratios: dict[str, float] = {}
        for master, figures in spark.items():
            for kind in ("count", "parquet"):
                ratios[f"{master} {kind} / replay"] = round(
                    figures[kind]["rows_per_s"] / replay_figures["rows_per_s"], 3
                )
        print(
            json.dumps(
                {
                    "bench": "spark_recording",
                    "messages": args.messages,
                    "size": args.size,
                    "fragmented_every": args.fragmented,
                    "segment_mib": args.segment_mib,
                    "record_seconds": round(record_s, 2),
                    "replay_into_python": replay_figures,
                    "spark": spark,
                    "ratios": ratios,
                    "cpus": os.cpu_count(),
                    "load_1m_start": round(load, 2),
                    "load_1m_end": round(os.getloadavg()[0], 2),
                }
            )
        )
        return 0
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
