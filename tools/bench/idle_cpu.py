#!/usr/bin/env python3
"""Idle CPU of our media driver against the Aeron 1.15.1 Java driver (reference, measured in the same run).

Starts each driver in turn in a fresh dir under /dev/shm, waits until its cnc.dat is ready (version 15 and a
to-driver consumer heartbeat), lets it settle, then measures utime+stime from /proc/<pid>/stat over the window.
Prints one JSON line; exits 1 if ours uses >= 5 % of a core (the goal), 2 if a driver fails to start.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOAL_PCT = 5.0
READY_TIMEOUT_S = 30.0
CLK_TCK = os.sysconf("SC_CLK_TCK")


def _peer_paths() -> tuple[Path, Path] | None:
    spec = importlib.util.spec_from_file_location(
        "_aeron_peers_install", ROOT / "tools" / "peers" / "install.py"
    )
    if spec is None or spec.loader is None:
        return None
    installer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(installer)
    jar, java = Path(installer.JAR), Path(installer.JAVA)
    return (jar, java) if jar.exists() and java.exists() else None


def _cnc_ready(aeron_dir: Path) -> bool:
    try:
        with open(aeron_dir / "cnc.dat", "rb", buffering=0) as f:
            header = os.pread(f.fileno(), 8, 0)
            if len(header) < 8:
                return False
            version, to_driver_length = struct.unpack("<ii", header)
            if version != 15:
                return False
            # consumer heartbeat: trailer field 640 after the ring's capacity (= length - 768 trailer)
            raw = os.pread(f.fileno(), 8, 128 + to_driver_length - 768 + 640)
    except FileNotFoundError:
        return False
    return len(raw) == 8 and struct.unpack("<q", raw)[0] != 0


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # after "pid (comm)": field 3 is state, so utime (14) and stime (15) are at indexes 11 and 12
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)


def measure(name: str, cmd_for_dir, settle_s: float, window_s: float) -> float:
    """Start a driver, wait for readiness and ``settle_s``, return its CPU use in % of one core over ``window_s``."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    parent = Path(tempfile.mkdtemp(prefix=f"aeron-bench-{name}-", dir=base))
    aeron_dir = parent / "aeron"
    log_path = parent / "driver.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd_for_dir(aeron_dir),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env=env,
        )
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not _cnc_ready(aeron_dir):
            if proc.poll() is not None or time.monotonic() > deadline:
                log_text = log_path.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{name} driver not ready (rc={proc.poll()}): {log_text}")
            time.sleep(0.02)
        time.sleep(settle_s)
        cpu0, t0 = _cpu_seconds(proc.pid), time.monotonic()
        time.sleep(window_s)
        cpu1, t1 = _cpu_seconds(proc.pid), time.monotonic()
        if proc.poll() is not None:
            raise RuntimeError(f"{name} driver exited during the measurement (rc={proc.returncode})")
        return 100.0 * (cpu1 - cpu0) / (t1 - t0)
    finally:
        _stop(proc)
        shutil.rmtree(parent, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seconds", type=float, default=10.0, help="measurement window per driver (default 10)"
    )
    parser.add_argument("--settle", type=float, default=2.0, help="wait after readiness before measuring (s)")
    parser.add_argument("--no-java", action="store_true", help="skip the Java reference")
    args = parser.parse_args()

    def ours_cmd(aeron_dir: Path) -> list[str]:
        return [sys.executable, "-m", "driver", "run", "--dir", str(aeron_dir)]

    result: dict[str, object] = {"bench": "idle_cpu"}
    try:
        ours = measure("ours", ours_cmd, args.settle, args.seconds)
        java = None
        peers = None if args.no_java else _peer_paths()
        if peers is not None:
            jar, java_bin = peers

            def java_cmd(aeron_dir: Path) -> list[str]:
                return [
                    str(java_bin),
                    "--add-opens",
                    "java.base/sun.nio.ch=ALL-UNNAMED",
                    "-cp",
                    str(jar),
                    f"-Daeron.dir={aeron_dir}",
                    "-Daeron.dir.delete.on.start=true",
                    "io.aeron.driver.MediaDriver",
                ]

            java = measure("java", java_cmd, args.settle, args.seconds)
        elif not args.no_java:
            print("idle_cpu: Aeron peer not installed (run `make peers`); no Java reference", file=sys.stderr)
    except (RuntimeError, OSError) as exc:
        print(f"idle_cpu: {exc}", file=sys.stderr)
        return 2

    result["ours_pct_core"] = round(ours, 3)
    result["java_pct_core"] = None if java is None else round(java, 3)
    result["ratio"] = None if not java else round(ours / java, 3)
    result["window_s"] = args.seconds
    result["goal"] = f"ours < {GOAL_PCT:g}%"
    print(json.dumps(result))
    return 0 if ours < GOAL_PCT else 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
    sys.exit(130)
