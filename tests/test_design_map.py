"""docs/design.md is the map a newcomer starts from: it names every package and top-level module of
``driver/``, every path it names exists, every symbol its concept table names is defined in that file, every
capability has a concept row, and its layer and native-owner tables say what tests/test_imports.py enforces
(native/README.md's owner table too)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_imports import FASTPATH_OWNER, LAYERS, NATIVE_OWNERS, layer_of

ROOT = Path(__file__).resolve().parents[1]
MAP = ROOT / "docs" / "design.md"
PATH = re.compile(r"`((?:driver|native|tests|tools|harness)/[\w./-]*)`")
CONCEPT_ROW = re.compile(r"^\| ([^|]+) \| (`[^|]+`) \| (`[^|]+`) \|$")
LAYER_ROW = re.compile(r"^\| (\d+|-) \| ([^|]+) \| [^|]+ \|$")
HEADER_ROW = re.compile(r"^\| ([^|]+) \| `([^`]+)`(?: \([^|]*\))? \|$")
NATIVE_README = ROOT / "native" / "README.md"
# What a newcomer looks for: each of these is named in the first column of at least one concept row.
CAPABILITIES = (
    "purge",
    "replication",
    "token",
    "rolling capture",
    "retention",
    "response channel",
    "untethered",
    "checksum",
    "native cycle",
    "loss generator",
    "spark loss analysis",
    "mdc",
    "mds",
    "spy",
    "prometheus exporter",
    "replay merge",
)


def map_text() -> str:
    return MAP.read_text()


def named_paths() -> set[str]:
    return set(PATH.findall(map_text()))


def test_every_package_and_top_level_module_is_on_the_map() -> None:
    named = named_paths()
    driver = ROOT / "driver"
    packages = {
        f"{p.parent.relative_to(ROOT).as_posix()}/"
        for p in driver.rglob("__init__.py")
        if p.parent != driver and "__pycache__" not in p.parts
    }
    modules = {
        p.relative_to(ROOT).as_posix() for p in driver.glob("*.py") if p.name != "__init__.py"
    }
    missing = sorted((packages | modules) - named)
    assert not missing, f"docs/design.md does not name: {', '.join(missing)}"


def test_every_path_on_the_map_exists() -> None:
    gone = sorted(path for path in named_paths() if not (ROOT / path).exists())
    assert not gone, f"docs/design.md names paths that do not exist: {', '.join(gone)}"


def test_every_symbol_in_the_concept_table_is_defined_where_it_says() -> None:
    rows = [CONCEPT_ROW.match(line) for line in map_text().splitlines()]
    rows = [row for row in rows if row is not None and "driver/" in row.group(2)]
    assert len(rows) >= 20, "the concept table is missing or was reshaped"
    wrong = []
    for row in rows:
        files = [ROOT / path for path in re.findall(r"`([^`]+)`", row.group(2))]
        source = "\n".join(path.read_text() for path in files if path.is_file())
        for symbol in re.findall(r"`([^`]+)`", row.group(3)):
            name = symbol.rsplit(".", 1)[-1]
            if not re.search(rf"^\s*(?:async )?(?:def|class) {re.escape(name)}\b", source, re.M):
                wrong.append(f"{symbol} in {row.group(2)}")
    assert not wrong, "the concept table names symbols not defined there: " + "; ".join(wrong)


def module_of(path: str) -> str:
    """``driver/a/b.py`` -> driver.a.b; ``driver/a/`` -> driver.a; ``driver/__init__.py`` -> driver."""
    name = path.removesuffix("/").removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__")


def test_every_capability_has_a_concept_row() -> None:
    concepts = [row.group(1).lower() for row in map(CONCEPT_ROW.match, map_text().splitlines()) if row]
    missing = [c for c in CAPABILITIES if not any(c in concept for concept in concepts)]
    assert not missing, f"docs/design.md has no concept row for: {', '.join(missing)}"


def test_the_layer_table_is_the_import_tests_order() -> None:
    """Each row's layer is where tests/test_imports.py's LAYERS puts its modules, and every entry of LAYERS has
    a row."""
    rows = [row for row in map(LAYER_ROW.match, map_text().splitlines()) if row and row.group(1) != "-"]
    assert len(rows) >= 30, "the layer table is missing or was reshaped"
    wrong, named = [], set()
    for row in rows:
        for path in re.findall(r"`(driver/[^`]*)`", row.group(2)):
            module = module_of(path)
            named.add(module)
            layer = layer_of(module)
            if layer is None or layer + 1 != int(row.group(1)):
                wrong.append(f"{path}: the map says {row.group(1)}, the import test {None if layer is None else layer + 1}")
    assert not wrong, "docs/design.md's layers differ from tests/test_imports.py's: " + "; ".join(wrong)
    unnamed = sorted(entry for entries in LAYERS for entry in entries if entry not in named)
    assert not unnamed, f"docs/design.md's layer table has no row for: {', '.join(unnamed)}"


def owner_table(text: str) -> dict[str, str]:
    """Header file name -> owner module, from a ``| Header | Owner |`` table (the fast path's row under "_fastpath")."""
    owners: dict[str, str] = {}
    for row in map(HEADER_ROW.match, text.splitlines()):
        if row is None or not row.group(2).startswith("driver/"):
            continue
        headers = re.findall(r"`(amd_\w+\.h)`", row.group(1)) if row.group(1).startswith("`amd_") else ["_fastpath"]
        for header in headers:
            owners[header] = module_of(row.group(2))
    return owners


def test_the_native_owner_tables_are_the_import_tests() -> None:
    expected = {**NATIVE_OWNERS, "_fastpath": FASTPATH_OWNER}
    assert owner_table(map_text()) == expected, "docs/design.md's header -> owner table differs from tests/test_imports.py"
    readme = owner_table(NATIVE_README.read_text())
    assert readme == NATIVE_OWNERS, "native/README.md's header -> owner table differs from tests/test_imports.py"


# Where a path a reader follows may be named: the docs, the READMEs, the C sources and the docstrings and
# comments of the code (the tests' own paths are often made-up examples, and the Makefile names build outputs).
NAMED_IN = (
    "README.md",
    "docs/*.md",
    "native/README.md",
    "native/**/*.[ch]",
    "tools/**/README.md",
    "driver/**/*.py",
    "harness/*.py",
    "tools/bench/**/*.py",
)
REPO_PATH = re.compile(r"(?<![\w/.-])((?:driver|native|tests|tools|harness|docs)/[\w./*-]*[\w/*])")
NATIVE_FILE = re.compile(r"(?<![\w/.<-])(amd_\w+\.[ch])\b")


def test_every_path_a_doc_header_or_docstring_names_exists() -> None:
    """A path (``driver/...``, ``native/...``, ``tests/...``, ``tools/...``, ``harness/...``, ``docs/...``; a
    glob matches at least one file) or a native file by its name (``amd_*.h``) named anywhere a reader looks:
    it is there."""
    native_files = {p.name for p in (ROOT / "native").rglob("amd_*.[ch]")}
    gone = []
    for pattern in NAMED_IN:
        for source in sorted(ROOT.glob(pattern)):
            if "__pycache__" in source.parts:
                continue
            text = source.read_text()
            where = source.relative_to(ROOT).as_posix()
            for path in set(REPO_PATH.findall(text)):
                path = path.rstrip(".")
                found = any(ROOT.glob(path)) if "*" in path else (ROOT / path).exists()
                if not found and not (ROOT / f"{path}.py").exists():  # a module named without .py
                    gone.append(f"{where}: {path}")
            gone += [f"{where}: {name}" for name in set(NATIVE_FILE.findall(text)) if name not in native_files]
    assert not gone, "named but not there: " + "; ".join(sorted(gone))


def test_every_path_the_native_sources_name_exists() -> None:
    """The C headers and native/README.md name their Python owners: those files exist."""
    texts = [NATIVE_README.read_text(), *(p.read_text() for p in (ROOT / "native").rglob("*.[ch]"))]
    named = {path for text in texts for path in re.findall(r"\b(driver/[\w/]+\.py)\b", text)}
    assert named, "no owner named in native/"
    gone = sorted(path for path in named if not (ROOT / path).exists())
    assert not gone, f"native/ names files that do not exist: {', '.join(gone)}"
