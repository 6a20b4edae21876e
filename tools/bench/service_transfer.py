#!/usr/bin/env python3
"""Memory of the record & replay service while it exports and imports a large data set (docs/service.md section
6): ``mediadriver run --archive`` and ``mediadriver serve`` each in a process of their own (``--embedded``: the
service in the driver's process, ``run --archive --http 0``) record ``--gib`` GiB (8 KiB messages from a Python
publisher on ``aeron:ipc``), then the data set is exported (``--compression``, default NONE and GZIP) to a file
with a streaming client and imported back from it, streamed too. The service process's resident memory is
sampled every 20 ms from /proc: VmRSS (which counts every page of a mapped log buffer it touched, once per
mapping) and RssAnon (the heap, what export and import could grow with the data), peaks per phase; the
reference is the same process idle after the recording. Prints one JSON line; the goal is a peak VmRSS below
300 MB during export and import (exit 0; 1 if missed, 2 if the run failed).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from driver.client import Aeron
from tools.bench.report import BenchError, emit, host_info, progress
from tools.bench.service_harness import (
    archive_channel_props,
    driver_cmd,
    owner_client,
    run_bench,
    serve_cmd,
    start_api,
    stop,
    wait_done,
)

ROOT = Path(__file__).resolve().parents[2]

GOAL_MB = 300
MESSAGE = 8192


def memory_mb(pid: int) -> tuple[float, float]:
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            fields[name] = value
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["RssAnon"].split()[0]) / 1024


class Sampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_rss = self.peak_anon = 0.0
        self.stop_flag = threading.Event()

    def run(self) -> None:
        while not self.stop_flag.is_set():
            rss, anon = memory_mb(self.pid)
            self.peak_rss, self.peak_anon = max(self.peak_rss, rss), max(self.peak_anon, anon)
            time.sleep(0.02)

    def result(self) -> dict[str, float]:
        self.stop_flag.set()
        self.join()
        return {"peak_rss_mb": round(self.peak_rss, 1), "peak_anon_mb": round(self.peak_anon, 1)}


def run(args: argparse.Namespace, work: Path) -> dict:
    aeron_dir = Path("/dev/shm") / f"aeron-bench-service-{os.getpid()}"
    archive_dir = work / "archive"
    props = archive_channel_props()
    procs: list[subprocess.Popen] = []
    try:
        if args.embedded:
            url = start_api(driver_cmd(aeron_dir, archive_dir, props, "--http", "0"), procs)
        else:
            cmd = driver_cmd(aeron_dir, archive_dir, props)
            procs.append(
                subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
            )
            deadline = time.monotonic() + 30
            while not (archive_dir / "archive.catalog").exists():
                if time.monotonic() > deadline:
                    raise BenchError("the archive did not start")
                time.sleep(0.05)
            url = start_api(serve_cmd(aeron_dir, archive_dir, props), procs)
        proc = procs[-1]
        client = owner_client(url, archive_dir, 600)
        count = int(args.gib * (1 << 30)) // MESSAGE
        progress(f"recording {count} messages of {MESSAGE} B ({args.gib} GiB)")
        client.post(
            "/api/v1/record",
            json={"streams": [{"channel": "aeron:ipc", "stream_id": 1001}], "max_messages": count},
        ).raise_for_status()
        started = time.monotonic()
        with Aeron.connect(aeron_dir) as aeron:
            publication = aeron.add_publication("aeron:ipc", 1001)
            payload = bytearray(os.urandom(MESSAGE))
            for i in range(count):
                payload[:8] = i.to_bytes(8, "little")
                while publication.offer(payload) < 0:
                    time.sleep(0.0001)
            status = wait_done(client, "/api/v1/record", 3600, 0.2)
            publication.close()
        record_s = time.monotonic() - started
        dataset_id = status["dataset_id"]
        time.sleep(1)
        idle_rss, idle_anon = memory_mb(proc.pid)
        result: dict = {
            "mode": "embedded" if args.embedded else "serve",
            "gib": args.gib,
            "messages": status["messages"],
            "record_s": round(record_s, 1),
            "idle_rss_mb": round(idle_rss, 1),
            "idle_anon_mb": round(idle_anon, 1),
            "phases": {},
        }
        for compression in args.compression:
            exported = work / f"export.{compression.lower()}"
            sampler = Sampler(proc.pid)
            sampler.start()
            started = time.monotonic()
            with client.stream(
                "GET", f"/api/v1/datasets/{dataset_id}/export", params={"compression": compression}
            ) as response:
                response.raise_for_status()
                with open(exported, "wb") as f:
                    for chunk in response.iter_bytes(1 << 20):
                        f.write(chunk)
            export = {
                "s": round(time.monotonic() - started, 1),
                "file_mb": round(exported.stat().st_size / 2**20),
                **sampler.result(),
            }
            progress(f"export {compression}: {export}")
            sampler = Sampler(proc.pid)
            sampler.start()
            started = time.monotonic()

            def body(path: Path = exported):
                with open(path, "rb") as f:
                    while chunk := f.read(1 << 20):
                        yield chunk

            response = client.post(
                "/api/v1/datasets/import", params={"filename": exported.name}, content=body()
            )
            response.raise_for_status()
            imported = response.json()
            import_ = {"s": round(time.monotonic() - started, 1), **sampler.result()}
            progress(f"import {compression}: {import_}")
            if imported["messages"] != status["messages"]:
                raise BenchError(f"imported {imported['messages']} messages of {status['messages']}")
            client.delete(f"/api/v1/datasets/{imported['id']}").raise_for_status()
            exported.unlink()
            result["phases"][compression] = {"export": export, "import": import_}
        return result
    finally:
        stop(procs, aeron_dir)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gib", type=float, default=2.0, help="data set size in GiB (default 2)")
    parser.add_argument("--compression", nargs="+", default=["NONE", "GZIP"], choices=["NONE", "ZIP", "GZIP"])
    parser.add_argument("--embedded", action="store_true", help="measure run --archive --http (one process)")
    parser.add_argument("--dir", help="work dir (archive, export file; default a temp dir under /tmp)")
    args = parser.parse_args()
    result = run_bench("service_transfer", lambda work: run(args, work), "bench-service-", args.dir)
    if result is None:
        return 2
    peak = max(p[k]["peak_rss_mb"] for p in result["phases"].values() for k in ("export", "import"))
    emit(
        {
            "bench": "service_transfer",
            **result,
            "peak_rss_mb": peak,
            "goal_mb": GOAL_MB,
            "met": peak < GOAL_MB,
            "host": host_info(),
        }
    )
    return 0 if peak < GOAL_MB else 1


if __name__ == "__main__":
    sys.exit(main())
