"""Every benchmark is importable as a module of the tools.bench package (run as ``python -m tools.bench.<name>``)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.mark.parametrize("name", sorted(p.stem for p in BENCH.glob("*.py") if p.stem != "__init__"))
def test_every_benchmark_module_imports_from_the_package(name: str) -> None:
    module = importlib.import_module(f"tools.bench.{name}")
    assert module.__name__ == f"tools.bench.{name}"
