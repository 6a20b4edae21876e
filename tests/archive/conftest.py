"""Archive test harness: the interop peer (Aeron 1.15.1 jar + Java 11) with tests/archive/java/*.java compiled.

Fixtures
--------
archive_java   session   ``JavaPeers`` (tests/interop/conftest.py) whose classpath holds tests/archive/java;
                         ``archive_java.run(main_class, *args, timeout=..., check=...)``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent


def _interop_harness() -> ModuleType:
    """tests/interop/conftest.py loaded under its own name: its helpers, not its fixtures."""
    spec = importlib.util.spec_from_file_location(
        "_archive_interop_harness", HERE.parent / "interop" / "conftest.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses resolve their annotations through sys.modules
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def archive_java(tmp_path_factory: pytest.TempPathFactory) -> Any:
    harness = _interop_harness()
    try:
        paths = harness.find_peer_paths()
    except FileNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)
    classes = harness.compile_java_sources(paths, tmp_path_factory.mktemp("archive-java"), HERE / "java")
    return harness.JavaPeers(paths, classes, tmp_path_factory.mktemp("archive-java-logs"))


@pytest.fixture(scope="session")
def archive_harness() -> ModuleType:
    """tests/interop/conftest.py's helpers (DriverPool, JavaPeers, Spawned, parse_errors)."""
    return _interop_harness()


@pytest.fixture(scope="session")
def interop_java(archive_harness: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``JavaPeers`` over tests/interop/java (ArchiveChecks, ArchiveLauncher) and tests/archive/java together."""
    try:
        paths = archive_harness.find_peer_paths()
    except FileNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)
    classes = tmp_path_factory.mktemp("archive-interop-java")
    archive_harness.compile_java_sources(paths, classes)
    archive_harness.compile_java_sources(paths, classes / "archive", HERE / "java")
    peers = archive_harness.JavaPeers(paths, classes, tmp_path_factory.mktemp("archive-interop-logs"))
    peers.classpath = os.pathsep.join([peers.classpath, str(classes / "archive")])
    return peers


@pytest.fixture
def driver_pool(archive_harness: ModuleType) -> Iterator[Any]:
    """Driver processes (ours: ``python -m driver run``; Java's MediaDriver), stopped at teardown."""
    pool = archive_harness.DriverPool()
    yield pool
    problems = pool.close()
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
