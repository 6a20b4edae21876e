#!/usr/bin/env python3
"""Archive record and replay throughput: ours (``mediadriver run --archive``) vs the Java ArchivingMediaDriver.

Each run starts one archiving driver -- ours, or the Aeron 1.15.1 ``io.aeron.archive.ArchivingMediaDriver``
(driver and archive SHARED, one thread each) -- in a fresh dir under /dev/shm, and the same Java client,
tools/bench/java/ArchiveBench.java, with the unmodified 1.15.1 AeronArchive: it starts a LOCAL recording of
``--channel`` (aeron:ipc, or aeron:udp on a free port, recorded through a spy), offers ``--messages`` messages
of ``--length`` bytes as fast as it can on an exclusive publication, and waits until the recording position
counter reaches the publication's position: record msgs/s = messages / (first offer .. recorded to the end).
It then replays the whole recording over aeron:ipc and polls it: replay msgs/s = messages / (replay request ..
last message polled). Each run does ``--passes`` such passes (a new recording each) and keeps the last, so the
client's JIT is warm. Ours and Java alternate (``--order``) ``--runs`` times per length; the JSON line has the
medians and ratios ours / java for record and replay, per length. Goal: every ratio >= 1.0.

Exit code: 0 goal met, 1 goal missed, 2 no ratio (a driver failed every run, or no peer / javac).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from archive_harness import (
    JAVA_ARCHIVE_DEFAULT_PROPS,
    archive_channel_props,
    compile_bench_client,
    fields,
    run_bench_client,
    start_archiving_driver,
)
from harness import (
    BenchError,
    Harness,
    add_compare_args,
    compare,
    emit,
    first_error,
    free_udp_port,
    host_info,
    median_of,
    parse_props,
    progress,
    ratio,
    require_peers,
    rounded,
    run_main,
)

DEFAULT_BYTES = 64 * 1024 * 1024  # payload per pass: 2 M messages of 32 B, 64 k of 1 KiB
DONE = re.compile(r"^REPLAY pass=")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lengths", default="32,1024", help="message lengths, comma separated (default 32,1024)"
    )
    parser.add_argument(
        "--messages", type=int, default=None, help="messages per pass (default 64 MiB / length)"
    )
    parser.add_argument("--passes", type=int, default=2, help="passes per run; the last counts (default 2)")
    parser.add_argument("--channel", choices=("ipc", "udp"), default="ipc", help="the recorded stream")
    add_compare_args(parser, timeout=300.0)
    args = parser.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    props = {
        "ours": {"aeron.spies.simulate.connection": "true", **parse_props(args.ours_prop)},
        "java": {
            "aeron.spies.simulate.connection": "true",
            **JAVA_ARCHIVE_DEFAULT_PROPS,
            **parse_props(args.java_prop),
        },
    }
    try:
        peers = require_peers()
        classes = compile_bench_client(peers, Path(tempfile.mkdtemp(prefix="archive-bench-classes-")))
    except BenchError as exc:
        progress(str(exc))
        emit({"bench": "archive_throughput", "error": str(exc)})
        return 2

    host = host_info()
    result: dict[str, Any] = {"bench": "archive_throughput", "channel": args.channel, "goal": ">= 1.0"}
    ratios: list[float | None] = []
    for length in lengths:
        messages = args.messages or max(1, DEFAULT_BYTES // length)

        def measure(kind: str, length: int = length, messages: int = messages) -> dict[str, Any]:
            with Harness(peers) as h:
                channels = archive_channel_props()
                driver = start_archiving_driver(h, kind, channels, props[kind])
                channel = (
                    "aeron:ipc"
                    if args.channel == "ipc"
                    else f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}"
                )
                lines = run_bench_client(
                    h,
                    classes,
                    driver,
                    channels,
                    {
                        "bench.channel": channel,
                        "bench.messages": messages,
                        "bench.length": length,
                        "bench.passes": args.passes,
                        "bench.timeout.ms": int(args.timeout * 1000),
                    },
                    args.timeout,
                    DONE,
                    args.passes,
                )
            record = fields([ln for ln in lines if ln.startswith("RECORD ")][-1])
            replay = fields([ln for ln in lines if ln.startswith("REPLAY ")][-1])
            return {
                "record_msgs_per_s": record["msgs_per_s"],
                "record_mb_per_s": record["mb_per_s"],
                "replay_msgs_per_s": replay["msgs_per_s"],
                "replay_mb_per_s": replay["mb_per_s"],
            }

        results = compare(measure, args.runs, args.order, label=f"archive_throughput {length} B")
        entry: dict[str, Any] = {"messages": messages}
        for what in ("record", "replay"):
            ours = median_of(results["ours"], f"{what}_msgs_per_s")
            java = median_of(results["java"], f"{what}_msgs_per_s")
            entry[f"{what}_ours_msgs_per_s"] = rounded(ours, 0)
            entry[f"{what}_java_msgs_per_s"] = rounded(java, 0)
            entry[f"{what}_ours_mb_per_s"] = rounded(median_of(results["ours"], f"{what}_mb_per_s"))
            entry[f"{what}_java_mb_per_s"] = rounded(median_of(results["java"], f"{what}_mb_per_s"))
            entry[f"{what}_ratio"] = ratio(ours, java)
            ratios.append(entry[f"{what}_ratio"])
        for kind in ("ours", "java"):
            error = first_error(results[kind])
            if error:
                entry[f"{kind}_error"] = error
            entry[f"{kind}_runs"] = [
                r if "error" in r else {k: round(v, 1) for k, v in r.items()} for r in results[kind]
            ]
        result[f"len_{length}"] = entry
    result.update(runs=args.runs, passes=args.passes, **host)
    emit(result)
    if any(r is None for r in ratios):
        return 2
    return 0 if all(r >= 1.0 for r in ratios if r is not None) else 1


if __name__ == "__main__":
    run_main(main)
