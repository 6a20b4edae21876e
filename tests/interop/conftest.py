"""Interop harness: the real Aeron 1.15.1 peer (Java 11 + aeron-all jar) against our driver and client.

Fixtures
--------
peers              session   ``JavaPeers``: the jar and Java paths, compiled ``tests/interop/java/*.java``,
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
a timeout and stopped by its own pid. The helpers behind the fixtures are tests/support's (java_peers.py,
driver_pool.py, stat_output.py) on the peer kit in harness/ (shared with the benchmarks): other test
directories import them from there.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.children import ROOT, child_env
from harness.cnc import (
    cnc_ready,
    read_cnc_counters,
    read_cnc_header,
    read_to_driver_positions,
    to_driver_ring_drained,
)
from harness.java import Peers
from tests.support import wait_for
from tests.support.driver_pool import DriverPool, DriverProcess, close_pool
from tests.support.java_peers import JavaPeers, Spawned, compile_java_sources, find_peer_paths
from tests.support.stat_output import parse_errors, parse_stat


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


@pytest.fixture(scope="session")
def peer_paths() -> Peers:
    try:
        return find_peer_paths()
    except FileNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def java_classes(peer_paths: Peers, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/interop/java/*.java compiled once per session with javac --release 11 against the jar."""
    return compile_java_sources(peer_paths, tmp_path_factory.mktemp("java-classes"))


@pytest.fixture(scope="session")
def peers(peer_paths: Peers, java_classes: Path, tmp_path_factory: pytest.TempPathFactory) -> JavaPeers:
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
                cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=child_env()
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
    close_pool(pool)


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
        close_pool(pool)
