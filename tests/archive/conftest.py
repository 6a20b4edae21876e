"""Archive test harness: the interop peer (Aeron 1.15.1 jar + Java 11) with tests/archive/java/*.java compiled.

Fixtures
--------
archive_java   session   ``JavaPeers`` (tests/support/java_peers.py) whose classpath holds tests/archive/java and
                         tests/interop/java (ArchiveLauncher); ``archive_java.run(main_class, *args, ...)``.
java_archive   module    the real 1.15.1 Archive (tests/support/java_archive.py) on a driver of its own, once per
                         driver kind (params "java" and "ours"; the driver has
                         ``aeron.spies.simulate.connection=true``): a ``JavaArchiveOnDriver`` with ``kind``,
                         ``aeron_dir``, ``props`` (the archive's -D settings, its channels included) and
                         ``archive``. A test module adds archive settings with a ``JAVA_ARCHIVE_PROPS`` dict.
archive_server module    ``java_archive``'s two params plus our archive: "ours-embedded" (``mediadriver run --archive``
                         on our driver) and "ours-standalone" (``mediadriver archive`` on the Java driver), each a
                         ``JavaArchiveOnDriver`` whose ``archive`` is a tests/support/our_archive.py ``OurArchive``
                         (same ``errors()``/``process.stderr_text()``/``stop()``). Settings from
                         ``JAVA_ARCHIVE_PROPS`` as for ``java_archive``.
driver_pool    function  driver processes (ours: ``python -m driver run``; Java's MediaDriver), stopped after.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.driver_pool import DriverPool, DriverProcess
from tests.support.java_archive import JavaArchive, archive_channels, start_java_archive
from tests.support.java_peers import JAVA_SOURCES, JavaPeers, compile_java_sources, find_peer_paths
from tests.support.our_archive import OurArchive, embedded_archive, start_our_archive
from tests.support.scratch import scratch_dir

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def archive_java(tmp_path_factory: pytest.TempPathFactory) -> JavaPeers:
    try:
        paths = find_peer_paths()
    except FileNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)
    classes = tmp_path_factory.mktemp("archive-java")
    compile_java_sources(paths, classes, HERE / "java")
    compile_java_sources(paths, classes, JAVA_SOURCES)
    return JavaPeers(paths, classes, tmp_path_factory.mktemp("archive-java-logs"))


@dataclass
class JavaArchiveOnDriver:
    kind: str
    aeron_dir: Path
    props: dict[str, str]
    archive: JavaArchive | OurArchive
    driver: DriverProcess


def _archive_on_driver(
    kind: str,
    request: pytest.FixtureRequest,
    peers: JavaPeers,
    factory: pytest.TempPathFactory,
) -> Iterator[JavaArchiveOnDriver]:
    """One archive of ``kind`` ("java"/"ours": the real archive on that driver; "ours-embedded",
    "ours-standalone": ours), stopped with its driver after the module."""
    pool = DriverPool()
    scratch = ExitStack()
    try:
        props = {"aeron.spies.simulate.connection": "true"}
        archive_props = archive_channels() | getattr(request.module, "JAVA_ARCHIVE_PROPS", {})
        archive_dir = scratch.enter_context(scratch_dir(factory, f"archive-{kind}"))
        archive: JavaArchive | OurArchive
        if kind == "ours-embedded":
            embedded = props | archive_props | {"aeron.archive.dir": str(archive_dir)}
            driver = pool.ours(embedded, args=["--archive"])
            archive = embedded_archive(driver.log, archive_dir, embedded)
        elif kind == "ours-standalone":
            driver = pool.java(props, peers=peers)
            log_path = scratch.enter_context(scratch_dir(factory, "archive-log")) / "archive.log"
            archive = start_our_archive(driver.aeron_dir, archive_dir, archive_props, log_path)
        else:
            driver = pool.java(props, peers=peers) if kind == "java" else pool.ours(props)
            archive = start_java_archive(peers, driver.aeron_dir, archive_dir, archive_props)
        try:
            yield JavaArchiveOnDriver(kind, driver.aeron_dir, archive.props, archive, driver)
        finally:
            archive.stop()
    finally:
        problems = pool.close()
        scratch.close()
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.fixture(scope="module", params=["java", "ours"])
def java_archive(
    request: pytest.FixtureRequest,
    archive_java: JavaPeers,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[JavaArchiveOnDriver]:
    yield from _archive_on_driver(request.param, request, archive_java, tmp_path_factory)


@pytest.fixture(scope="module", params=["java", "ours", "ours-embedded", "ours-standalone"])
def archive_server(
    request: pytest.FixtureRequest,
    archive_java: JavaPeers,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[JavaArchiveOnDriver]:
    yield from _archive_on_driver(request.param, request, archive_java, tmp_path_factory)


@pytest.fixture(scope="module", params=["java", "ours-embedded"])
def java_or_our_archive(
    request: pytest.FixtureRequest,
    archive_java: JavaPeers,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[JavaArchiveOnDriver]:
    """The real 1.15.1 archive on the Java driver, then ours embedded in our driver."""
    yield from _archive_on_driver(request.param, request, archive_java, tmp_path_factory)


@pytest.fixture
def driver_pool() -> Iterator[DriverPool]:
    """Driver processes (ours: ``python -m driver run``; Java's MediaDriver), stopped at teardown."""
    pool = DriverPool()
    yield pool
    problems = pool.close()
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
