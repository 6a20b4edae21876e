"""Interop harness: the real Aeron 1.15.1 peer (Java 11 + aeron-all jar) against our driver and client.

Fixtures
--------
peers              session   ``JavaPeers``: jar/java/javac paths, compiled ``tests/interop/java/*.java``,
                             ``run``/``spawn`` of Java main classes, ``aeron_stat``/``error_stat`` parsers.
java_classes       session   Path of the directory holding the compiled test programs (javac --release 11).
run_java           session   ``peers.run``: ``run_java(main_class, *args, props={}, timeout=30.0, input=None,
                             check=False) -> CompletedProcess[str]`` (stderr without JVM access warnings).
spawn_java         function  ``spawn_java(main_class, *args, props={}) -> Spawned``; stopped at teardown.
drivers            function  ``DriverPool``: ``.java(props)``, ``.ours(props, args=())``, ``.start(kind, props)``;
                             everything it started is stopped at teardown.
our_driver         function  ``drivers.ours``: ``our_driver(props=None, args=()) -> DriverProcess``; teardown
                             asserts the process exits 0 on SIGTERM within 5 s.
java_driver_factory function ``drivers.java``: ``java_driver_factory(props=None) -> DriverProcess``.
java_driver        module    one Java MediaDriver per module; extra ``-D`` props by indirect parametrization
                             (``@pytest.mark.parametrize("java_driver", [{"aeron.x": "y"}], indirect=True)``).
run_driver_cli     session   ``run_driver_cli(*args, timeout=30.0) -> CompletedProcess[str]`` for
                             ``python -m driver ARGS`` (e.g. ``"stat", "--dir", d, "--once"``).
cnc                session   ``CncTools``: ``header(dir)``, ``counters(dir, allocated_only=True)``, ``ready(dir)``,
                             ``ring_positions(dir)``, ``ring_drained(dir)``, ``wait_for(predicate, timeout_s, what,
                             interval=0.02)``, ``parse_stat(text)``, ``parse_errors(text)``
                             -- a tiny independent reader of cnc.dat (pread), usable against either driver.

Aeron dirs live under /dev/shm (``aeron-interop-*``) and are removed at teardown. Every subprocess is bounded by
a timeout and stopped by its own pid.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import re
import selectors
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support import wait_for

ROOT = Path(__file__).resolve().parents[2]
JAVA_SOURCES = Path(__file__).resolve().parent / "java"
SHM = Path("/dev/shm")

# Agrona maps files through sun.nio.ch.FileChannelImpl.map0 by reflection; opening the packages keeps Java 11
# from printing "illegal reflective access" warnings (any left are filtered out of stderr anyway).
JVM_OPTS = (
    "--add-opens",
    "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.nio=ALL-UNNAMED",
    "-XX:+UseSerialGC",
)
TOOL_JVM_OPTS = ("-XX:TieredStopAtLevel=1", "-Xshare:auto")
_JVM_WARNING = re.compile(
    r"^WARNING: (An illegal reflective access|Illegal reflective access|Please consider reporting"
    r"|Use --illegal-access|All illegal access).*\n?",
    re.MULTILINE,
)

CNC_VERSION = 15
CNC_FILE = "cnc.dat"
END_OF_METADATA_OFFSET = 128
RING_TRAILER_LENGTH = 768
RING_TAIL_OFFSET = 128  # trailer fields relative to ring capacity
RING_HEAD_OFFSET = 384
RING_CONSUMER_HEARTBEAT_OFFSET = 640
METADATA_LENGTH = 512
COUNTER_LENGTH = 128
RECORD_UNUSED, RECORD_ALLOCATED, RECORD_RECLAIMED = 0, 1, -1

DRIVER_READY_TIMEOUT_S = 30.0
OUR_DRIVER_EXIT_TIMEOUT_S = 5.0


def strip_jvm_warnings(text: str) -> str:
    return _JVM_WARNING.sub("", text)


def _child_env() -> dict[str, str]:
    """Environment for child processes: no AERON_* settings leak in from the developer's shell."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _props_args(props: Mapping[str, Any] | None) -> list[str]:
    return [f"-D{k}={v}" for k, v in (props or {}).items()]


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        return strip_jvm_warnings(path.read_text(errors="replace"))[-limit:]
    except OSError as exc:
        return f"<no log: {exc}>"


# ---------------------------------------------------------------------------------------------------------------
# Peer paths (from tools/peers/install.py, never hard-coded)


def _load_peer_installer() -> Any:
    spec = importlib.util.spec_from_file_location(
        "_aeron_peers_install", ROOT / "tools" / "peers" / "install.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class PeerPaths:
    jar: Path
    java: Path
    javac: Path


def find_peer_paths() -> PeerPaths:
    """The jar and Java 11 runtime installed by tools/peers/install.py, plus a javac (any JDK >= 11)."""
    installer = _load_peer_installer()
    jar, java = (
        Path(os.environ.get("AERON_JAR", installer.JAR)),
        Path(os.environ.get("AERON_JAVA", installer.JAVA)),
    )
    javac_found = os.environ.get("JAVAC") or shutil.which("javac")
    missing = [str(p) for p in (jar, java) if not p.exists()]
    if javac_found is None:
        missing.append("javac (any JDK >= 11)")
    if missing:
        raise FileNotFoundError(
            f"Aeron interop peer missing: {', '.join(missing)}. Run `make peers` (tools/peers/install.py) first."
        )
    return PeerPaths(jar=jar, java=java, javac=Path(javac_found))


def compile_java_sources(paths: PeerPaths, out_dir: Path, sources_dir: Path = JAVA_SOURCES) -> Path:
    sources = sorted(str(p) for p in sources_dir.glob("*.java"))
    out_dir.mkdir(parents=True, exist_ok=True)
    if sources:
        cmd = [
            str(paths.javac),
            "--release",
            "11",
            "-nowarn",
            "-cp",
            str(paths.jar),
            "-d",
            str(out_dir),
            *sources,
        ]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"javac failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return out_dir


# ---------------------------------------------------------------------------------------------------------------
# Spawned processes


class Spawned:
    """A child process whose stdout is read line by line with deadlines; stderr goes to a file."""

    def __init__(
        self, name: str, cmd: Sequence[str], log_dir: Path, *, stdin: bool = False, cwd: Path = ROOT
    ):
        self.name = name
        self.cmd = list(cmd)
        self.stderr_path = log_dir / f"{name}-{time.monotonic_ns()}.stderr"
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            self.cmd,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=cwd,
            env=_child_env(),
            bufsize=0,
        )
        self._buffer = b""
        self.lines: list[str] = []
        self._eof = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _pump(self, timeout: float) -> None:
        assert self.proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout):
                return
        chunk = os.read(self.proc.stdout.fileno(), 65536)
        if not chunk:
            self._eof = True
            return
        self._buffer += chunk
        *complete, self._buffer = self._buffer.split(b"\n")
        self.lines.extend(line.decode(errors="replace") for line in complete)

    def read_until(
        self, until: str | re.Pattern[str] | Callable[[list[str]], bool], timeout: float
    ) -> list[str]:
        """Read stdout until a line matches ``until`` (regex) or ``until(lines)`` is true; returns all lines."""
        if callable(until) and not isinstance(until, re.Pattern):
            done = until
        else:
            pattern = re.compile(until) if isinstance(until, str) else until
            done = lambda lines: any(pattern.search(line) for line in lines)  # noqa: E731
        deadline = time.monotonic() + timeout
        while not done(self.lines):
            remaining = deadline - time.monotonic()
            if self._eof or remaining <= 0:
                rc = self.proc.poll()
                pytest.fail(
                    f"{self.name}: {'output ended' if self._eof else f'timed out after {timeout}s'} (rc={rc}) "
                    f"before {until!r}.\nstdout:\n"
                    + "\n".join(self.lines)
                    + f"\nstderr:\n{self.stderr_text()}"
                )
            self._pump(min(remaining, 0.2))
        return self.lines

    def write_line(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def stderr_text(self) -> str:
        return _tail(self.stderr_path, 20000)

    def wait(self, timeout: float) -> int:
        """Wait for exit (draining stdout); fail the test if it does not exit in time."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None or not self._eof:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.stop()
                pytest.fail(f"{self.name} did not exit within {timeout}s; stdout: {self.lines}")
            if self._eof:
                time.sleep(min(remaining, 0.02))
            else:
                self._pump(min(remaining, 0.2))
        if self._buffer:
            self.lines.append(self._buffer.decode(errors="replace"))
            self._buffer = b""
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL by pid and reap."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 5.0) -> int:
        """Signal (by pid), wait up to ``timeout`` then SIGKILL; closes pipes. Idempotent."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGKILL)
                self.proc.wait(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._stderr.close()
        return self.proc.returncode


# ---------------------------------------------------------------------------------------------------------------
# Tool output parsers (AeronStat / ErrorStat format, shared by our `stat` and `errors` commands)

# `%3d: %,20d - %s` (widths are minimums)
STAT_LINE = re.compile(r"^(?P<id> *-?\d+): (?P<value> *-?[\d,]+) - (?P<label>.*)$")
STAT_HEADER = re.compile(r"Aeron Stat \(CnC v(?P<version>\d+)\), pid (?P<pid>-?\d+)")
ERROR_ENTRY = re.compile(
    r"^(?P<count>\d+) observations from (?P<first>.+?) to (?P<last>.+?) for:\n(?P<text>.*?)(?=\n\*\*\*|\n\n\d+ distinct"
    r" errors observed\.|\Z)",
    re.MULTILINE | re.DOTALL,
)
DISTINCT_ERRORS = re.compile(r"^(\d+) distinct errors observed\.$", re.MULTILINE)


@dataclass(frozen=True)
class StatLine:
    id: int
    value: int
    label: str
    raw: str


@dataclass
class StatScreen:
    """One AeronStat screen: header fields and the counter lines keyed by id (in printed order)."""

    version: int | None = None
    pid: int | None = None
    counters: dict[int, StatLine] = field(default_factory=dict)
    raw: list[str] = field(default_factory=list)


def parse_stat(text: str | Sequence[str]) -> StatScreen:
    """Parse the first screen of AeronStat (or ``mediadriver stat --once``) output."""
    lines = text.splitlines() if isinstance(text, str) else list(text)
    screen = StatScreen()
    started = False
    for line in lines:
        line = line.replace("\x1b[2J", "").replace("\x1b[H", "")
        header = STAT_HEADER.search(line)
        if header:
            if started and screen.counters:
                break
            screen.version, screen.pid = int(header["version"]), int(header["pid"])
            started = True
            continue
        if started and screen.counters and line.strip() == "--":
            break
        match = STAT_LINE.match(line)
        if match:
            started = True
            cid = int(match["id"])
            screen.counters[cid] = StatLine(cid, int(match["value"].replace(",", "")), match["label"], line)
            screen.raw.append(line)
    return screen


def stat_screen_complete(lines: list[str]) -> bool:
    """True once AeronStat printed a header, counter lines and the closing ``--``."""
    seen_header = seen_counter = False
    for line in lines:
        if STAT_HEADER.search(line):
            seen_header = True
        elif seen_header and STAT_LINE.match(line):
            seen_counter = True
        elif seen_counter and line.strip() == "--":
            return True
    return False


@dataclass(frozen=True)
class ErrorEntry:
    count: int
    first: str
    last: str
    text: str


@dataclass(frozen=True)
class ErrorReport:
    entries: list[ErrorEntry]
    distinct: int | None
    raw: str


def parse_errors(text: str) -> ErrorReport:
    """Parse ErrorStat-format output: ``***`` / ``<n> observations from <t> to <t> for:`` / stack / summary."""
    entries = [
        ErrorEntry(int(m["count"]), m["first"], m["last"], m["text"].rstrip("\n"))
        for m in ERROR_ENTRY.finditer(text)
    ]
    summary = DISTINCT_ERRORS.search(text)
    return ErrorReport(entries, int(summary.group(1)) if summary else None, text)


# ---------------------------------------------------------------------------------------------------------------
# Java peer


class JavaPeers:
    """Runs Java main classes from the Aeron jar and the compiled test programs."""

    def __init__(self, paths: PeerPaths, classes: Path, log_dir: Path):
        self.paths = paths
        self.classes = classes
        self.log_dir = log_dir
        self.classpath = os.pathsep.join([str(paths.jar), str(classes)])

    def cmd(
        self, main_class: str, *args: str, props: Mapping[str, Any] | None = None, tool: bool = True
    ) -> list[str]:
        opts = [*JVM_OPTS, *(TOOL_JVM_OPTS if tool else ())]
        return [
            str(self.paths.java),
            *opts,
            "-cp",
            self.classpath,
            *_props_args(props),
            main_class,
            *map(str, args),
        ]

    def run(
        self,
        main_class: str,
        *args: Any,
        props: Mapping[str, Any] | None = None,
        timeout: float = 30.0,
        input: str | None = None,
        check: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        """Run a Java main class to completion; stderr has the JVM's reflective-access warnings removed."""
        cmd = self.cmd(main_class, *map(str, args), props=props)
        try:
            result = subprocess.run(
                cmd, capture_output=True, text=True, timeout=timeout, input=input, cwd=ROOT, env=_child_env()
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout
            err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr
            pytest.fail(
                f"{main_class} timed out after {timeout}s\nstdout:\n{out}\nstderr:\n{strip_jvm_warnings(err or '')}"
            )
        result.stderr = strip_jvm_warnings(result.stderr)
        if check and result.returncode != 0:
            pytest.fail(
                f"{main_class} exited {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
            )
        return result

    def spawn(
        self, main_class: str, *args: Any, props: Mapping[str, Any] | None = None, stdin: bool = False
    ) -> Spawned:
        """Start a Java main class; the caller must ``stop()`` it (the ``spawn_java`` fixture does)."""
        return Spawned(
            main_class.rsplit(".", 1)[-1], self.cmd(main_class, *args, props=props), self.log_dir, stdin=stdin
        )

    def aeron_stat(self, aeron_dir: Path | str, timeout: float = 20.0) -> StatScreen:
        """First screen of the real ``io.aeron.samples.AeronStat`` (which loops forever; killed after one screen)."""
        proc = self.spawn("io.aeron.samples.AeronStat", props={"aeron.dir": aeron_dir})
        try:
            lines = proc.read_until(stat_screen_complete, timeout)
        finally:
            proc.stop(signal.SIGKILL)
        return parse_stat(lines)

    def error_stat(self, aeron_dir: Path | str, timeout: float = 20.0) -> ErrorReport:
        """The real ``io.aeron.samples.ErrorStat`` output, parsed."""
        result = self.run(
            "io.aeron.samples.ErrorStat", props={"aeron.dir": aeron_dir}, timeout=timeout, check=True
        )
        return parse_errors(result.stdout)


# ---------------------------------------------------------------------------------------------------------------
# cnc.dat reader (independent of driver/, so the harness also works before our driver exists)


@dataclass(frozen=True)
class CncHeader:
    version: int
    to_driver_length: int
    to_clients_length: int
    counters_metadata_length: int
    counters_values_length: int
    error_log_length: int
    client_liveness_timeout_ns: int
    start_timestamp_ms: int
    pid: int
    file_length: int

    @property
    def metadata_offset(self) -> int:
        return END_OF_METADATA_OFFSET + self.to_driver_length + self.to_clients_length

    @property
    def values_offset(self) -> int:
        return self.metadata_offset + self.counters_metadata_length

    @property
    def consumer_heartbeat_offset(self) -> int:
        capacity = self.to_driver_length - RING_TRAILER_LENGTH
        return END_OF_METADATA_OFFSET + capacity + RING_CONSUMER_HEARTBEAT_OFFSET


@dataclass(frozen=True)
class CncCounter:
    id: int
    state: int
    type_id: int
    key: bytes  # all MAX_KEY_LENGTH (112) bytes
    label: str
    value: int


def read_cnc_header(aeron_dir: Path | str) -> CncHeader | None:
    """The cnc.dat header, or None while the file is missing or shorter than the header."""
    try:
        with open(Path(aeron_dir) / CNC_FILE, "rb", buffering=0) as f:
            raw = os.pread(f.fileno(), 48, 0)
            size = os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        return None
    if len(raw) < 48:
        return None
    return CncHeader(*struct.unpack_from("<6i3q", raw, 0), file_length=size)


def read_consumer_heartbeat(aeron_dir: Path | str, header: CncHeader) -> int:
    with open(Path(aeron_dir) / CNC_FILE, "rb", buffering=0) as f:
        raw = os.pread(f.fileno(), 8, header.consumer_heartbeat_offset)
    return struct.unpack("<q", raw)[0] if len(raw) == 8 else 0


def read_to_driver_positions(aeron_dir: Path | str) -> tuple[int, int]:
    """(head, tail) of the to-driver ring: equal once the driver has consumed every command written so far."""
    header = read_cnc_header(aeron_dir)
    if header is None:
        raise RuntimeError(f"no cnc.dat in {aeron_dir}")
    trailer = END_OF_METADATA_OFFSET + header.to_driver_length - RING_TRAILER_LENGTH
    with open(Path(aeron_dir) / CNC_FILE, "rb", buffering=0) as f:
        (tail,) = struct.unpack("<q", os.pread(f.fileno(), 8, trailer + RING_TAIL_OFFSET))
        (head,) = struct.unpack("<q", os.pread(f.fileno(), 8, trailer + RING_HEAD_OFFSET))
    return head, tail


def to_driver_ring_drained(aeron_dir: Path | str) -> bool:
    head, tail = read_to_driver_positions(aeron_dir)
    return head == tail


def cnc_ready(aeron_dir: Path | str) -> bool:
    """cnc.md §5: version 15 at offset 0 (written last) and a non-zero to-driver consumer heartbeat."""
    header = read_cnc_header(aeron_dir)
    if header is None or header.version != CNC_VERSION or header.to_driver_length <= RING_TRAILER_LENGTH:
        return False
    if header.file_length < header.consumer_heartbeat_offset + 8:
        return False
    return read_consumer_heartbeat(aeron_dir, header) != 0


def read_cnc_counters(aeron_dir: Path | str, *, allocated_only: bool = True) -> dict[int, CncCounter]:
    """Counters in cnc.dat, walking metadata records until the first UNUSED one (Agrona CountersReader.forEach)."""
    header = read_cnc_header(aeron_dir)
    if header is None or header.version != CNC_VERSION:
        raise RuntimeError(f"no ready cnc.dat in {aeron_dir}: {header}")
    counters: dict[int, CncCounter] = {}
    with open(Path(aeron_dir) / CNC_FILE, "rb", buffering=0) as f:
        fd = f.fileno()
        for cid in range(header.counters_values_length // COUNTER_LENGTH):
            rec = os.pread(fd, METADATA_LENGTH, header.metadata_offset + cid * METADATA_LENGTH)
            state, type_id = struct.unpack_from("<ii", rec, 0)
            if state == RECORD_UNUSED:
                break
            if allocated_only and state != RECORD_ALLOCATED:
                continue
            (label_length,) = struct.unpack_from("<i", rec, 128)
            label = rec[132 : 132 + max(0, min(label_length, 380))].decode("ascii", errors="replace")
            (value,) = struct.unpack("<q", os.pread(fd, 8, header.values_offset + cid * COUNTER_LENGTH))
            counters[cid] = CncCounter(cid, state, type_id, bytes(rec[16:128]), label, value)
    return counters


class CncTools:
    header = staticmethod(read_cnc_header)
    counters = staticmethod(read_cnc_counters)
    ready = staticmethod(cnc_ready)
    ring_positions = staticmethod(read_to_driver_positions)
    ring_drained = staticmethod(to_driver_ring_drained)
    # cnc.dat reads are not free: poll them less often than tests.support.wait_for does by default.
    wait_for = staticmethod(functools.partial(wait_for, interval=0.02))
    parse_stat = staticmethod(parse_stat)
    parse_errors = staticmethod(parse_errors)


# ---------------------------------------------------------------------------------------------------------------
# Drivers


@dataclass
class DriverProcess:
    kind: str  # "java" or "ours"
    aeron_dir: Path
    proc: subprocess.Popen[bytes]
    log_path: Path
    props: dict[str, str]
    cmd: list[str]
    exit_code: int | None = None
    start_failed: bool = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log(self) -> str:
        return _tail(self.log_path, 20000)

    def header(self) -> CncHeader | None:
        return read_cnc_header(self.aeron_dir)

    def counters(self, *, allocated_only: bool = True) -> dict[int, CncCounter]:
        return read_cnc_counters(self.aeron_dir, allocated_only=allocated_only)

    def signal_and_wait(self, sig: int, timeout: float) -> int | None:
        """Send ``sig`` by pid; return the exit code, or None (after a SIGKILL) if it did not exit in time."""
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)
            return None

    def __str__(self) -> str:
        return f"{self.kind} driver pid {self.pid} dir {self.aeron_dir}"


class DriverPool:
    """Starts drivers in fresh /dev/shm dirs, waits until cnc.dat is ready, stops them all at close()."""

    def __init__(self) -> None:
        self.started: list[tuple[DriverProcess, Path]] = []

    def _new_dir(self, kind: str) -> tuple[Path, Path]:
        base = SHM if SHM.is_dir() else Path(tempfile.gettempdir())
        parent = Path(tempfile.mkdtemp(prefix=f"aeron-interop-{kind}-", dir=base))
        return parent, parent / "aeron"

    def _launch(
        self, kind: str, cmd: list[str], parent: Path, aeron_dir: Path, props: dict[str, str]
    ) -> DriverProcess:
        log_path = parent / f"{kind}-driver.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                env=_child_env(),
            )
        driver = DriverProcess(kind, aeron_dir, proc, log_path, props, cmd)
        self.started.append((driver, parent))
        deadline = time.monotonic() + DRIVER_READY_TIMEOUT_S
        while not cnc_ready(aeron_dir):
            if proc.poll() is not None:
                driver.start_failed = True  # reported here, not again at teardown
                pytest.fail(
                    f"{kind} driver exited with {proc.returncode} before cnc.dat was ready: {cmd}\n{driver.log()}"
                )
            if time.monotonic() > deadline:
                pytest.fail(
                    f"{kind} driver: cnc.dat not ready after {DRIVER_READY_TIMEOUT_S}s: {cmd}\n{driver.log()}"
                )
            time.sleep(0.02)
        return driver

    def java(self, props: Mapping[str, Any] | None = None, *, peers: JavaPeers) -> DriverProcess:
        parent, aeron_dir = self._new_dir("java")
        all_props = {"aeron.dir": str(aeron_dir), "aeron.dir.delete.on.start": "true"}
        all_props.update({k: str(v) for k, v in (props or {}).items()})
        cmd = peers.cmd("io.aeron.driver.MediaDriver", props=all_props, tool=False)
        return self._launch("java", cmd, parent, aeron_dir, all_props)

    def ours(self, props: Mapping[str, Any] | None = None, args: Sequence[str] = ()) -> DriverProcess:
        parent, aeron_dir = self._new_dir("ours")
        str_props = {k: str(v) for k, v in (props or {}).items()}
        cmd = [sys.executable, "-m", "driver", "run", "--dir", str(aeron_dir), *args, *_props_args(str_props)]
        return self._launch("ours", cmd, parent, aeron_dir, str_props)

    def close(self) -> list[str]:
        """Stop everything started (by pid), remove the dirs; returns problems found with our driver's exit."""
        problems = []
        for driver, parent in reversed(self.started):
            if driver.kind == "ours":
                was_alive = driver.alive()
                code = driver.signal_and_wait(signal.SIGTERM, OUR_DRIVER_EXIT_TIMEOUT_S)
                driver.exit_code = code
                if driver.start_failed:
                    pass
                elif code is None:
                    problems.append(f"{driver}: did not exit within {OUR_DRIVER_EXIT_TIMEOUT_S}s of SIGTERM")
                elif code != 0:
                    when = "on SIGTERM" if was_alive else "before teardown"
                    problems.append(f"{driver}: exited {code} {when}\n{driver.log()}")
            else:
                driver.exit_code = driver.signal_and_wait(signal.SIGTERM, 5.0)
            shutil.rmtree(parent, ignore_errors=True)
        self.started.clear()
        return problems


def _close_pool(pool: DriverPool) -> None:
    problems = pool.close()
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


# ---------------------------------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope="session")
def peer_paths() -> PeerPaths:
    try:
        return find_peer_paths()
    except FileNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def java_classes(peer_paths: PeerPaths, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/interop/java/*.java compiled once per session with javac --release 11 against the jar."""
    return compile_java_sources(peer_paths, tmp_path_factory.mktemp("java-classes"))


@pytest.fixture(scope="session")
def peers(peer_paths: PeerPaths, java_classes: Path, tmp_path_factory: pytest.TempPathFactory) -> JavaPeers:
    return JavaPeers(peer_paths, java_classes, tmp_path_factory.mktemp("java-logs"))


@pytest.fixture(scope="session")
def run_java(peers: JavaPeers) -> Callable[..., subprocess.CompletedProcess[str]]:
    return peers.run


@pytest.fixture
def spawn_java(peers: JavaPeers) -> Iterator[Callable[..., Spawned]]:
    spawned: list[Spawned] = []

    def spawn(
        main_class: str, *args: Any, props: Mapping[str, Any] | None = None, stdin: bool = False
    ) -> Spawned:
        proc = peers.spawn(main_class, *args, props=props, stdin=stdin)
        spawned.append(proc)
        return proc

    yield spawn
    for proc in reversed(spawned):
        proc.stop()


@pytest.fixture(scope="session")
def cnc() -> type[CncTools]:
    return CncTools


@pytest.fixture(scope="session")
def run_driver_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    def run(*args: Any, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "driver", *map(str, args)]
        try:
            return subprocess.run(
                cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=_child_env()
            )
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"{cmd} timed out after {timeout}s; stdout: {exc.stdout!r} stderr: {exc.stderr!r}")

    return run


@pytest.fixture
def drivers(peers: JavaPeers) -> Iterator[Any]:
    pool = DriverPool()

    class Drivers:
        def java(self, props: Mapping[str, Any] | None = None) -> DriverProcess:
            return pool.java(props, peers=peers)

        def ours(self, props: Mapping[str, Any] | None = None, args: Sequence[str] = ()) -> DriverProcess:
            return pool.ours(props, args)

        def start(self, kind: str, props: Mapping[str, Any] | None = None) -> DriverProcess:
            return self.java(props) if kind == "java" else self.ours(props)

    yield Drivers()
    _close_pool(pool)


@pytest.fixture
def our_driver(drivers: Any) -> Callable[..., DriverProcess]:
    return drivers.ours


@pytest.fixture
def java_driver_factory(drivers: Any) -> Callable[..., DriverProcess]:
    return drivers.java


@pytest.fixture(scope="module")
def java_driver(request: pytest.FixtureRequest, peers: JavaPeers) -> Iterator[DriverProcess]:
    pool = DriverPool()
    try:
        yield pool.java(getattr(request, "param", None), peers=peers)
    finally:
        _close_pool(pool)
