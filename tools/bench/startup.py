"""Start-up and idle memory: ours (``python -m driver run``) against the Java 1.15.1 driver, launch by launch.

Each launch, the two kinds interleaved: the time from spawning the driver to its cnc.dat being ready with a
conductor heartbeat (harness/cnc.py ``cnc_ready``, polled every millisecond), then, after ``--settle`` seconds
idle, its anonymous resident memory (``RssAnon`` of /proc/PID/status: what the process itself allocated, not the
mapped files it shares). Also the command line's own start-up, ours only: ``mediadriver --help`` and
``mediadriver stat --once`` against the running driver, as whole processes. Medians over ``--launches``.

``--mediadriver`` launches ours with another ``mediadriver`` script (a venv where the project is pip-installed
rather than editable, to tell the editable install apart); by default ``python -m driver`` from this checkout.
Goals: ready and RssAnon <= 0.7x Java's; both commands < 0.25 s.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from harness.cnc import cnc_ready
from tools.bench.harness import Harness, wait_ready
from tools.bench.report import BenchError, emit, host_info, no_comparison, progress, run_main

READY_GOAL = 0.7
RSS_GOAL = 0.7
COMMAND_GOAL_S = 0.25


def rss_anon_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    raise BenchError(f"no RssAnon in /proc/{pid}/status")


def launch(harness: Harness, kind: str, ours: list[str], settle_s: float) -> dict[str, float]:
    aeron_dir = harness.new_dir(f"startup-{kind}") / "aeron"
    cmd = harness.driver_cmd(kind, aeron_dir)
    if kind == "ours":
        cmd = [*ours, *cmd[3:]]  # in place of `python -m driver`
    start = time.monotonic()
    proc = harness.spawn(f"{kind}-driver", cmd)
    wait_ready(proc, lambda: cnc_ready(aeron_dir), f"{kind} driver", timeout=30.0)
    ready_ms = (time.monotonic() - start) * 1000.0
    time.sleep(settle_s)
    result = {"ready_ms": ready_ms, "rss_anon_mb": rss_anon_kb(proc.pid) / 1024.0}
    if kind == "ours":
        result["help_s"] = timed([*ours, "--help"])
        result["stat_once_s"] = timed([*ours, "stat", "--once", "--dir", str(aeron_dir)])
    proc.signal(15)
    proc.popen.wait(timeout=10)
    return result


def timed(cmd: list[str]) -> float:
    start = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, check=False)
    elapsed = time.monotonic() - start
    if done.returncode != 0:
        raise BenchError(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.decode()[-300:]}")
    return elapsed


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=5)
    parser.add_argument("--settle", type=float, default=2.0, help="seconds idle before reading memory")
    parser.add_argument("--mediadriver", help="the mediadriver script to launch (default: python -m driver)")
    args = parser.parse_args()
    ours = [args.mediadriver] if args.mediadriver else [sys.executable, "-m", "driver"]
    base = {"bench": "startup", "launches": args.launches, "ours": " ".join(ours), **host_info()}
    runs: dict[str, list[dict[str, float]]] = {"ours": [], "java": []}
    try:
        for i in range(args.launches):
            for kind in ("ours", "java") if i % 2 == 0 else ("java", "ours"):
                with Harness() as harness:
                    runs[kind].append(launch(harness, kind, ours, args.settle))
                progress(f"launch {i + 1} {kind}: {runs[kind][-1]}")
    except BenchError as e:
        return no_comparison(base, e)
    ours_ready, java_ready = median(runs["ours"], "ready_ms"), median(runs["java"], "ready_ms")
    ours_rss, java_rss = median(runs["ours"], "rss_anon_mb"), median(runs["java"], "rss_anon_mb")
    result = {
        **base,
        "ours_ready_ms": round(ours_ready, 1),
        "java_ready_ms": round(java_ready, 1),
        "ready_ratio": round(ours_ready / java_ready, 3),
        "ours_rss_anon_mb": round(ours_rss, 1),
        "java_rss_anon_mb": round(java_rss, 1),
        "rss_ratio": round(ours_rss / java_rss, 3),
        "help_s": round(median(runs["ours"], "help_s"), 3),
        "stat_once_s": round(median(runs["ours"], "stat_once_s"), 3),
        "ours_ready_ms_each": [round(r["ready_ms"], 1) for r in runs["ours"]],
        "java_ready_ms_each": [round(r["ready_ms"], 1) for r in runs["java"]],
    }
    emit(result)
    met = (
        result["ready_ratio"] <= READY_GOAL
        and result["rss_ratio"] <= RSS_GOAL
        and result["help_s"] < COMMAND_GOAL_S
        and result["stat_once_s"] < COMMAND_GOAL_S
    )
    return 0 if met else 1


if __name__ == "__main__":
    run_main(main)
