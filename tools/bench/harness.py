"""The one harness behind the benchmarks that start drivers and Aeron's Java clients.

``Harness`` (a context manager, one per measured run) starts a media driver -- ``ours`` (``python -m driver run
--dir D -Dk=v ...``) or ``java`` (the Aeron 1.15.1 ``io.aeron.driver.MediaDriver`` with ``-Daeron.dir=D
-Daeron.dir.delete.on.start=true -Dk=v ...``) or ``c`` (the Aeron 1.53 C driver ``aeronmd`` with the same -D
properties, harness/c_driver.py) -- each in a fresh directory under /dev/shm, waits until its cnc.dat is ready
(harness/cnc.py), and runs the Aeron Java sample clients, the benchmarks' own Java clients (``compiled_java``), or
our C sample clients (``c_client``) against it. Every line a child prints is kept with the monotonic time it
arrived (harness/children.py ``Proc``).

On leaving the ``with`` block -- normally, on an error, on Ctrl-C, SIGTERM or SIGHUP -- every process it started
gets SIGTERM (its own session and process group), then SIGKILL after a grace period, and its directories are
removed. Each child runs in a session of its own, as when started from its own terminal (harness/children.py
``start`` says why), and gets SIGTERM from the kernel if the harness itself is killed (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import children
from harness.c_driver import CPeer, find_c_driver
from harness.children import Proc, describe_failure, stop_all
from harness.cnc import cnc_ready
from harness.java import ADD_OPENS, DRIVER_MAIN, Peers, compile_java, find_peers, java_cmd, props_args
from tools.bench.cpu import CpuSampler, tree_cpu_seconds
from tools.bench.report import BenchError

ROOT = Path(__file__).resolve().parents[2]
SHM = Path("/dev/shm")
KINDS = ("ours", "java")
C_KIND = "c"  # the Aeron C driver: only where a benchmark asks for it (it is built optionally)

# A fixed locale keeps the samples' printf output ("%.02g", "%,d") parseable.
JVM_OPTS = (*ADD_OPENS, "-Duser.language=en", "-Duser.country=US")
# The loss benchmarks' clients: every message checked, in order (compiled at start with ``compiled_java``).
SEQUENCED_SOURCES = [
    ROOT / "tests" / "system" / "java" / f"Sequenced{end}.java" for end in ("Publisher", "Subscriber")
]

READY_TIMEOUT_S = 30.0
STARTUP_TIMEOUT_S = 30.0


def aeronmd_ready(aeron_dir: Path) -> bool:
    """aeronmd writes its cnc.dat version (Aeron 1.53's own, not 1.15.1's 15) last, once the file is laid out."""
    try:
        with open(aeron_dir / "cnc.dat", "rb") as f:
            version = f.read(4)
    except OSError:
        return False
    return len(version) == 4 and version != bytes(4)


def require_c_peer() -> CPeer:
    peer = find_c_driver()
    if peer is None:
        raise BenchError(
            "Aeron C driver not built: run `make peers` (python -m harness.c_driver says why it cannot be)"
        )
    return peer


def require_peers() -> Peers:
    peers = find_peers()
    if peers is None:
        raise BenchError("Aeron 1.15.1 peer not installed: run `make peers` (harness/install.py) first")
    return peers


@contextlib.contextmanager
def compiled_java(peers: Peers, sources: Iterable[Path]) -> Iterator[Path]:
    """The benchmarks' own Java clients compiled into a temporary dir, removed on leaving the block."""
    out_dir = Path(tempfile.mkdtemp(prefix="aeron-bench-classes-"))
    try:
        yield compile_java(peers.jar, sources, out_dir)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def free_udp_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def wait_ready(proc: Proc, ready: Callable[[], bool], what: str, timeout: float = READY_TIMEOUT_S) -> None:
    """Poll ``ready`` every 20 ms; BenchError if ``proc`` exits first or ``timeout`` seconds pass."""
    try:
        children.wait_ready(proc.popen, ready, timeout)
    except children.ChildExited:
        raise BenchError(f"{what} exited before it was ready: {describe_failure(proc)}") from None
    except children.NotReady:
        raise BenchError(f"{what} not ready after {timeout:g}s: {proc.tail()}") from None


def _raise_interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@dataclass
class Driver:
    kind: str
    aeron_dir: Path
    proc: Proc
    cpu: CpuSampler = field(init=False)

    def __post_init__(self) -> None:
        self.cpu = CpuSampler(self.proc.pid)

    def cpu_seconds(self) -> float:
        return tree_cpu_seconds(self.proc.pid)


class Harness:
    """One measured run: everything started through it is stopped, and every dir removed, on exit."""

    _HANDLED = (signal.SIGTERM, signal.SIGHUP)

    def __init__(self, peers: Peers | None = None) -> None:
        self._peers = peers
        self._c_peer: CPeer | None = None
        self.procs: list[Proc] = []
        self.dirs: list[Path] = []
        self._saved_handlers: dict[int, Any] = {}

    # --- lifecycle -------------------------------------------------------------------------------------------

    def __enter__(self) -> Harness:
        if threading.current_thread() is threading.main_thread():
            for sig in self._HANDLED:
                self._saved_handlers[sig] = signal.signal(sig, _raise_interrupt)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        in_main = threading.current_thread() is threading.main_thread()
        ignored: dict[int, Any] = {}
        if in_main:  # a second Ctrl-C must not cut the cleanup short
            for sig in (signal.SIGINT, *self._HANDLED):
                ignored[sig] = signal.signal(sig, signal.SIG_IGN)
        try:
            stop_all(self.procs)
            for proc in self.procs:
                proc.join_output()
                with contextlib.suppress(OSError):
                    if proc.popen.stdout is not None:
                        proc.popen.stdout.close()
            for path in self.dirs:
                shutil.rmtree(path, ignore_errors=True)
        finally:
            if in_main:
                for sig, handler in ignored.items():
                    signal.signal(sig, handler)
                for sig, handler in self._saved_handlers.items():
                    signal.signal(sig, handler)
                self._saved_handlers.clear()

    @property
    def peers(self) -> Peers:
        if self._peers is None:
            self._peers = require_peers()
        return self._peers

    @property
    def c_peer(self) -> CPeer:
        if self._c_peer is None:
            self._c_peer = require_c_peer()
        return self._c_peer

    # --- processes and dirs ----------------------------------------------------------------------------------

    def new_dir(self, label: str) -> Path:
        base = str(SHM) if SHM.is_dir() else None
        path = Path(tempfile.mkdtemp(prefix=f"aeron-bench-{label}-", dir=base))
        self.dirs.append(path)
        return path

    def spawn(self, name: str, cmd: Sequence[str], stdin: bytes | None = None) -> Proc:
        popen = children.start(cmd, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL)
        proc = Proc(name, popen)
        self.procs.append(proc)
        if stdin is not None and popen.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                popen.stdin.write(stdin)
            with contextlib.suppress(BrokenPipeError):
                popen.stdin.close()
        return proc

    def java_cmd(
        self,
        main_class: str,
        props: Mapping[str, Any] | None = None,
        args: Sequence[Any] = (),
        classes: Path | None = None,
    ) -> list[str]:
        """``java`` with the harness's JVM options; ``classes`` (from ``compile_java``) join the jar's classpath."""
        extra = () if classes is None else (classes,)
        return java_cmd(self.peers, main_class, props, args, classes=extra, jvm_opts=JVM_OPTS)

    def java(
        self,
        main_class: str,
        props: Mapping[str, Any] | None = None,
        *,
        args: Sequence[Any] = (),
        classes: Path | None = None,
        name: str | None = None,
        stdin: bytes | None = None,
    ) -> Proc:
        """Start an Aeron Java class (a sample client, or one of ours in ``classes``) with the JVM options."""
        cmd = self.java_cmd(main_class, props, args, classes)
        return self.spawn(name or main_class.rsplit(".", 1)[-1], cmd, stdin=stdin)

    def c_client(self, name: str, props: Mapping[str, Any] | None = None, stdin: bytes | None = None) -> Proc:
        """Start one of our C sample clients (harness/c_samples: ``streaming_publisher``, ``rate_subscriber``,
        ``ping``, ``pong``) with ``props`` as its -D settings."""
        return self.spawn(f"c-{name}", [str(self.c_peer.client(name)), *props_args(props)], stdin=stdin)

    def start_driver(
        self,
        kind: str,
        props: Mapping[str, Any] | None = None,
        ready_timeout: float = READY_TIMEOUT_S,
    ) -> Driver:
        """Start ``ours``, ``java`` or ``c`` in a fresh dir under /dev/shm and wait until its cnc.dat is ready."""
        aeron_dir = self.new_dir(kind) / "aeron"
        proc = self.spawn(f"{kind}-driver", self.driver_cmd(kind, aeron_dir, props))
        ready = (lambda: aeronmd_ready(aeron_dir)) if kind == C_KIND else (lambda: cnc_ready(aeron_dir))
        wait_ready(proc, ready, f"{kind} driver", ready_timeout)
        return Driver(kind, aeron_dir, proc)

    def driver_cmd(
        self,
        kind: str,
        aeron_dir: Path,
        props: Mapping[str, Any] | None = None,
        ours_args: Sequence[str] = (),
        java_main: str = DRIVER_MAIN,
    ) -> list[str]:
        """The command line of ``ours`` (``python -m driver run --dir D *ours_args``), ``java`` (``java_main``
        with ``aeron.dir=D`` deleted on start) or ``c`` (``aeronmd``, likewise), with ``props`` as -D properties."""
        if kind == "ours":
            run = [sys.executable, "-m", "driver", "run", "--dir", str(aeron_dir)]
            return [*run, *ours_args, *props_args(props)]
        if kind == "java":
            java_props = {"aeron.dir": aeron_dir, "aeron.dir.delete.on.start": "true", **(props or {})}
            return self.java_cmd(java_main, java_props)
        if kind == C_KIND:
            c_props = {"aeron.dir": aeron_dir, "aeron.dir.delete.on.start": "true", **(props or {})}
            return [str(self.c_peer.aeronmd), *props_args(c_props)]
        raise ValueError(f"unknown driver kind {kind!r} (expected one of {(*KINDS, C_KIND)})")

    def wait_for(
        self,
        condition: Callable[[], bool],
        timeout: float,
        what: str,
        watch: Iterable[Proc] = (),
        fail_on_exception: Iterable[Proc] = (),
    ) -> None:
        """Poll ``condition`` every 20 ms. Fails if the time runs out, a ``watch``ed process exits, or a process
        in ``fail_on_exception`` prints a Java exception (a JVM whose main thread died may not exit)."""
        watch, fail_on_exception = list(watch), list(fail_on_exception)
        deadline = time.monotonic() + timeout
        while True:
            if condition():
                return
            for proc in fail_on_exception:
                exc = proc.exception()
                if exc:
                    raise BenchError(f"{proc.name}: {exc}")
            for proc in watch:
                if not proc.alive:
                    proc.join_output()  # its last lines may still be in the pipe
                    if condition():
                        return
                    raise BenchError(f"while waiting for {what}: {describe_failure(proc)}")
            if time.monotonic() > deadline:
                raise BenchError(f"timed out after {timeout:g}s waiting for {what}")
            time.sleep(0.02)
