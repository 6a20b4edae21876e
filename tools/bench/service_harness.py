"""What the record & replay service benchmarks share (service_replay.py, service_transfer.py).

They measure our service against itself, so they start our processes directly (no Java peer, no ``Harness``):

- ``archive_channel_props``: the archive's control and recording events channels, each on a free UDP port;
  ``driver_cmd`` the ``python -m driver run --archive`` command line with them, ``serve_cmd`` the ``python -m
  driver serve`` one (the service in a process of its own, on a free port).
- ``start_api``: start a process that serves the record & replay API and return the API's base URL once it
  printed it (the rest of its output is read and dropped, so it never blocks on a full pipe).
- ``owner_client``: an httpx client of the API with the token the service wrote in its archive dir (as its
  owner's CLI reads it).
- ``wait_done``: poll a job's status (``/api/v1/record``, ``/api/v1/replay``) until it is no longer running.
- ``stop``: SIGTERM, then SIGKILL after 30 s, for every process started, and the aeron dir removed.
- ``run_bench``: a work dir for ``run(work)``, removed afterwards; a failed run prints the error's JSON line.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

from harness.children import terminate
from harness.java import props_args
from tools.bench.harness import ROOT, free_udp_port
from tools.bench.report import BenchError, emit, host_info

URL = re.compile(r"record & replay API on (http://\S+)/api/v1")
CONTROL_CHANNEL = "aeron.archive.control.channel"
STOP_GRACE_S = 30


def archive_channel_props() -> dict[str, str]:
    """Control requests and recording events on free UDP ports (nobody else listens to the events)."""
    return {
        CONTROL_CHANNEL: f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}",
        "aeron.archive.recording.events.channel": f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}",
    }


def driver_cmd(aeron_dir: Path, archive_dir: Path, props: dict[str, str], *extra: str) -> list[str]:
    """``python -m driver run --archive`` in ``aeron_dir`` with its archive in ``archive_dir``."""
    run = [sys.executable, "-m", "driver", "run", "--dir", str(aeron_dir), "--archive"]
    return [*run, "--archive-dir", str(archive_dir), *extra, *props_args(props)]


def serve_cmd(aeron_dir: Path, archive_dir: Path, props: dict[str, str]) -> list[str]:
    """``python -m driver serve`` for the driver in ``aeron_dir`` and its archive in ``archive_dir``."""
    serve = [sys.executable, "-m", "driver", "serve", "--aeron-dir", str(aeron_dir)]
    return [*serve, "--archive-dir", str(archive_dir), "--port", "0", *props_args(props)]


def start_api(cmd: Sequence[str], procs: list[subprocess.Popen[str]]) -> str:
    """Start ``cmd`` (added to ``procs`` first, so ``stop`` ends it whatever happens) and return the API's base
    URL once the process printed it."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    procs.append(proc)
    assert proc.stdout is not None
    stdout = proc.stdout
    while True:
        line = stdout.readline()
        if not line:
            raise BenchError(f"the driver exited with {proc.wait()}")
        if match := URL.search(line):
            threading.Thread(target=lambda: [None for _ in stdout], daemon=True).start()
            return match.group(1)


def owner_client(url: str, archive_dir: Path, timeout_s: float) -> httpx.Client:
    token = (archive_dir / "http-token").read_text().strip()
    return httpx.Client(base_url=url, timeout=timeout_s, headers={"Authorization": f"Bearer {token}"})


def wait_done(client: httpx.Client, path: str, timeout_s: float, interval_s: float) -> dict[str, Any]:
    """The job's status at ``path`` once it stopped running; BenchError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = client.get(path).json()
        if not status["running"]:
            return status
        time.sleep(interval_s)
    raise BenchError(f"{path} still running after {timeout_s} s")


def stop(procs: Sequence[subprocess.Popen[Any]], aeron_dir: Path) -> None:
    """The last started first (a ``serve`` before the driver it uses)."""
    for proc in reversed(procs):
        terminate(proc, STOP_GRACE_S)
    shutil.rmtree(aeron_dir, ignore_errors=True)


def run_bench(
    bench: str, run: Callable[[Path], dict[str, Any]], prefix: str, parent: str | None = None
) -> dict[str, Any] | None:
    """``run(work)`` in a fresh work dir (under ``parent``, default /tmp), removed afterwards; None once a
    failure's JSON line (``{"bench": bench, "error": ..., "host": ...}``) is printed."""
    work = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        return run(work)
    except (BenchError, httpx.HTTPError, OSError) as e:
        emit({"bench": bench, "error": str(e), "host": host_info()})
        return None
    finally:
        shutil.rmtree(work, ignore_errors=True)
