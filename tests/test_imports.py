"""The import direction rules of design.md section 2, checked by scanning every module under driver/ with ast.

Every import counts, including ones inside functions and ``if TYPE_CHECKING:`` blocks: a rule about
which layer may know about which is about the source, not only about what runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

DRIVER = Path(__file__).resolve().parents[1] / "driver"

SANS_IO_PACKAGES = ("driver.protocol", "driver.concurrent", "driver.util")
FORBIDDEN_IN_SANS_IO = ("asyncio", "socket", "selectors", "uvloop", "time")
AGENT_MODULES = (
    "driver.conductor",
    "driver.sender",
    "driver.receiver",
    "driver.media_driver",
    "driver.agent",
)
NATIVE = "driver._native"


def module_name(path: Path, root: Path = DRIVER.parent) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, root: Path = DRIVER.parent) -> set[str]:
    """Fully qualified names of everything ``path`` imports (``from a import b`` yields a and a.b)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join([*base_parts, node.module] if node.module else base_parts)
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    return found


def is_within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


MODULES = {module_name(p): p for p in sorted(DRIVER.rglob("*.py"))}


def modules_in(*packages: str) -> list[str]:
    return [m for m in MODULES if any(is_within(m, p) for p in packages)]


# --- the scanner itself ----------------------------------------------------------------------------------


def test_scanner_resolves_every_import_form(tmp_path: Path) -> None:
    root = tmp_path / "driver"
    (root / "protocol").mkdir(parents=True)
    sample = root / "protocol" / "sample.py"
    sample.write_text(
        "import asyncio\n"
        "import os.path as p\n"
        "from time import monotonic_ns\n"
        "from . import frames\n"
        "from .frames import Header\n"
        "from ..concurrent import ring_buffer\n"
        "from driver import _native\n"
        "import importlib\n"
        "def f():\n"
        "    import socket\n"
        "    return importlib.import_module('uvloop')\n"
    )
    assert module_name(sample, tmp_path) == "driver.protocol.sample"
    init = root / "protocol" / "__init__.py"
    init.write_text("from .frames import Header\nfrom .. import util\n")
    assert module_name(init, tmp_path) == "driver.protocol"
    assert {"driver.protocol.frames", "driver.util"} <= imported_modules(init, tmp_path)
    found = imported_modules(sample, tmp_path)
    assert {
        "asyncio",
        "os.path",
        "time",
        "time.monotonic_ns",
        "driver.protocol",
        "driver.protocol.frames",
        "driver.protocol.frames.Header",
        "driver.concurrent",
        "driver.concurrent.ring_buffer",
        "driver",
        "driver._native",
        "importlib",
        "socket",
        "uvloop",
    } <= found


def test_the_scan_sees_the_packages_the_rules_are_about() -> None:
    assert "driver.protocol.control_protocol" in MODULES
    assert "driver.concurrent.cnc_file" in MODULES
    assert "driver.util.bit_util" in MODULES
    assert "driver.client.aeron" in MODULES
    assert "driver.concurrent.atomic_buffer" in MODULES


# --- the rules -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("module", modules_in(*SANS_IO_PACKAGES))
def test_sans_io_packages_never_import_the_loop_sockets_or_the_clock(module: str) -> None:
    """protocol/, concurrent/ and util/ get time as now_ns and bytes as memoryviews (mmap and os are fine)."""
    bad = sorted(
        name
        for name in imported_modules(MODULES[module])
        if any(is_within(name, f) for f in FORBIDDEN_IN_SANS_IO)
    )
    assert bad == [], f"{MODULES[module].relative_to(DRIVER.parent)} imports {bad}"


@pytest.mark.parametrize("module", modules_in("driver.client"))
def test_the_client_never_imports_the_agents(module: str) -> None:
    bad = sorted(
        name for name in imported_modules(MODULES[module]) if any(is_within(name, a) for a in AGENT_MODULES)
    )
    assert bad == [], f"{MODULES[module].relative_to(DRIVER.parent)} imports driver agent modules {bad}"


@pytest.mark.parametrize("module", [m for m in MODULES if not is_within(m, "driver.concurrent")])
def test_only_concurrent_imports_the_native_module(module: str) -> None:
    bad = sorted(name for name in imported_modules(MODULES[module]) if is_within(name, NATIVE))
    assert bad == [], (
        f"{MODULES[module].relative_to(DRIVER.parent)} imports {bad}; only driver/concurrent/ may"
    )
