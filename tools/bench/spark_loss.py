#!/usr/bin/env python3
"""Spark loss-report decode rate against plain-Python readers in one process (same run), in one JSON line.

Generates the corpus of the acceptance test (1,000 files, 1,000,000 entries, our ``LossReport`` writer) in a
temporary dir, or reuses ``--corpus DIR`` (``host-*/loss-report.dat``; generated there if empty). Then, each
``--repeat`` times, the best run counting:
- the plain-Python readers a user would write, in this process: ``package`` (``driver.reports.loss_report``'s
  ``LossReportFile``, one entry object at a time) and ``struct`` (``struct.unpack_from`` along the mapped file,
  a tuple per entry: ``driver.analysis.decode.decode_entries``). The faster is the reference;
- ``numpy``, for scale: the Spark job's own decoder (``driver.analysis.columns``) in this process, no Spark;
- Spark: ``driver.analysis.job.decode_files`` materialised with Spark's ``noop`` sink, on ``--master`` (local[2]
  by default) or, with ``--cluster-workers 1,2``, on standalone clusters of that many 1-core workers on loopback
  started here, one after the other. The first Spark run of a session (JIT, Python workers starting) is reported
  apart as ``cold``.
Ratios: Spark / reference for each master; with two or more cluster sizes, also the larger cluster against the
smallest. The machine's load average is printed too: every figure moves with it. ``cpu_seconds`` is the CPU time of
this process tree over the run (Spark's JVMs and Python workers too, local or on the cluster started here),
which moves less with the load than the elapsed time does.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from driver.analysis import columns, decode
from driver.analysis.corpus import generate_corpus
from driver.reports.loss_report import LossReportFile


def read_package(files: list[Path]) -> int:
    entries = 0
    for path in files:
        with LossReportFile.map_existing(path) as f:
            entries += sum(1 for _ in f.entries())
    return entries


def read_struct(files: list[Path]) -> int:
    return sum(len(decode.decode_entries(columns.map_file(str(path)))) for path in files)


def read_numpy(files: list[Path]) -> int:
    return sum(len(columns.file_part(str(path), columns.map_file(str(path))).fixed) for path in files)


READERS: dict[str, Callable[[list[Path]], int]] = {"package": read_package, "struct": read_struct}


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of ``pid`` and every process under it (with their reaped children): this process, Spark's
    driver JVM, and the executors and Python workers of a local master or of the cluster started here."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = fields
            children.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        if p in stats:
            total += sum(int(x) for x in stats[p][11:15])  # utime, stime, cutime, cstime
        todo.extend(children.get(p, []))
    return total / tick


def best_of(repeat: int, run: Callable[[], int]) -> dict[str, Any]:
    """The fastest of ``repeat`` runs of ``run`` (which returns the entries it read), with its CPU seconds."""
    timings = []
    for _ in range(repeat):
        cpu = tree_cpu_seconds(os.getpid())
        started = time.perf_counter()
        entries = run()
        timings.append((time.perf_counter() - started, entries, tree_cpu_seconds(os.getpid()) - cpu))
    seconds, entries, cpu = min(timings)
    return {
        "entries": entries,
        "seconds": round(seconds, 3),
        "entries_per_s": round(entries / seconds),
        "cpu_seconds": round(cpu, 2),
        "all_seconds": [round(s, 3) for s, _, _ in timings],
    }


def spark_rate(pattern: str, master: str, repeat: int) -> dict[str, Any]:
    from driver.analysis.job import create_session, decode_files

    spark = create_session(master)
    try:
        counters = None

        def run() -> int:
            nonlocal counters
            df, counters = decode_files(spark, [pattern])
            df.write.format("noop").mode("overwrite").save()
            return int(counters.entries.value)

        cold = best_of(1, run)
        warm = best_of(repeat, run)
    finally:
        spark.stop()
    return {**warm, "cold_seconds": cold["seconds"], "cold_entries_per_s": cold["entries_per_s"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, help="reuse (or create) the corpus here instead of a temp dir")
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs of each reader and warm Spark runs (best)"
    )
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--cluster-workers",
        help="instead of --master: standalone clusters of these many 1-core workers (e.g. 1,2) on loopback, "
        "started here one after the other",
    )
    args = parser.parse_args()
    sizes = [int(n) for n in args.cluster_workers.split(",")] if args.cluster_workers else []

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
        readers = {
            name: best_of(args.repeat, lambda read=read: read(files)) for name, read in READERS.items()
        }
        numpy_one = best_of(args.repeat, lambda: read_numpy(files))
        reference = max(readers, key=lambda name: readers[name]["entries_per_s"])
        ref = readers[reference]
        print(f"spark_loss: readers {readers}, numpy {numpy_one}", file=sys.stderr)

        pattern = f"{root}/host-*/loss-report.dat"
        spark: dict[str, dict[str, Any]] = {}
        if sizes:
            from harness.spark_cluster import spark_cluster

            for n in sizes:
                with spark_cluster(root / f"cluster-{n}", workers=n) as cluster:
                    spark[f"standalone, {n} worker(s) of 1 core"] = spark_rate(
                        pattern, cluster.master_url, args.repeat
                    )
        else:
            spark[args.master] = spark_rate(pattern, args.master, args.repeat)
        for master, figures in spark.items():
            print(f"spark_loss: {master}: {figures}", file=sys.stderr)
            if figures["entries"] != ref["entries"]:
                print(
                    f"spark_loss: Spark decoded {figures['entries']}, the reference {ref['entries']}",
                    file=sys.stderr,
                )
                return 1
        ratios = {
            f"{master} / {reference} reader": round(figures["entries_per_s"] / ref["entries_per_s"], 3)
            for master, figures in spark.items()
        }
        ratios.update(
            {
                f"{master} / numpy in one process": round(
                    figures["entries_per_s"] / numpy_one["entries_per_s"], 3
                )
                for master, figures in spark.items()
            }
        )
        if len(sizes) > 1:
            rates = [figures["entries_per_s"] for figures in spark.values()]
            ratios[f"standalone {sizes[-1]} workers / {sizes[0]}"] = round(rates[-1] / rates[0], 3)
        print(
            json.dumps(
                {
                    "bench": "spark_loss_decode",
                    "files": len(files),
                    "entries": ref["entries"],
                    "corpus_generate_seconds": generate_s,
                    "reference": reference,
                    "plain_python": readers,
                    "numpy_one_process": numpy_one,
                    "spark": spark,
                    "ratios": ratios,
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
