"""The one harness behind every benchmark in tools/bench/.

What it does
------------
- ``Harness`` (a context manager, one per measured run) starts a media driver -- ``ours`` (``python -m driver run
  --dir D -Dk=v ...``) or ``java`` (the Aeron 1.15.1 ``io.aeron.driver.MediaDriver`` with ``-Daeron.dir=D
  -Daeron.dir.delete.on.start=true -Dk=v ...``) -- each in a fresh directory under /dev/shm, waits until its
  cnc.dat is ready (version 15 at offset 0 and a nonzero to-driver consumer heartbeat), and runs the Aeron Java
  sample clients against it. Every line a child prints is kept with the monotonic time it arrived.
- On leaving the ``with`` block -- normally, on an error, on Ctrl-C, SIGTERM or SIGHUP -- every process it started
  gets SIGTERM (its own session and process group), then SIGKILL after a grace period, and its directories are
  removed. Each child runs in a session of its own, as when started from its own terminal (see ``spawn``).
  Children also get SIGTERM from the kernel if the harness itself is killed (PR_SET_PDEATHSIG).
- ``CpuSampler`` reads utime+stime of a process and its descendants from /proc, on demand or every 50 ms in a
  thread, and answers "CPU % of one core between t0 and t1".
- ``compile_java``/``compiled_java`` compile the benchmarks' own Java clients (tools/bench/java,
  tests/system/java) against the jar; ``Harness.java(..., classes=...)`` runs them. ``Counters`` reads a driver's
  cnc.dat counters (either driver) and ``check_sequenced`` the Sequenced* clients' health (the loss benchmarks).
- Parsers for ``RateSubscriber``/``StreamingPublisher`` rate lines, Java exceptions, and the HdrHistogram
  percentile table ``Ping`` prints; ``measure_stream`` (StreamingPublisher -> RateSubscriber, used by the IPC and
  UDP throughput benchmarks) and ``compare``/``summarize`` to run ours and Java alternately and take medians.

Progress goes to stderr; each benchmark prints exactly one JSON line to stdout (``emit``).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib.util
import itertools
import json
import os
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SHM = Path("/dev/shm")
CLK_TCK = os.sysconf("SC_CLK_TCK")
KINDS = ("ours", "java")

# Agrona maps files by reflection into sun.nio.ch / java.nio: opening them keeps Java 11 from warning. A fixed
# locale keeps the samples' printf output ("%.02g", "%,d") parseable.
JVM_OPTS = (
    "--add-opens",
    "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.nio=ALL-UNNAMED",
    "-Duser.language=en",
    "-Duser.country=US",
)
JAVA_DRIVER_MAIN = "io.aeron.driver.MediaDriver"
# The loss benchmarks' clients: every message checked, in order (compiled at start with ``compiled_java``).
SEQUENCED_SOURCES = [
    ROOT / "tests" / "system" / "java" / f"Sequenced{end}.java" for end in ("Publisher", "Subscriber")
]

CNC_VERSION = 15
CNC_METADATA_LENGTH = 128  # cnc.dat: version, buffer lengths, client liveness ... padded to 128
RING_TRAILER_LENGTH = 768
RING_CONSUMER_HEARTBEAT_OFFSET = 640  # in the to-driver ring's trailer, relative to its capacity

READY_TIMEOUT_S = 30.0
STOP_GRACE_S = 5.0
SAMPLE_INTERVAL_S = 0.05


class BenchError(RuntimeError):
    """A run that could not be measured; the message says why (and goes into the JSON line)."""


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def emit(result: Mapping[str, Any]) -> None:
    print(json.dumps(result, separators=(", ", ": ")), flush=True)


def no_comparison(base: Mapping[str, Any], exc: BaseException) -> int:
    """Say why nothing could be measured (stderr, and the JSON line ``{**base, "error": ...}``); exit code 2."""
    progress(str(exc))
    emit({**base, "error": str(exc)})
    return 2


# ---------------------------------------------------------------------------------------------------------------
# The Aeron 1.15.1 peer (tools/peers/install.py)


@dataclass(frozen=True)
class Peers:
    jar: Path
    java: Path


def find_peers() -> Peers | None:
    """The jar and Java 11 runtime installed by tools/peers/install.py (``make peers``), or None if missing."""
    spec = importlib.util.spec_from_file_location(
        "_aeron_peers_install", ROOT / "tools" / "peers" / "install.py"
    )
    if spec is None or spec.loader is None:
        return None
    installer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(installer)
    jar = Path(os.environ.get("AERON_JAR", installer.JAR))
    java = Path(os.environ.get("AERON_JAVA", installer.JAVA))
    return Peers(jar, java) if jar.exists() and java.exists() else None


def require_peers() -> Peers:
    peers = find_peers()
    if peers is None:
        raise BenchError("Aeron 1.15.1 peer not installed: run `make peers` (tools/peers/install.py) first")
    return peers


# ---------------------------------------------------------------------------------------------------------------
# /proc and cnc.dat


def cnc_ready(aeron_dir: Path) -> bool:
    """cnc.dat has version 15 at offset 0 and the driver has stamped the to-driver ring's consumer heartbeat."""
    try:
        with open(aeron_dir / "cnc.dat", "rb", buffering=0) as f:
            header = os.pread(f.fileno(), 8, 0)
            if len(header) < 8:
                return False
            version, to_driver_length = struct.unpack("<ii", header)
            if version != CNC_VERSION or to_driver_length < RING_TRAILER_LENGTH:
                return False
            capacity = to_driver_length - RING_TRAILER_LENGTH
            raw = os.pread(f.fileno(), 8, CNC_METADATA_LENGTH + capacity + RING_CONSUMER_HEARTBEAT_OFFSET)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return len(raw) == 8 and struct.unpack("<q", raw)[0] != 0


_METADATA_RECORD = 512
_VALUE_RECORD = 128


class Counters:
    """The counters of one driver's cnc.dat: find by type and label/key, read values by id."""

    def __init__(self, aeron_dir: Path) -> None:
        self._file = open(aeron_dir / "cnc.dat", "rb", buffering=0)  # noqa: SIM115 - closed in close()
        header = os.pread(self._file.fileno(), 24, 0)
        _, to_driver, to_clients, metadata_length, values_length, _ = struct.unpack("<6i", header)
        self._metadata = 128 + to_driver + to_clients
        self._values = self._metadata + metadata_length
        self._capacity = values_length // _VALUE_RECORD

    def close(self) -> None:
        self._file.close()

    def find(
        self, type_id: int, label: str | None = None, session_id: int | None = None, stream_id: int = 0
    ) -> int | None:
        """Id of the first allocated counter of ``type_id`` with that label (system counters) or session id and
        stream id (a stream's position counters)."""
        fd = self._file.fileno()
        for cid in range(self._capacity):
            record = os.pread(fd, _METADATA_RECORD, self._metadata + cid * _METADATA_RECORD)
            state, record_type = struct.unpack_from("<ii", record, 0)
            if state == 0:
                return None
            if state != 1 or record_type != type_id:
                continue
            if session_id is not None and struct.unpack_from("<ii", record, 24) != (session_id, stream_id):
                continue
            (length,) = struct.unpack_from("<i", record, 128)
            if label is not None and record[132 : 132 + length].decode("ascii", "replace") != label:
                continue
            return cid
        return None

    def value(self, cid: int) -> int:
        return struct.unpack("<q", os.pread(self._file.fileno(), 8, self._values + cid * _VALUE_RECORD))[0]

    def system(self, label: str) -> int:
        cid = self.find(0, label=label)
        if cid is None:
            raise BenchError(f"no system counter {label!r}")
        return self.value(cid)


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of one process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # after "pid (comm)": field 3 (state) is index 0, so utime (14) and stime (15) are at indexes 11 and 12
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def _children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as f:
                found.extend(int(c) for c in f.read().split())
    return found


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of ``pid`` and its live descendants (a driver that forks helpers is charged for them)."""
    total, stack, seen = 0.0, [pid], set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            total += process_cpu_seconds(current)
        except (OSError, IndexError, ValueError):
            if current == pid:
                raise
            continue
        stack.extend(_children(current))
    return total


class CpuSampler:
    """CPU use of a process tree: ``now()`` on demand, or ``start()`` a thread that samples every 50 ms."""

    def __init__(self, pid: int, interval: float = SAMPLE_INTERVAL_S) -> None:
        self.pid = pid
        self.interval = interval
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def now(self) -> tuple[float, float]:
        return time.monotonic(), tree_cpu_seconds(self.pid)

    def start(self) -> CpuSampler:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"cpu-{self.pid}", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append(self.now())
            except (OSError, IndexError, ValueError):
                return  # the process is gone
            self._stop.wait(self.interval)

    def pct(self, t0: float, t1: float) -> float | None:
        """CPU % of one core between the samples nearest to ``t0`` and ``t1`` (None without two samples)."""
        samples = list(self.samples)
        if len(samples) < 2:
            return None
        a = min(samples, key=lambda s: abs(s[0] - t0))
        b = min(samples, key=lambda s: abs(s[0] - t1))
        if b[0] <= a[0]:
            return None
        return 100.0 * (b[1] - a[1]) / (b[0] - a[0])


# ---------------------------------------------------------------------------------------------------------------
# Child processes


def _deathsig_preexec() -> Callable[[], None] | None:
    """A preexec_fn asking the kernel to SIGTERM the child if the harness dies (resolved before any fork)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig, sigterm = 1, int(signal.SIGTERM)

    def preexec() -> None:
        prctl(pr_set_pdeathsig, sigterm, 0, 0, 0)

    return preexec


_PREEXEC = _deathsig_preexec()


def child_env() -> dict[str, str]:
    """No AERON_* settings leak in from the caller's shell; Python children are unbuffered."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


_EXCEPTION = re.compile(
    r'^(?:Exception in thread "[^"]*" )?(?:[\w$]+\.)+([\w$]*(?:Exception|Error))(?::\s*(.*))?$'
)


class Proc:
    """A started child: its Popen, and every line it printed (stdout and stderr) with its arrival time."""

    def __init__(self, name: str, popen: subprocess.Popen[bytes]) -> None:
        self.name = name
        self.popen = popen
        self.pid = popen.pid
        self.lines: list[tuple[float, str]] = []
        self._reader = threading.Thread(target=self._read, name=f"out-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for raw in iter(self.popen.stdout.readline, b""):
            self.lines.append((time.monotonic(), raw.decode(errors="replace").rstrip("\r\n")))

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    def text(self) -> str:
        return "\n".join(line for _, line in list(self.lines))

    def tail(self, count: int = 15) -> str:
        return "\n".join(line for _, line in list(self.lines)[-count:])

    def find(self, pattern: re.Pattern[str] | str) -> re.Match[str] | None:
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        for _, line in list(self.lines):
            match = regex.search(line)
            if match:
                return match
        return None

    def exception(self) -> str | None:
        """``SimpleName: message`` of the first Java exception the process printed, if any."""
        for _, line in list(self.lines):
            match = _EXCEPTION.match(line.strip())
            if match:
                name, message = match.group(1), (match.group(2) or "").strip()
                message = re.sub(r"^errorCodeValue=\d+\s*", "", message)
                return f"{name}: {message}" if message else name
        return None

    def signal(self, sig: int) -> None:
        if self.popen.poll() is not None:
            return
        try:
            os.killpg(self.pid, sig)  # its own process group: the child and anything it forked
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(sig)

    def join_output(self, timeout: float = 2.0) -> None:
        self._reader.join(timeout=timeout)


def describe_failure(proc: Proc) -> str:
    """One line about why a child stopped: its Java exception, or its exit code and last line."""
    exc = proc.exception()
    if exc:
        return f"{proc.name}: {exc}"
    last = proc.tail(1).strip()
    return f"{proc.name} exited with code {proc.returncode}" + (f": {last}" if last else "")


def check_sequenced(*procs: Proc) -> None:
    """SequencedPublisher/SequencedSubscriber still running and neither reported an ERROR or TIMEOUT line."""
    for proc in procs:
        bad = proc.find(r"^(ERROR|TIMEOUT).*")
        if bad is not None:
            raise BenchError(f"{proc.name}: {bad.group(0)}")
        if not proc.alive:
            raise BenchError(describe_failure(proc))


def unsupported_or(error: str) -> str:
    """Prefix "unsupported: " when the driver refused a channel it does not implement yet."""
    return f"unsupported: {error}" if re.search(r"not (yet )?supported|unsupported", error, re.I) else error


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


def _props_args(props: Mapping[str, Any] | None) -> list[str]:
    return [f"-D{k}={v}" for k, v in (props or {}).items()]


class Harness:
    """One measured run: everything started through it is stopped, and every dir removed, on exit."""

    _HANDLED = (signal.SIGTERM, signal.SIGHUP)

    def __init__(self, peers: Peers | None = None) -> None:
        self._peers = peers
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

    # --- processes and dirs ----------------------------------------------------------------------------------

    def new_dir(self, label: str) -> Path:
        base = str(SHM) if SHM.is_dir() else None
        path = Path(tempfile.mkdtemp(prefix=f"aeron-bench-{label}-", dir=base))
        self.dirs.append(path)
        return path

    def spawn(self, name: str, cmd: Sequence[str], stdin: bytes | None = None) -> Proc:
        popen = subprocess.Popen(
            list(cmd),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env=child_env(),
            # A session of its own, as a process started from its own terminal or by a service manager has:
            # with the kernel's autogroup scheduling (kernel.sched_autogroup_enabled) CPU is shared between
            # sessions first. In one session with two busy-spinning sample clients, a driver that parks when
            # idle (the Java driver's backoff, ours) got a few % of a core: Java moved 1.4-1.7 M msgs/s
            # instead of 4.0 M and its Ping/Pong p50 was milliseconds instead of 100 us.
            start_new_session=True,
            preexec_fn=_PREEXEC,
        )
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
        classpath = str(self.peers.jar) if classes is None else f"{self.peers.jar}{os.pathsep}{classes}"
        return [
            str(self.peers.java),
            *JVM_OPTS,
            "-cp",
            classpath,
            *_props_args(props),
            main_class,
            *map(str, args),
        ]

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

    def start_driver(
        self,
        kind: str,
        props: Mapping[str, Any] | None = None,
        ready_timeout: float = READY_TIMEOUT_S,
    ) -> Driver:
        """Start ``ours`` or ``java`` in a fresh dir under /dev/shm and wait until its cnc.dat is ready."""
        aeron_dir = self.new_dir(kind) / "aeron"
        proc = self.spawn(f"{kind}-driver", self.driver_cmd(kind, aeron_dir, props))
        wait_ready(proc, lambda: cnc_ready(aeron_dir), f"{kind} driver", ready_timeout)
        return Driver(kind, aeron_dir, proc)

    def driver_cmd(
        self,
        kind: str,
        aeron_dir: Path,
        props: Mapping[str, Any] | None = None,
        ours_args: Sequence[str] = (),
        java_main: str = JAVA_DRIVER_MAIN,
    ) -> list[str]:
        """The command line of ``ours`` (``python -m driver run --dir D *ours_args``) or ``java`` (``java_main``
        with ``aeron.dir=D`` deleted on start), with ``props`` as -D properties."""
        if kind == "ours":
            run = [sys.executable, "-m", "driver", "run", "--dir", str(aeron_dir)]
            return [*run, *ours_args, *_props_args(props)]
        if kind == "java":
            java_props = {"aeron.dir": aeron_dir, "aeron.dir.delete.on.start": "true", **(props or {})}
            return self.java_cmd(java_main, java_props)
        raise ValueError(f"unknown driver kind {kind!r} (expected one of {KINDS})")

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
                    if condition():
                        return
                    raise BenchError(f"while waiting for {what}: {describe_failure(proc)}")
            if time.monotonic() > deadline:
                raise BenchError(f"timed out after {timeout:g}s waiting for {what}")
            time.sleep(0.02)


def wait_ready(proc: Proc, ready: Callable[[], bool], what: str, timeout: float = READY_TIMEOUT_S) -> None:
    """Poll ``ready`` every 20 ms; BenchError if ``proc`` exits first or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while not ready():
        if not proc.alive:
            raise BenchError(f"{what} exited before it was ready: {describe_failure(proc)}")
        if time.monotonic() > deadline:
            raise BenchError(f"{what} not ready after {timeout:g}s: {proc.tail()}")
        time.sleep(0.02)


def _raise_interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def stop_all(procs: Sequence[Proc], grace: float = STOP_GRACE_S) -> None:
    """SIGTERM every live process, wait up to ``grace`` seconds in total, then SIGKILL what is left."""
    live = [p for p in procs if p.alive]
    for proc in live:
        proc.signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in live:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
    for proc in live:
        if proc.alive:
            proc.signal(signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.popen.wait(timeout=10)


def compile_java(peers: Peers, sources: Iterable[Path], out_dir: Path) -> Path:
    """The benchmarks' own Java clients, compiled against the 1.15.1 jar into ``out_dir`` (returned)."""
    javac = os.environ.get("JAVAC") or shutil.which("javac")
    if javac is None:
        raise BenchError("javac not found (any JDK >= 11)")
    cmd = [javac, "--release", "11", "-nowarn", "-cp", str(peers.jar), "-d", str(out_dir), *map(str, sources)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    if result.returncode != 0:
        raise BenchError(f"javac failed: {result.stderr.strip()[-2000:]}")
    return out_dir


@contextlib.contextmanager
def compiled_java(peers: Peers, sources: Iterable[Path]) -> Iterator[Path]:
    """``compile_java`` into a temporary dir, removed on leaving the block."""
    out_dir = Path(tempfile.mkdtemp(prefix="aeron-bench-classes-"))
    try:
        yield compile_java(peers, sources, out_dir)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def terminate(popen: subprocess.Popen[Any], grace: float = STOP_GRACE_S) -> None:
    """SIGTERM one child started without a ``Harness``; SIGKILL if it has not exited after ``grace`` seconds."""
    popen.send_signal(signal.SIGTERM)
    try:
        popen.wait(grace)
    except subprocess.TimeoutExpired:
        popen.kill()
        popen.wait()


def host_info() -> dict[str, Any]:
    """CPUs and 1-minute load average when the benchmark started: figures from a busy machine are noisy."""
    return {"cpus": os.cpu_count(), "load_1m": round(os.getloadavg()[0], 2)}


def free_udp_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------------------------------------------------------
# Sample client output

# RateSubscriber: "8.9e+06 msgs/sec, 2.8e+08 payload bytes/sec, totals 11154950 messages 340 MB" (StreamingPublisher
# prints the same without "payload"). The rates have two significant digits, so only the exact totals are used.
RATE_LINE = re.compile(r"^(\S+) msgs/sec, (\S+) (?:payload )?bytes/sec, totals (\d+) messages (\d+) MB")


def rate_samples(proc: Proc) -> list[tuple[float, int]]:
    """(arrival time, total messages so far) for each per-second rate line."""
    samples = []
    for t, line in list(proc.lines):
        match = RATE_LINE.match(line)
        if match:
            samples.append((t, int(match.group(3))))
    return samples


def last_total(proc: Proc) -> int:
    samples = rate_samples(proc)
    return samples[-1][1] if samples else 0


@dataclass
class Throughput:
    msgs_per_s: float
    t0: float
    t1: float
    messages: int
    steady: bool  # False: the run was too short for a window without partial seconds


def steady_throughput(samples: Sequence[tuple[float, int]]) -> Throughput:
    """Messages per second over the whole seconds of a stream.

    RateSubscriber prints its running total once a second. The first line with a nonzero total closes a partial
    second (the stream started inside it) and the last line whose total grew closes a partial second (the stream
    ended inside it), so the window runs from the first nonzero line to the line before the last increase:
    rate = (total[end] - total[first]) / (t[end] - t[first]), times being when the lines reached the harness.
    With fewer than two whole seconds it falls back to total / (t[last increase] - t[line before first nonzero]),
    which undercounts (it includes partial seconds) and is marked not steady.
    """
    first = next((i for i, (_, total) in enumerate(samples) if total > 0), None)
    if first is None:
        raise BenchError("the subscriber received no messages")
    last_increase = max(
        i for i in range(first, len(samples)) if i == first or samples[i][1] > samples[i - 1][1]
    )
    end = last_increase - 1
    if end > first and samples[end][0] > samples[first][0]:
        (t0, n0), (t1, n1) = samples[first], samples[end]
        return Throughput((n1 - n0) / (t1 - t0), t0, t1, n1 - n0, steady=True)
    t0 = samples[first - 1][0] if first > 0 else samples[first][0] - 1.0
    t1, n1 = samples[last_increase]
    return Throughput(n1 / (t1 - t0), t0, t1, n1, steady=False)


# Ping: HdrHistogram outputPercentileDistribution(System.out, 1000.0): "Value Percentile TotalCount 1/(1-P)" rows in
# microseconds, then "#[Mean = x, StdDeviation = y]", "#[Max = x, Total count = n]".
HISTOGRAM_ROW = re.compile(r"^\s*([\d.]+)\s+([\d.]+)\s+(\d+)(?:\s+[\d.]+|\s+inf(?:inity)?)?\s*$", re.I)
HISTOGRAM_MEAN = re.compile(r"#\[Mean\s*=\s*([\d.]+),\s*StdDeviation\s*=\s*([\d.]+)\]")
HISTOGRAM_MAX = re.compile(r"#\[Max\s*=\s*([\d.]+),\s*Total count\s*=\s*(\d+)\]")


def parse_histogram(text: str) -> dict[str, Any]:
    """p50/p90/p99/p99.9 (first row whose cumulative count reaches the fraction), mean and max, in microseconds."""
    start = text.find("Histogram of RTT latencies")
    body = text[start:] if start >= 0 else text
    rows = []
    for line in body.splitlines():
        match = HISTOGRAM_ROW.match(line)
        if match:
            rows.append((float(match.group(1)), int(match.group(3))))
    mean, maxi = HISTOGRAM_MEAN.search(body), HISTOGRAM_MAX.search(body)
    if not rows or maxi is None:
        raise BenchError("no RTT histogram in Ping's output")
    count = int(maxi.group(2))

    def at(fraction: float) -> float:
        need = fraction * count
        return next((value for value, cumulative in rows if cumulative >= need), rows[-1][0])

    result = {"p50_us": at(0.50), "p90_us": at(0.90), "p99_us": at(0.99), "p999_us": at(0.999)}
    result["max_us"] = float(maxi.group(1))
    result["mean_us"] = float(mean.group(1)) if mean else None
    result["count"] = count
    return result


# ---------------------------------------------------------------------------------------------------------------
# StreamingPublisher -> RateSubscriber (IPC and UDP throughput)

STREAM_ID = 10
STARTUP_TIMEOUT_S = 30.0


def measure_stream(
    kind: str,
    channel: str,
    messages: int,
    length: int,
    timeout: float,
    driver_props: Mapping[str, Any] | None = None,
    peers: Peers | None = None,
) -> dict[str, Any]:
    """One run: a driver, RateSubscriber, then StreamingPublisher for ``messages`` x ``length`` bytes on
    ``channel``; done when the subscriber's total reaches ``messages``. Returns msgs/s over the steady window and
    the driver's CPU % over the same window; raises BenchError on a failure or after ``timeout`` seconds."""
    with Harness(peers) as h:
        driver = h.start_driver(kind, driver_props)
        driver.cpu.start()
        client_props = {
            "aeron.dir": driver.aeron_dir,
            "aeron.sample.channel": channel,
            "aeron.sample.streamId": STREAM_ID,
            "aeron.sample.messages": messages,
            "aeron.sample.messageLength": length,
        }
        sub = h.java("io.aeron.samples.RateSubscriber", client_props)
        h.wait_for(
            lambda: bool(rate_samples(sub)),
            STARTUP_TIMEOUT_S,
            "RateSubscriber to subscribe",
            watch=[sub, driver.proc],
            fail_on_exception=[sub],
        )
        pub = h.java("io.aeron.samples.StreamingPublisher", client_props, stdin=b"n\n")
        started = time.monotonic()
        try:
            h.wait_for(
                lambda: last_total(sub) >= messages,
                timeout,
                f"{messages:,} messages",
                watch=[sub, driver.proc],
                fail_on_exception=[sub, pub],
            )
        except BenchError as exc:
            got = last_total(sub)
            raise BenchError(f"{exc} (subscriber received {got:,} of {messages:,})") from None
        elapsed = time.monotonic() - started
        samples = rate_samples(sub)
        rate = steady_throughput(samples)
        cpu = driver.cpu.pct(rate.t0, rate.t1)
        driver.cpu.stop()
        return {
            "msgs_per_s": rate.msgs_per_s,
            "driver_cpu_pct": cpu,
            "window_s": rate.t1 - rate.t0,
            "steady": rate.steady,
            "per_second": [b - a for (_, a), (_, b) in itertools.pairwise(samples) if b > a],
            "elapsed_s": elapsed,
        }


# ---------------------------------------------------------------------------------------------------------------
# Same-run comparison


STREAM_TUNING = {
    "aeron.socket.so_sndbuf": "2m",
    "aeron.socket.so_rcvbuf": "2m",
    "aeron.rcv.initial.window.length": "2m",
}
"""Both drivers get these, as Aeron's own performance-testing instructions set them for the Java driver, so that
the two are compared with the same socket buffers and receiver window: Java's defaults are 128 KiB (4.0 M msgs/s
at 32 B over UDP here, 5.0-5.2 M with these), ours a 1 MiB window in 2 MiB buffers."""
JAVA_DEFAULT_PROPS = {"aeron.threading.mode": "SHARED", **STREAM_TUNING}


def parse_props(pairs: Sequence[str] | None) -> dict[str, str]:
    """``["aeron.x=y", "-Daeron.z=w"]`` -> ``{"aeron.x": "y", "aeron.z": "w"}``."""
    props = {}
    for pair in pairs or []:
        key, sep, value = pair.removeprefix("-D").partition("=")
        if not sep or not key:
            raise SystemExit(f"bad property {pair!r}: expected name=value")
        props[key] = value
    return props


def add_compare_args(parser: argparse.ArgumentParser, timeout: float) -> None:
    """--runs, --order, --timeout, --ours-prop, --java-prop: the options every same-run comparison takes."""
    parser.add_argument(
        "--runs", type=int, default=3, help="runs per driver; medians are reported (default 3)"
    )
    parser.add_argument(
        "--order",
        choices=("alternate", "ours-first", "java-first"),
        default="alternate",
        help="driver order within each run (default alternate: ours first on odd runs)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=timeout,
        help=f"seconds one run may take before it is recorded as failed (default {timeout:g})",
    )
    add_prop_args(parser)


def add_prop_args(parser: argparse.ArgumentParser) -> None:
    """--ours-prop, --java-prop (repeatable -D properties, read with ``driver_props``)."""
    parser.add_argument(
        "--ours-prop", action="append", metavar="NAME=VALUE", help="-D property for our driver"
    )
    parser.add_argument(
        "--java-prop",
        action="append",
        metavar="NAME=VALUE",
        help="-D property for the Java driver (default aeron.threading.mode=SHARED)",
    )


def driver_props(args: argparse.Namespace) -> dict[str, dict[str, str]]:
    """Per kind, the -D properties from --ours-prop / --java-prop over ``STREAM_TUNING`` (Java: also SHARED
    threading unless overridden)."""
    return {
        "ours": {**STREAM_TUNING, **parse_props(args.ours_prop)},
        "java": {**JAVA_DEFAULT_PROPS, **parse_props(args.java_prop)},
    }


def run_order(runs: int, order: str) -> list[tuple[str, ...]]:
    """The driver order for each run: ``alternate`` (ours first on odd runs), ``ours-first`` or ``java-first``."""
    sequences = []
    for i in range(runs):
        if order == "java-first" or (order == "alternate" and i % 2 == 1):
            sequences.append(("java", "ours"))
        else:
            sequences.append(("ours", "java"))
    return sequences


def compare(
    measure: Callable[[str], dict[str, Any]],
    runs: int,
    order: str,
    kinds: Sequence[str] = KINDS,
    label: str = "bench",
) -> dict[str, list[dict[str, Any]]]:
    """Run ``measure(kind)`` for every kind in every run; a failed run records ``{"error": ...}``. A kind that
    answered "unsupported" is not tried again."""
    results: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    for i, sequence in enumerate(run_order(runs, order)):
        for kind in sequence:
            if kind not in results:
                continue
            if any(str(r.get("error", "")).startswith("unsupported") for r in results[kind]):
                continue
            progress(f"{label}: run {i + 1}/{runs}, {kind} driver")
            try:
                result = measure(kind)
            except BenchError as exc:
                result = {"error": unsupported_or(str(exc))}
                progress(f"{label}: {kind} run {i + 1} failed: {result['error']}")
            else:
                progress(f"{label}: {kind} run {i + 1}: {json.dumps(_rounded_floats(result), default=str)}")
            results[kind].append(result)
    return results


def _rounded_floats(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, dict):
        return {k: _rounded_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded_floats(v) for v in value]
    return value


def median_of(results: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = [r[key] for r in results if "error" not in r and r.get(key) is not None]
    return statistics.median(values) if values else None


def first_error(results: Sequence[Mapping[str, Any]]) -> str | None:
    return next((str(r["error"]) for r in results if "error" in r), None)


def ratio(ours: float | None, java: float | None, digits: int = 3) -> float | None:
    return None if ours is None or not java else round(ours / java, digits)


def rounded(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def run_main(main: Callable[[], int]) -> None:
    """Entry point wrapper: Ctrl-C (after the harness has cleaned up) exits 130 without a traceback."""
    try:
        code = main()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(code)
