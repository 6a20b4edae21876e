"""The import order of docs/design.md section 2, checked by scanning every module under driver/ with ast.

Every import counts, including ones inside functions and ``if TYPE_CHECKING:`` blocks: a rule about
which layer may know about which is about the source, not only about what runs. Imports sit at the top of
their file: one inside a function is only for what an optional extra provides (a command must run, and say
which extra it lacks, without it), never a way around an import cycle. The command line imports only the
family of the command it runs, by name from its table (``driver.cli.FAMILIES``) with importlib.

Outside driver/, the tests (tests/) and the tools (tools/) both stand on the harness (harness/) and never on each
other, and the harness on neither: no import of the other's package, nor a ``python -m`` of one of its modules.
"""

from __future__ import annotations

import ast
import itertools
import re
import subprocess
import sys
from pathlib import Path

import pytest

from driver.cli import FAMILIES as CLI_FAMILIES
from driver.util.extras import EXTRA_OF_MODULE

DRIVER = Path(__file__).resolve().parents[1] / "driver"

# The package order, lowest first: a module may import driver modules of its own layer or a layer above it
# in this table, never one below it. Every module under driver/ must fall under exactly one entry.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("driver.util",),
    ("driver.concurrent",),
    ("driver.protocol",),
    (
        # the agents, their proxies and the objects they own
        "driver.agent",
        "driver.conductor",
        "driver.sender",
        "driver.receiver",
        "driver.fast_cycle",
        "driver.data_step",
        "driver.native_declaration",
        "driver.media_driver",
        "driver.client_command_adapter",
        "driver.client_proxy",
        "driver.sender_proxy",
        "driver.receiver_proxy",
        "driver.driver_conductor_proxy",
        "driver.context",
        "driver.termination",
        "driver.network_publication",
        "driver.ipc_publication",
        "driver.publication_image",
        "driver.data_packet_dispatcher",
        "driver.links",
        "driver.raw_log",
        "driver.media",
        "driver.status",
        "driver.reports",
    ),
    ("driver.client", "driver.archive"),
    ("driver.service",),  # the record & replay service: on the clients, below the commands that run it
    (
        "driver",
        "driver.stop_signals",
        "driver.archive_launcher",
        "driver.views",
        "driver.exporter",
        "driver.analysis",
    ),
    ("driver.cli", "driver.__main__"),  # the command line: on everything, and nothing imports it but __main__
)

SANS_IO_PACKAGES = ("driver.protocol", "driver.concurrent", "driver.util")
FORBIDDEN_IN_SANS_IO = ("asyncio", "socket", "selectors", "uvloop", "time")
AGENT_MODULES = (
    "driver.conductor",
    "driver.sender",
    "driver.receiver",
    "driver.media_driver",
    "driver.agent",
    "driver.client_command_adapter",
    "driver.client_proxy",
    "driver.network_publication",
    "driver.ipc_publication",
    "driver.publication_image",
    "driver.data_packet_dispatcher",
    "driver.links",
    "driver.raw_log",
)
NATIVE = "driver._native"
# Each native header is one family of functions, wrapped by exactly one module (native/README.md).
NATIVE_HEADERS = Path(__file__).resolve().parents[1] / "native" / "include"
NATIVE_OWNERS = {
    "amd_atomic.h": "driver.concurrent.atomic_buffer",
    "amd_term.h": "driver.concurrent.atomic_buffer",
    "amd_rebuild.h": "driver.concurrent.atomic_buffer",
    "amd_rebuild_batch.h": "driver.concurrent.logbuffer.term_rebuilder",
    "amd_publication.h": "driver.concurrent.logbuffer.publication_offer",
    "amd_udp.h": "driver.media.udp_batch",
    "amd_timer.h": "driver.agent.park_timer",
    "amd_crc.h": "driver.concurrent.frame_checksums",
    "amd_watch.h": "driver.concurrent.word_watch",
    "amd_step.h": "driver.data_step",
    "amd_cycle.h": "driver.fast_cycle",
    "amd_gather.h": "driver.analysis.payload_gather",
}
# The client's CPython fast path (native/src/amd_fastpath*.c, an extension module of its own, not cffi) has one
# owner too.
FASTPATH = "driver.concurrent.logbuffer._fastpath"
FASTPATH_OWNER = "driver.concurrent.logbuffer.fastpath"
# The archive is a client of the driver: primitives and the client, never the driver's agents or I/O. Its agents
# exchange commands as the driver's do, over the agents' command queues (a primitive: no I/O, no agent).
ARCHIVE = "driver.archive"
ARCHIVE_MAY_IMPORT = (
    "driver.agent.command_queue",
    "driver.archive",
    "driver.client",
    "driver.concurrent",
    "driver.protocol",
    "driver.util",
)
ARCHIVE_CLIENT = "driver.archive.client"
ARCHIVE_CLIENT_MAY_IMPORT_FROM_ARCHIVE = ("driver.archive.client", "driver.archive.codecs")
# The command line sits on top: nothing else in driver/ imports it but the entry point.
CLI = "driver.cli"
CLI_IMPORTED_BY = ("driver.__main__",)
# Each command family's module shares only these with the others (its own subcommand modules aside): what every
# command uses, and what only the long-running ones do (the archive's settings, the event loop).
CLI_SHARED = ("driver.cli.common", "driver.cli.long_running")
CLI_FAMILY_PARTS = {"driver.cli.archive": ("driver.cli.archive_replicate", "driver.cli.archive_export")}
# The named lazy points: (module, function) -> the one subsystem it imports when a command runs it, so that start-up
# pays only for what runs (driver/cli/long_running.py). Any other import inside a function fails, unless an
# optional extra provides it.
LAZY_POINTS = {
    ("driver.cli.long_running", "archive_subsystem"): "driver.archive_launcher",
    ("driver.cli.long_running", "exporter_subsystem"): "driver.exporter",
    ("driver.cli.long_running", "service_subsystem"): "driver.service.command",
}
# What `mediadriver run` without --archive, --metrics-port or --http must not import.
SUBSYSTEMS_RUN_LOADS_ONLY_WHEN_ASKED = (
    "driver.archive",
    "driver.exporter",
    "driver.service.command",
    "numpy",
    "prometheus_client",
)
# What the optional extras provide (driver/util/extras.py), with what they bring that our code imports by name.
OPTIONAL_MODULES = frozenset(EXTRA_OF_MODULE) | {"starlette", "pydantic", "httptools"}


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


def function_imports(path: Path, root: Path = DRIVER.parent) -> list[tuple[int, str, set[str]]]:
    """(line, outermost function, modules) of each import statement inside a function (``from a import b``
    yields a and a.b)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str, set[str]]] = []

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if function is not None and isinstance(child, ast.Import | ast.ImportFrom):
                found.append((child.lineno, function, _statement_targets(child, package)))
            inner = function
            if function is None and isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = child.name
            elif function is None and isinstance(child, ast.Lambda):
                inner = "<lambda>"
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), None)
    return found


def module_level_imports(path: Path, root: Path = DRIVER.parent) -> set[str]:
    """What importing ``path`` imports: every import outside functions and ``if TYPE_CHECKING:`` blocks."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit_all(child.orelse)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                found.update(_statement_targets(child, package))
            visit(child)

    def visit_all(nodes: list[ast.stmt]) -> None:
        for n in nodes:
            visit(ast.Module(body=[n], type_ignores=[]))

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return found


def _statement_targets(node: ast.Import | ast.ImportFrom, package: str) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if node.level:
        base_parts = package.split(".")
        base_parts = base_parts[: len(base_parts) - (node.level - 1)]
        base = ".".join([*base_parts, node.module] if node.module else base_parts)
    else:
        base = node.module or ""
    return {base} | {f"{base}.{alias.name}" for alias in node.names}


def needing_an_extra(top_level: dict[str, set[str]], optional: frozenset[str] = OPTIONAL_MODULES) -> set[str]:
    """The driver modules whose import needs an optional extra: they import one of its modules at their top, or
    a driver module that does."""
    needing: set[str] = set()
    changed = True
    while changed:
        changed = False
        for module, imports in top_level.items():
            if module not in needing and any(
                n.partition(".")[0] in optional or n in needing for n in imports
            ):
                needing.add(module)
                changed = True
    return needing


def function_import_violations(
    path: Path,
    needing: set[str],
    root: Path = DRIVER.parent,
    optional: frozenset[str] = OPTIONAL_MODULES,
    lazy_points: dict[tuple[str, str], str] | None = None,
) -> list[str]:
    """``file:line`` of each import inside a function that is not of an extra (nor of a module needing one), nor
    a named lazy point's import of its subsystem."""
    lazy = LAZY_POINTS if lazy_points is None else lazy_points
    module = module_name(path, root)
    bad = []
    for line, function, targets in function_imports(path, root):
        if any(t.partition(".")[0] in optional or t in needing for t in targets):
            continue
        if lazy.get((module, function)) in targets:
            continue
        bad.append(f"{path.relative_to(root)}:{line} imports {min(targets, key=len)} inside a function")
    return bad


def is_within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def resolved_imports(path: Path, root: Path, known: set[str]) -> set[str]:
    """The driver modules ``path`` really imports: ``from driver import _native`` is driver._native, not the
    ``driver`` package; a name that is not a module (a class, a constant) resolves to the module it is in."""
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
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.add(target if target in known or target in (NATIVE, FASTPATH) else base)
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
    return {n for n in found if is_within(n, "driver")}


def layer_of(name: str) -> int | None:
    """The index in LAYERS of the most specific entry ``name`` falls under (None: under no entry)."""
    best: tuple[int, int] | None = None
    for index, entries in enumerate(LAYERS):
        for entry in entries:
            # "driver" stands for the package's own __init__ only, so that a new module must find its layer.
            inside = name == entry if entry == "driver" else is_within(name, entry)
            if inside and (best is None or len(entry) > best[1]):
                best = (index, len(entry))
    return None if best is None else best[0]


def order_violations(module: str, imports: set[str]) -> list[str]:
    """Imports of ``module`` that reach up the order (into a higher layer) or fall under no layer."""
    own = layer_of(module)
    if own is None:
        return [f"{module} is in no layer of LAYERS"]
    bad = []
    for name in sorted(imports):
        if is_within(name, NATIVE):
            continue  # the native module has its own rule
        layer = layer_of(name)
        if layer is None or layer > own:
            bad.append(name)
    return bad


def archive_violations(module: str, imports: set[str]) -> list[str]:
    """The archive uses primitives and the client; its client uses no archive server code."""
    if not is_within(module, ARCHIVE):
        return []
    bad = [n for n in imports if not any(is_within(n, p) for p in ARCHIVE_MAY_IMPORT)]
    if is_within(module, ARCHIVE_CLIENT):
        bad += [
            n
            for n in imports
            if is_within(n, ARCHIVE)
            and not any(is_within(n, p) for p in ARCHIVE_CLIENT_MAY_IMPORT_FROM_ARCHIVE)
        ]
    return sorted(set(bad))


def native_families(include: Path = NATIVE_HEADERS) -> dict[str, str]:
    """Every name a native header declares (functions, enum constants, types) -> the header's file name: the one
    that declares it, though another header may use it (a struct's field of another family's type)."""
    declared: dict[str, str] = {}
    families: dict[str, str] = {}
    for header in sorted(include.glob("*.h")):
        text = re.sub(r"/\*.*?\*/", "", header.read_text(encoding="utf-8"), flags=re.S)
        text = "\n".join(re.findall(r"^(?!#).*", text, flags=re.M))
        for name in re.findall(r"\}\s*((?:amd|AMD)_\w+)\s*;|\b((?:amd|AMD)_\w+)\s*[(=]", text):
            declared.setdefault(name[0] or name[1], header.name)
        for name in re.findall(r"\b((?:amd|AMD)_\w+)", text):
            families.setdefault(name, header.name)
    return families | declared


def native_names_used(path: Path) -> set[str]:
    """``lib.<name>`` and ``ffi.new("<type>...")`` names a module uses."""
    used: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "lib":
            used.add(node.attr)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "ffi"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            used.update(re.findall(r"\b(amd_\w+)", node.args[0].value))
    return used


def native_violations(module: str, imports: set[str], used: set[str], families: dict[str, str]) -> list[str]:
    """A module may import driver._native only if it owns a family, and use only the families it owns."""
    owned = {header for header, owner in NATIVE_OWNERS.items() if owner == module}
    bad = []
    if not owned and any(is_within(n, NATIVE) for n in imports):
        bad.append(f"imports {NATIVE} but owns no native family")
    bad += [
        f"uses {n} of {families[n]} (owner: {NATIVE_OWNERS.get(families[n])})"
        for n in sorted(used)
        if n in families and families[n] not in owned
    ]
    return bad


# What each top-level tree outside driver/ must not reach into (by import or by ``python -m <module>``).
ROOT = DRIVER.parent
NOT_REACHED_FROM = {"tests": ("tools",), "tools": ("tests",), "harness": ("tests", "tools")}


def cross_tree_imports(path: Path, root: Path = ROOT) -> list[str]:
    """What ``path`` (under tests/, tools/ or harness/) imports or runs from a tree it must not reach into."""
    forbidden = NOT_REACHED_FROM[path.relative_to(root).parts[0]]
    found = imported_modules(path, root)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        # a module run as a child, ``[..., "-m", "name", ...]``
        items = node.elts if isinstance(node, ast.List | ast.Tuple) else []
        for flag, name in itertools.pairwise(items):
            if isinstance(flag, ast.Constant) and flag.value == "-m" and isinstance(name, ast.Constant):
                found.add(str(name.value))
    return sorted(n for n in found if any(is_within(n, f) for f in forbidden))


MODULES = {module_name(p): p for p in sorted(DRIVER.rglob("*.py"))}
IMPORTS = {m: resolved_imports(p, DRIVER.parent, set(MODULES)) for m, p in MODULES.items()}


TOP_LEVEL = {m: module_level_imports(p) for m, p in MODULES.items()}
NEEDING_AN_EXTRA = needing_an_extra(TOP_LEVEL)


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


def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, set[str]]:
    for relative, text in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    paths = {module_name(p, tmp_path): p for p in sorted((tmp_path / "driver").rglob("*.py"))}
    return {m: resolved_imports(p, tmp_path, set(paths)) for m, p in paths.items()}


def test_the_order_rule_catches_an_import_up_the_order(tmp_path: Path) -> None:
    imports = _tree(
        tmp_path,
        {
            "driver/__init__.py": "",
            "driver/concurrent/logbuffer/term_reader.py": "from driver.protocol.frames import HEADER_LENGTH\n",
            "driver/protocol/frames.py": "from driver.concurrent.logbuffer.frame_descriptor import HEADER_LENGTH\n",
            "driver/concurrent/logbuffer/frame_descriptor.py": "from ...util import bit_util\n",
            "driver/util/bit_util.py": "",
            "driver/media/udp_batch.py": "from driver import _native\n",
            "driver/stray.py": "",
        },
    )
    assert imports["driver.media.udp_batch"] == {"driver._native"}
    assert order_violations(
        "driver.concurrent.logbuffer.term_reader", imports["driver.concurrent.logbuffer.term_reader"]
    ) == ["driver.protocol.frames"]
    assert order_violations("driver.protocol.frames", imports["driver.protocol.frames"]) == []
    assert imports["driver.concurrent.logbuffer.frame_descriptor"] == {"driver.util.bit_util"}
    assert order_violations("driver.media.udp_batch", imports["driver.media.udp_batch"]) == []
    assert order_violations("driver.stray", set()) == ["driver.stray is in no layer of LAYERS"]


def test_the_archive_rules_catch_agents_io_native_and_server_code_in_the_client(tmp_path: Path) -> None:
    imports = _tree(
        tmp_path,
        {
            "driver/archive/__init__.py": "",
            "driver/archive/recorder.py": (
                "from driver.client.aeron import Aeron\n"
                "from driver.concurrent.logbuffer import term_reader\n"
                "from driver.conductor import DriverConductor\n"
                "from driver.media import udp_batch\n"
                "from driver import _native\n"
            ),
            "driver/archive/catalog.py": "from driver.util.bit_util import align\n",
            "driver/archive/codecs/__init__.py": "",
            "driver/archive/client.py": (
                "from driver.archive.codecs import ControlRequest\n"
                "from driver.archive import catalog\n"
                "from driver.client.aeron import Aeron\n"
            ),
            "driver/client/aeron.py": "",
            "driver/concurrent/logbuffer/term_reader.py": "",
            "driver/conductor.py": "",
            "driver/media/udp_batch.py": "",
            "driver/util/bit_util.py": "",
        },
    )
    assert archive_violations("driver.archive.recorder", imports["driver.archive.recorder"]) == [
        "driver._native",
        "driver.conductor",
        "driver.media.udp_batch",
    ]
    assert archive_violations("driver.archive.catalog", imports["driver.archive.catalog"]) == []
    assert archive_violations("driver.archive.client", imports["driver.archive.client"]) == [
        "driver.archive.catalog"
    ]
    assert archive_violations("driver.client.aeron", {"driver.conductor"}) == []  # not the archive's rule


def test_the_native_rule_catches_a_second_wrapper_of_a_family(tmp_path: Path) -> None:
    include = tmp_path / "include"
    include.mkdir()
    (include / "amd_udp.h").write_text(
        "/* amd_fake_in_comment */\n#ifndef AMD_UDP_H\nenum { AMD_UDP_MAX_BATCH = 64 };\n"
        "int32_t amd_udp_sendto(int32_t fd);\n#endif\n"
    )
    families = native_families(include)
    assert families == {"AMD_UDP_MAX_BATCH": "amd_udp.h", "amd_udp_sendto": "amd_udp.h"}
    sender = tmp_path / "sender.py"
    sender.write_text("from driver._native import ffi, lib\nlib.amd_udp_sendto(3)\nffi.new('amd_x_t *')\n")
    used = native_names_used(sender)
    assert used == {"amd_udp_sendto", "amd_x_t"}
    assert native_violations("driver.media.udp_batch", {NATIVE}, used, families) == []
    assert native_violations("driver.sender", {NATIVE}, used, families) == [
        f"imports {NATIVE} but owns no native family",
        "uses amd_udp_sendto of amd_udp.h (owner: driver.media.udp_batch)",
    ]


def test_the_scan_sees_the_packages_the_rules_are_about() -> None:
    assert "driver.protocol.control_protocol" in MODULES
    assert "driver.concurrent.cnc_file" in MODULES
    assert "driver.util.bit_util" in MODULES
    assert "driver.client.aeron" in MODULES
    assert "driver.concurrent.atomic_buffer" in MODULES


def test_the_function_import_rule_allows_only_what_an_extra_provides(tmp_path: Path) -> None:
    files = {
        "driver/__init__.py": "",
        "driver/service/server.py": "import uvicorn\n",
        "driver/service/command.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n"
            "    from driver.service.jobs import Job\n"
            "def serve():\n"
            "    from driver.service.server import start\n"
            "    import pyspark\n"
            "def fast():\n"
            "    from driver.service import jobs\n"
            "    if True:\n"
            "        import json\n"
        ),
        "driver/service/jobs.py": "from .page import render\n",
        "driver/service/page.py": "from fastapi import FastAPI\n",
        "driver/util/text.py": "",
    }
    _tree(tmp_path, files)
    paths = {module_name(p, tmp_path): p for p in sorted((tmp_path / "driver").rglob("*.py"))}
    top = {m: module_level_imports(p, tmp_path) for m, p in paths.items()}
    assert "driver.service.jobs" not in top["driver.service.command"]  # only for the type checker
    needing = needing_an_extra(top)
    assert needing == {"driver.service.server", "driver.service.jobs", "driver.service.page"}
    command = paths["driver.service.command"]
    assert [line for line, _, _ in function_imports(command, tmp_path)] == [5, 6, 8, 10]
    # driver.service.jobs needs fastapi through page.py, so importing it late is for the extra too.
    assert function_import_violations(command, needing, tmp_path) == [
        "driver/service/command.py:10 imports json inside a function"
    ]
    assert function_import_violations(command, set(), tmp_path) == [
        "driver/service/command.py:5 imports driver.service.server inside a function",
        "driver/service/command.py:8 imports driver.service inside a function",
        "driver/service/command.py:10 imports json inside a function",
    ]


def test_the_tree_rule_catches_tests_and_tools_reaching_into_each_other(tmp_path: Path) -> None:
    files = {
        "tests/test_a.py": "from tools.bench import steady\nimport harness.wait\n",
        "tests/support/b.py": "from harness.embedded import EmbeddedDriver\nfrom tests.support import clock\n",
        "tools/bench/c.py": "import subprocess\nsubprocess.run(['python', '-m', 'tests.support.fast_publisher'])\n",
        "harness/d.py": "from tools.bench.report import emit\nfrom harness.wait import wait_for\n",
    }
    for relative, text in files.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    found = {relative: cross_tree_imports(tmp_path / relative, tmp_path) for relative in files}
    assert found == {
        "tests/test_a.py": ["tools.bench", "tools.bench.steady"],
        "tests/support/b.py": [],
        "tools/bench/c.py": ["tests.support.fast_publisher"],
        "harness/d.py": ["tools.bench.report", "tools.bench.report.emit"],
    }


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


@pytest.mark.parametrize("module", list(MODULES))
def test_every_module_imports_only_its_own_layer_and_those_below(module: str) -> None:
    bad = order_violations(module, IMPORTS[module])
    assert bad == [], f"{MODULES[module].relative_to(DRIVER.parent)} imports above its layer: {bad}"


@pytest.mark.parametrize("module", modules_in(ARCHIVE) or ["(no archive yet)"])
def test_the_archive_uses_only_primitives_and_the_client(module: str) -> None:
    if module not in MODULES:
        return
    bad = archive_violations(module, IMPORTS[module])
    assert bad == [], f"{MODULES[module].relative_to(DRIVER.parent)} imports {bad}"


FAMILIES = native_families()


def test_every_native_header_has_one_owner_module() -> None:
    assert set(NATIVE_OWNERS) == {p.name for p in NATIVE_HEADERS.glob("*.h")}
    assert set(NATIVE_OWNERS.values()) <= set(MODULES)
    assert FAMILIES["amd_udp_recv_batch"] == "amd_udp.h"
    assert FAMILIES["amd_term_rebuild_batch"] == "amd_rebuild_batch.h"


@pytest.mark.parametrize("module", list(MODULES))
def test_only_the_owner_of_a_native_family_calls_it(module: str) -> None:
    bad = native_violations(module, IMPORTS[module], native_names_used(MODULES[module]), FAMILIES)
    assert bad == [], f"{MODULES[module].relative_to(DRIVER.parent)}: {bad}"


@pytest.mark.parametrize("module", list(MODULES))
def test_only_the_fast_path_owner_imports_the_extension(module: str) -> None:
    if module == FASTPATH_OWNER:
        assert FASTPATH in IMPORTS[module]
    else:
        assert FASTPATH not in IMPORTS[module], (
            f"{MODULES[module].relative_to(DRIVER.parent)} imports {FASTPATH}: call {FASTPATH_OWNER}"
        )


@pytest.mark.parametrize("module", list(MODULES))
def test_imports_are_at_the_top_unless_an_extra_provides_them(module: str) -> None:
    """An import inside a function hides a cycle or a cost; only an optional extra's is allowed there (a module of
    the extra, or a driver module that needs one), so that a command without the extra still runs."""
    assert function_import_violations(MODULES[module], NEEDING_AN_EXTRA) == []


def test_the_extra_rule_sees_the_modules_that_need_an_extra() -> None:
    assert {"driver.service.server", "driver.service.app", "driver.analysis.job"} <= NEEDING_AN_EXTRA
    # Each of the CLI's modules, as the scan does not see driver.cli import the families (they are loaded by name).
    assert not {"driver.service.command", "driver.client.aeron", *modules_in(CLI)} & NEEDING_AN_EXTRA


@pytest.mark.parametrize("module", list(MODULES))
def test_only_the_entry_point_imports_the_cli(module: str) -> None:
    if is_within(module, CLI) or module in CLI_IMPORTED_BY:
        return
    bad = sorted(n for n in IMPORTS[module] if is_within(n, CLI))
    assert bad == [], f"{MODULES[module].relative_to(DRIVER.parent)} imports the command line {bad}"


def test_the_entry_point_imports_the_cli() -> None:
    assert "driver.cli" in IMPORTS["driver.__main__"]


@pytest.mark.parametrize("module", [m for m in modules_in(CLI) if m != CLI])
def test_a_command_family_imports_only_the_shared_cli_modules(module: str) -> None:
    allowed = {*CLI_SHARED, *CLI_FAMILY_PARTS.get(module, ())}
    bad = sorted(n for n in IMPORTS[module] if is_within(n, CLI) and n not in allowed)
    assert bad == [], (
        f"{MODULES[module].relative_to(DRIVER.parent)} imports {bad}: share through {' or '.join(CLI_SHARED)}"
    )


def test_the_cli_table_names_every_command_family() -> None:
    """driver.cli imports each family by its name in FAMILIES, which the scan cannot follow: each name there is a
    module of the package, and each module that registers commands (``add_parsers``) is named there."""
    registering = {
        m
        for m in modules_in(CLI)
        if any(
            isinstance(node, ast.FunctionDef) and node.name == "add_parsers"
            for node in ast.parse(MODULES[m].read_text(encoding="utf-8")).body
        )
    }
    assert {f"{CLI}.{family}" for family in CLI_FAMILIES.values()} == registering


def test_each_lazy_point_is_a_function_that_imports_its_subsystem() -> None:
    for (module, function), subsystem in LAZY_POINTS.items():
        found = [targets for _, name, targets in function_imports(MODULES[module]) if name == function]
        assert found and any(subsystem in targets for targets in found), f"{module}.{function} {subsystem}"


def test_the_lazy_rule_allows_only_the_named_point_its_subsystem(tmp_path: Path) -> None:
    files = {
        "driver/__init__.py": "",
        "driver/cli/__init__.py": "",
        "driver/cli/long_running.py": (
            "def archive_subsystem():\n"
            "    import driver.archive_launcher\n"
            "def elsewhere():\n"
            "    import driver.archive_launcher\n"
            "def exporter_subsystem():\n"
            "    import driver.archive_launcher\n"
        ),
    }
    _tree(tmp_path, files)
    path = tmp_path / "driver" / "cli" / "long_running.py"
    lazy = {("driver.cli.long_running", "archive_subsystem"): "driver.archive_launcher"}
    assert function_import_violations(path, set(), tmp_path, lazy_points=lazy) == [
        "driver/cli/long_running.py:4 imports driver.archive_launcher inside a function",
        "driver/cli/long_running.py:6 imports driver.archive_launcher inside a function",
    ]


def test_the_command_list_and_a_plain_run_load_no_optional_subsystem() -> None:
    """`mediadriver --help` imports no command family; the `run` family imports the driver but neither the archive,
    the exporter, the service nor numpy until asked (each costs start-up time and memory)."""
    script = (
        "import sys\n"
        "from driver.cli import FAMILIES, build_parser\n"
        "build_parser(None)\n"
        "families = sorted(m for m in sys.modules if m.startswith('driver.cli.') and m[11:] in FAMILIES.values())\n"
        "import driver.cli.run\n"
        "loaded = sorted(m for m in sys.modules if any(m == s or m.startswith(s + '.') for s in sys.argv[1:]))\n"
        "print(families, loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *SUBSYSTEMS_RUN_LOADS_ONLY_WHEN_ASKED],
        capture_output=True,
        text=True,
        check=True,
        cwd=DRIVER.parent,
    )
    assert done.stdout.strip() == "[] []"


OUTSIDE_DRIVER = sorted(p for tree in NOT_REACHED_FROM for p in (ROOT / tree).rglob("*.py"))


def test_the_tree_scan_sees_the_three_trees() -> None:
    seen = {p.relative_to(ROOT).as_posix() for p in OUTSIDE_DRIVER}
    assert {"tests/support/__init__.py", "tools/bench/harness.py", "harness/children.py"} <= seen


@pytest.mark.parametrize("path", OUTSIDE_DRIVER, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_tests_and_tools_meet_only_in_the_harness(path: Path) -> None:
    bad = cross_tree_imports(path)
    assert bad == [], (
        f"{path.relative_to(ROOT)} reaches into {bad}: move what both need into harness/ and import it from there"
    )
