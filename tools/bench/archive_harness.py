"""What the archive benchmarks share (archive_throughput.py, archive_replay_latency.py, idle_cpu.py --archive).

- ``start_archiving_driver``: ours (``python -m driver run --archive``) or the 1.15.1 Java
  ``io.aeron.archive.ArchivingMediaDriver``, in a fresh dir under /dev/shm (aeron dir and archive dir side by
  side), ready when cnc.dat is ready and the archive has written its mark file. Both get the same control and
  events channels: control requests on ``aeron:ipc`` stream 11 (the archive's local control stream, what a client
  on the same host uses), responses on ``aeron:ipc`` stream 21, recording events on a free UDP port nobody
  listens to. The Java driver and archive run SHARED (one thread each), unless ``--java-prop`` says otherwise.
- ``archive_driver_props``: per kind, the -D properties from ``--ours-prop``/``--java-prop`` (Java: SHARED unless
  overridden); ``ipc_or_udp_channel``: ``aeron:ipc`` or ``aeron:udp`` on a free port.
- ``prepare_bench_client``: the peer and tools/bench/java/ArchiveBench.java compiled once (``javac --release 11``
  against the jar) into a temporary dir removed at exit, or the JSON line saying why not;
  ``run_bench_client`` runs it against a driver and returns its output lines; ``measure_bench_client`` does
  one whole run (a ``Harness``, an archiving driver of one kind, the client against it).
- ``errors_and_runs``: the JSON line's ``<kind>_error`` (where a run failed) and ``<kind>_runs`` entries.
"""

from __future__ import annotations

import argparse
import atexit
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.children import describe_failure
from harness.cnc import cnc_ready
from harness.java import Peers, compile_java
from tools.bench.compare import STREAM_TUNING, first_error, parse_props
from tools.bench.harness import (
    KINDS,
    READY_TIMEOUT_S,
    Driver,
    Harness,
    free_udp_port,
    require_peers,
    wait_ready,
)
from tools.bench.report import BenchError, no_comparison

HERE = Path(__file__).resolve().parent
BENCH_SOURCES = HERE / "java"
JAVA_ARCHIVING_DRIVER_MAIN = "io.aeron.archive.ArchivingMediaDriver"
MARK_FILE = "archive-mark.dat"

JAVA_ARCHIVE_DEFAULT_PROPS = {
    "aeron.threading.mode": "SHARED",
    "aeron.archive.threading.mode": "SHARED",
    **STREAM_TUNING,
}


def archive_channel_props() -> dict[str, str]:
    """The control/response/events settings the archive and its clients share (see the module docstring)."""
    return {
        "aeron.archive.control.channel": "aeron:ipc",
        "aeron.archive.control.stream.id": "11",
        "aeron.archive.control.response.channel": "aeron:ipc",
        "aeron.archive.control.response.stream.id": "21",
        "aeron.archive.recording.events.channel": f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}",
    }


def archive_driver_props(
    args: argparse.Namespace, common: Mapping[str, str] | None = None
) -> dict[str, dict[str, str]]:
    """Per kind: ``common``, then (Java) driver and archive SHARED, then --ours-prop / --java-prop."""
    return {
        "ours": {**(common or {}), **STREAM_TUNING, **parse_props(args.ours_prop)},
        "java": {**(common or {}), **JAVA_ARCHIVE_DEFAULT_PROPS, **parse_props(args.java_prop)},
    }


def ipc_or_udp_channel(choice: str) -> str:
    """``aeron:ipc``, or for ``udp`` an ``aeron:udp`` channel on a free loopback port."""
    return "aeron:ipc" if choice == "ipc" else f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}"


def prepare_bench_client(bench: str) -> tuple[Peers, Path] | None:
    """The peer and ArchiveBench's classes (a temporary dir removed at exit); None once the JSON line saying why
    not (``{"bench": bench, "error": ...}``) is printed."""
    try:
        peers = require_peers()
        out_dir = Path(tempfile.mkdtemp(prefix="archive-bench-classes-"))
        atexit.register(shutil.rmtree, out_dir, ignore_errors=True)
        return peers, compile_java(peers.jar, sorted(BENCH_SOURCES.glob("*.java")), out_dir)
    except BenchError as exc:
        no_comparison({"bench": bench}, exc)
        return None


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
    if kind == "java":
        all_props = {"aeron.archive.dir": archive_dir, **all_props}
    ours_args = ("--archive", "--archive-dir", str(archive_dir))
    cmd = h.driver_cmd(kind, aeron_dir, all_props, ours_args=ours_args, java_main=JAVA_ARCHIVING_DRIVER_MAIN)
    proc = h.spawn(f"{kind}-archiving-driver", cmd)

    def ready() -> bool:
        return cnc_ready(aeron_dir) and (archive_dir / MARK_FILE).exists()

    wait_ready(proc, ready, f"{kind} archiving driver", ready_timeout)
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
    client = h.java("ArchiveBench", props, classes=classes)
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


def measure_bench_client(
    peers: Peers,
    classes: Path,
    kind: str,
    props: Mapping[str, Any],
    bench_props: Callable[[], Mapping[str, Any]],
    timeout: float,
    done: re.Pattern[str],
    count: int = 1,
) -> list[str]:
    """One run: an archiving driver of ``kind`` with ``props``, then ArchiveBench with ``bench_props()`` (called
    once the driver is up, so the free ports it picks are still free); ArchiveBench's lines."""
    with Harness(peers) as h:
        channels = archive_channel_props()
        driver = start_archiving_driver(h, kind, channels, props)
        return run_bench_client(h, classes, driver, channels, bench_props(), timeout, done, count)


def errors_and_runs(
    results: Mapping[str, Sequence[Mapping[str, Any]]], digits: int | None = None
) -> dict[str, Any]:
    """Per kind, the first failed run's error (if any) and every run (its figures rounded to ``digits``)."""
    entry: dict[str, Any] = {}
    for kind in KINDS:
        error = first_error(results[kind])
        if error:
            entry[f"{kind}_error"] = error
        entry[f"{kind}_runs"] = [
            r if digits is None or "error" in r else {k: round(v, digits) for k, v in r.items()}
            for r in results[kind]
        ]
    return entry


_FIELD = re.compile(r"(\w+)=([-\d.]+)")


def fields(line: str) -> dict[str, float]:
    """``RECORD pass=1 msgs_per_s=1.5`` -> {"pass": 1.0, "msgs_per_s": 1.5}."""
    return {k: float(v) for k, v in _FIELD.findall(line)}
