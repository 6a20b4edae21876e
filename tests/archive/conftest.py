"""Archive test harness: the interop peer (Aeron 1.15.1 jar + Java 11) with tests/archive/java/*.java compiled.

Fixtures
--------
archive_java   session   ``JavaPeers`` (tests/interop/conftest.py) whose classpath holds tests/archive/java;
                         ``archive_java.run(main_class, *args, timeout=..., check=...)``.
"""

from __future__ import annotations

import importlib.util
import sys
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
