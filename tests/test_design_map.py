"""docs/design.md is the map a newcomer starts from: it names every package and top-level module of
``driver/``, every path it names exists, and every symbol its concept table names is defined in that file."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAP = ROOT / "docs" / "design.md"
PATH = re.compile(r"`((?:driver|native|tests|tools)/[\w./-]*)`")
CONCEPT_ROW = re.compile(r"^\| [^|]+ \| (`[^|]+`) \| (`[^|]+`) \|$")


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
    rows = [row for row in rows if row is not None and "driver/" in row.group(1)]
    assert len(rows) >= 20, "the concept table is missing or was reshaped"
    wrong = []
    for row in rows:
        files = [ROOT / path for path in re.findall(r"`([^`]+)`", row.group(1))]
        source = "\n".join(path.read_text() for path in files if path.is_file())
        for symbol in re.findall(r"`([^`]+)`", row.group(2)):
            name = symbol.rsplit(".", 1)[-1]
            if not re.search(rf"^\s*(?:async )?(?:def|class) {re.escape(name)}\b", source, re.M):
                wrong.append(f"{symbol} in {row.group(1)}")
    assert not wrong, "the concept table names symbols not defined there: " + "; ".join(wrong)
