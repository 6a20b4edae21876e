#!/usr/bin/env python3
"""Spark loss-report decode rate on local[2] against the plain-Python reader (reference), in one JSON line.

Generates the corpus of the acceptance test (1,000 files, 1,000,000 entries, our ``LossReport`` writer) in a
temporary dir, or reuses ``--corpus DIR`` (``host-*/loss-report.dat``; generated there if empty). Then:
- reference: ``driver.reports.loss_report`` reading every file in this process, one entry at a time;
- spark: ``driver.analysis.job.decode_files`` (Spark lists the files; mapInArrow decodes each into an Arrow batch)
  materialised with Spark's ``noop`` sink, cold (first run, JIT and Python workers starting) and warm.
Ratio = warm Spark / reference. The machine's load average is printed too: Spark's figure moves with it.
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

from driver.analysis.corpus import generate_corpus
from driver.reports.loss_report import LossReportFile


def reference_rate(files: list[Path]) -> tuple[int, float]:
    started = time.perf_counter()
    entries = 0
    for path in files:
        with LossReportFile.map_existing(path) as f:
            entries += sum(1 for _ in f.entries())
    return entries, time.perf_counter() - started


def spark_rate(pattern: str, master: str) -> dict[str, float | int]:
    from driver.analysis.job import create_session, decode_files

    spark = create_session(master)
    try:
        timings = []
        for _ in range(2):
            df, counters = decode_files(spark, [pattern])
            started = time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            timings.append((counters.entries.value, time.perf_counter() - started))
    finally:
        spark.stop()
    (cold_entries, cold_s), (warm_entries, warm_s) = timings
    return {
        "entries": warm_entries,
        "cold_seconds": round(cold_s, 2),
        "cold_entries_per_s": round(cold_entries / cold_s),
        "seconds": round(warm_s, 2),
        "entries_per_s": round(warm_entries / warm_s),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, help="reuse (or create) the corpus here instead of a temp dir")
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--cluster-workers",
        type=int,
        help="instead of --master: a standalone cluster of this many 1-core workers on loopback, started here",
    )
    args = parser.parse_args()

    temp = None
    root = args.corpus
    if root is None:
        temp = root = Path(tempfile.mkdtemp(prefix="spark-loss-bench-"))
    try:
        generate_s = None
        files = sorted(root.glob("host-*/loss-report.dat"))
        if not files:
            started = time.perf_counter()
            files = generate_corpus(root, args.files, args.entries).files
            generate_s = round(time.perf_counter() - started, 2)
        print(f"spark_loss: corpus of {len(files)} files in {root}", file=sys.stderr)
        ref_entries, ref_s = reference_rate(files)
        pattern = f"{root}/host-*/loss-report.dat"
        if args.cluster_workers:
            from tests.support.spark_cluster import spark_cluster

            with spark_cluster(root / "cluster", workers=args.cluster_workers) as cluster:
                args.master = f"standalone, {args.cluster_workers} worker(s) of 1 core"
                spark = spark_rate(pattern, cluster.master_url)
        else:
            spark = spark_rate(pattern, args.master)
        if spark["entries"] != ref_entries:
            print(
                f"spark_loss: Spark decoded {spark['entries']} entries, the reference {ref_entries}",
                file=sys.stderr,
            )
            return 1
        ref_rate = ref_entries / ref_s
        print(
            json.dumps(
                {
                    "bench": "spark_loss_decode",
                    "master": args.master,
                    "files": len(files),
                    "entries": ref_entries,
                    "corpus_generate_seconds": generate_s,
                    "spark": spark,
                    "reference_python": {"seconds": round(ref_s, 2), "entries_per_s": round(ref_rate)},
                    "ratio_spark_to_reference": round(spark["entries_per_s"] / ref_rate, 3),
                    "loadavg_1m": round(os.getloadavg()[0], 2),
                    "cpus": os.cpu_count(),
                }
            ),
            flush=True,
        )
        return 0
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
