"""AeronStat and ErrorStat output parsed (the format our ``stat`` and ``errors`` commands share with them)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

# `%3d: %,20d - %s` (widths are minimums)
STAT_LINE = re.compile(r"^(?P<id> *-?\d+): (?P<value> *-?[\d,]+) - (?P<label>.*)$")
STAT_HEADER = re.compile(r"Aeron Stat \(CnC v(?P<version>\d+)\), pid (?P<pid>-?\d+)")
ERROR_ENTRY = re.compile(
    r"^(?P<count>\d+) observations from (?P<first>.+?) to (?P<last>.+?) for:\n(?P<text>.*?)(?=\n\*\*\*|\n\n\d+ distinct"
    r" errors observed\.|\Z)",
    re.MULTILINE | re.DOTALL,
)
DISTINCT_ERRORS = re.compile(r"^(\d+) distinct errors observed\.$", re.MULTILINE)


@dataclass(frozen=True)
class StatLine:
    id: int
    value: int
    label: str
    raw: str


@dataclass
class StatScreen:
    """One AeronStat screen: header fields and the counter lines keyed by id (in printed order)."""

    version: int | None = None
    pid: int | None = None
    counters: dict[int, StatLine] = field(default_factory=dict)
    raw: list[str] = field(default_factory=list)


def parse_stat(text: str | Sequence[str]) -> StatScreen:
    """Parse the first screen of AeronStat (or ``mediadriver stat --once``) output."""
    lines = text.splitlines() if isinstance(text, str) else list(text)
    screen = StatScreen()
    started = False
    for line in lines:
        line = line.replace("\x1b[2J", "").replace("\x1b[H", "")
        header = STAT_HEADER.search(line)
        if header:
            if started and screen.counters:
                break
            screen.version, screen.pid = int(header["version"]), int(header["pid"])
            started = True
            continue
        if started and screen.counters and line.strip() == "--":
            break
        match = STAT_LINE.match(line)
        if match:
            started = True
            cid = int(match["id"])
            screen.counters[cid] = StatLine(cid, int(match["value"].replace(",", "")), match["label"], line)
            screen.raw.append(line)
    return screen


def stat_screen_complete(lines: list[str]) -> bool:
    """True once AeronStat printed a header, counter lines and the closing ``--``."""
    seen_header = seen_counter = False
    for line in lines:
        if STAT_HEADER.search(line):
            seen_header = True
        elif seen_header and STAT_LINE.match(line):
            seen_counter = True
        elif seen_counter and line.strip() == "--":
            return True
    return False


@dataclass(frozen=True)
class ErrorEntry:
    count: int
    first: str
    last: str
    text: str


@dataclass(frozen=True)
class ErrorReport:
    entries: list[ErrorEntry]
    distinct: int | None
    raw: str


def parse_errors(text: str) -> ErrorReport:
    """Parse ErrorStat-format output: ``***`` / ``<n> observations from <t> to <t> for:`` / stack / summary."""
    entries = [
        ErrorEntry(int(m["count"]), m["first"], m["last"], m["text"].rstrip("\n"))
        for m in ERROR_ENTRY.finditer(text)
    ]
    summary = DISTINCT_ERRORS.search(text)
    return ErrorReport(entries, int(summary.group(1)) if summary else None, text)
