"""The real Aeron 1.15.1 peer for tests: Java programs compiled and run, and children whose output is read with
deadlines. Finding the peer, compiling and starting children are the harness's (shared with the benchmarks);
what is here fails the test (``pytest.fail``) with the child's output when something does not come in time."""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.children import ROOT, child_env, start
from harness.java import ADD_OPENS, Peers, compile_java, find_javac, find_peers, java_cmd
from tests.support.stat_output import ErrorReport, StatScreen, parse_errors, parse_stat, stat_screen_complete

JAVA_SOURCES = ROOT / "tests" / "interop" / "java"

# The serial collector: many JVMs share two cores in a test run.
JVM_OPTS = (*ADD_OPENS, "-XX:+UseSerialGC")
TOOL_JVM_OPTS = ("-XX:TieredStopAtLevel=1", "-Xshare:auto")
_JVM_WARNING = re.compile(
    r"^WARNING: (An illegal reflective access|Illegal reflective access|Please consider reporting"
    r"|Use --illegal-access|All illegal access).*\n?",
    re.MULTILINE,
)


def strip_jvm_warnings(text: str) -> str:
    return _JVM_WARNING.sub("", text)


def log_tail(path: Path, limit: int = 4000) -> str:
    try:
        return strip_jvm_warnings(path.read_text(errors="replace"))[-limit:]
    except OSError as exc:
        return f"<no log: {exc}>"


def find_peer_paths() -> Peers:
    """The jar and Java 11 runtime installed by harness/install.py; FileNotFoundError naming what is
    missing (a javac, any JDK >= 11, too)."""
    peers = find_peers()
    missing = ["the Aeron 1.15.1 jar and Java 11 runtime"] if peers is None else []
    if find_javac() is None:
        missing.append("javac (any JDK >= 11)")
    if peers is None or missing:
        raise FileNotFoundError(
            f"Aeron interop peer missing: {', '.join(missing)}. Run `make peers` (harness/install.py) first."
        )
    return peers


def compile_java_sources(paths: Peers, out_dir: Path, sources_dir: Path = JAVA_SOURCES) -> Path:
    """Every ``*.java`` in ``sources_dir`` compiled against the jar (``javac --release 11``) into ``out_dir``."""
    sources = sorted(sources_dir.glob("*.java"))
    out_dir.mkdir(parents=True, exist_ok=True)
    if sources:
        compile_java(paths.jar, sources, out_dir)
    return out_dir


class Spawned:
    """A child process whose stdout is read line by line with deadlines; stderr goes to a file."""

    def __init__(
        self, name: str, cmd: Sequence[str], log_dir: Path, *, stdin: bool = False, cwd: Path = ROOT
    ):
        self.name = name
        self.cmd = list(cmd)
        self.stderr_path = log_dir / f"{name}-{time.monotonic_ns()}.stderr"
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = start(
            self.cmd,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=cwd,
            bufsize=0,
            own_session=False,
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
        return log_tail(self.stderr_path, 20000)

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


class JavaPeers:
    """Runs Java main classes from the Aeron jar and the compiled test programs."""

    def __init__(self, paths: Peers, classes: Path, log_dir: Path):
        self.paths = paths
        self.classes = classes
        self.log_dir = log_dir
        self.classpath = os.pathsep.join([str(paths.jar), str(classes)])

    def cmd(
        self, main_class: str, *args: str, props: Mapping[str, Any] | None = None, tool: bool = True
    ) -> list[str]:
        opts = [*JVM_OPTS, *(TOOL_JVM_OPTS if tool else ())]
        return java_cmd(self.paths, main_class, props, args, classes=(self.classes,), jvm_opts=opts)

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
                cmd, capture_output=True, text=True, timeout=timeout, input=input, cwd=ROOT, env=child_env()
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
