"""What the archive benchmarks share (archive_throughput.py, archive_replay_latency.py, idle_cpu.py --archive).

- ``start_archiving_driver``: ours (``python -m driver run --archive``) or the 1.15.1 Java
  ``io.aeron.archive.ArchivingMediaDriver``, in a fresh dir under /dev/shm (aeron dir and archive dir side by
  side), ready when cnc.dat is ready and the archive has written its mark file. Both get the same control and
  events channels: control requests on ``aeron:ipc`` stream 11 (the archive's local control stream, what a client
  on the same host uses), responses on ``aeron:ipc`` stream 21, recording events on a free UDP port nobody
  listens to. The Java driver and archive run SHARED (one thread each), unless ``--java-prop`` says otherwise.
- ``compile_bench_client``: tools/bench/java/ArchiveBench.java compiled once (``javac --release 11`` against
  the jar) into a temporary dir; ``run_bench_client`` runs it against a driver and returns its output lines.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness import (
    JVM_OPTS,
    READY_TIMEOUT_S,
    BenchError,
    Driver,
    Harness,
    Peers,
    _props_args,
    cnc_ready,
    describe_failure,
    free_udp_port,
)

HERE = Path(__file__).resolve().parent
BENCH_SOURCES = HERE / "java"
JAVA_ARCHIVING_DRIVER_MAIN = "io.aeron.archive.ArchivingMediaDriver"
MARK_FILE = "archive-mark.dat"

JAVA_ARCHIVE_DEFAULT_PROPS = {"aeron.threading.mode": "SHARED", "aeron.archive.threading.mode": "SHARED"}


def archive_channel_props() -> dict[str, str]:
    """The control/response/events settings the archive and its clients share (see the module docstring)."""
    return {
        "aeron.archive.control.channel": "aeron:ipc",
        "aeron.archive.control.stream.id": "11",
        "aeron.archive.control.response.channel": "aeron:ipc",
        "aeron.archive.control.response.stream.id": "21",
        "aeron.archive.recording.events.channel": f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}",
    }


def compile_bench_client(peers: Peers, out_dir: Path) -> Path:
    javac = os.environ.get("JAVAC") or shutil.which("javac")
    if javac is None:
        raise BenchError("javac not found (any JDK >= 11)")
    sources = [str(p) for p in sorted(BENCH_SOURCES.glob("*.java"))]
    cmd = [javac, "--release", "11", "-nowarn", "-cp", str(peers.jar), "-d", str(out_dir), *sources]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    if result.returncode != 0:
        raise BenchError(f"javac failed: {result.stderr.strip()[-2000:]}")
    return out_dir


def start_archiving_driver(
    h: Harness,
    kind: str,
    channels: Mapping[str, str],
    props: Mapping[str, Any] | None = None,
    ready_timeout: float = READY_TIMEOUT_S,
) -> Driver:
    """A driver with its archive, in a fresh dir; the archive dir is ``<aeron dir>/../archive``."""
    base = h.new_dir(f"{kind}-archive")
    aeron_dir, archive_dir = base / "aeron", base / "archive"
    all_props = {**channels, **(props or {})}
    if kind == "ours":
        cmd = [
            sys.executable,
            "-m",
            "driver",
            "run",
            "--archive",
            "--dir",
            str(aeron_dir),
            "--archive-dir",
            str(archive_dir),
            *_props_args(all_props),
        ]
    elif kind == "java":
        java_props = {
            "aeron.dir": aeron_dir,
            "aeron.dir.delete.on.start": "true",
            "aeron.archive.dir": archive_dir,
            **all_props,
        }
        cmd = h.java_cmd(JAVA_ARCHIVING_DRIVER_MAIN, java_props)
    else:
        raise ValueError(f"unknown driver kind {kind!r}")
    proc = h.spawn(f"{kind}-archiving-driver", cmd)
    deadline = time.monotonic() + ready_timeout
    while not (cnc_ready(aeron_dir) and (archive_dir / MARK_FILE).exists()):
        if not proc.alive:
            raise BenchError(f"{kind} archiving driver exited before it was ready: {describe_failure(proc)}")
        if time.monotonic() > deadline:
            raise BenchError(f"{kind} archiving driver not ready after {ready_timeout:g}s: {proc.tail()}")
        time.sleep(0.02)
    return Driver(kind, aeron_dir, proc)


def run_bench_client(
    h: Harness,
    classes: Path,
    driver: Driver,
    channels: Mapping[str, str],
    bench_props: Mapping[str, Any],
    timeout: float,
    done: re.Pattern[str],
    count: int = 1,
) -> list[str]:
    """ArchiveBench against ``driver`` until it prints ``count`` lines matching ``done`` and exits; its lines."""
    props = {"aeron.dir": driver.aeron_dir, **channels, **bench_props}
    cmd = [
        str(h.peers.java),
        *JVM_OPTS,
        "-cp",
        f"{h.peers.jar}{os.pathsep}{classes}",
        *_props_args(props),
        "ArchiveBench",
    ]
    client = h.spawn("ArchiveBench", cmd)
    h.wait_for(
        lambda: not client.alive,
        timeout,
        "ArchiveBench",
        watch=[driver.proc],
        fail_on_exception=[client],
    )
    client.join_output()
    lines = [line for _, line in client.lines]
    if client.returncode != 0 or sum(1 for line in lines if done.search(line)) < count:
        raise BenchError(f"ArchiveBench failed: {describe_failure(client)}")
    return lines


_FIELD = re.compile(r"(\w+)=([-\d.]+)")


def fields(line: str) -> dict[str, float]:
    """``RECORD pass=1 msgs_per_s=1.5`` -> {"pass": 1.0, "msgs_per_s": 1.5}."""
    return {k: float(v) for k, v in _FIELD.findall(line)}
