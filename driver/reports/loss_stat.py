"""``mediadriver loss``: print a loss-report.dat like Aeron's ``io.aeron.samples.LossStat``.

The CSV form is byte for byte what LossStat 1.15.1 prints (header, ``%d,%d,%s,%s,%d,%d,%s,%s`` rows with
``yyyy-MM-dd HH:mm:ss.SSSZ`` local times, then ``N entries read``), so scripts can use either tool.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from datetime import tzinfo

from driver.concurrent.error_log import format_timestamp_ms
from driver.reports.loss_report import CorruptLossReportError, LossEntry, LossReportFile
from driver.util.files import describe_os_error
from driver.util.text import printable

CSV_HEADER = "#OBSERVATION_COUNT, TOTAL_BYTES_LOST, FIRST_OBSERVATION, LAST_OBSERVATION, SESSION_ID, STREAM_ID, CHANNEL, SOURCE"
TABLE_COLUMNS = ("OBSERVATIONS", "BYTES LOST", "FIRST OBSERVATION", "LAST OBSERVATION", "SESSION", "STREAM")


def csv_row(e: LossEntry, tz: tzinfo | None = None) -> str:
    """One ``%d,%d,%s,%s,%d,%d,%s,%s`` line; times in the local zone unless ``tz`` is given."""
    return (
        f"{e.observation_count},{e.total_bytes_lost},{format_timestamp_ms(e.first_observation_ms, tz)},"
        f"{format_timestamp_ms(e.last_observation_ms, tz)},{e.session_id},{e.stream_id},{printable(e.channel)},{printable(e.source)}"
    )


def csv_lines(entries: Iterable[LossEntry], tz: tzinfo | None = None) -> list[str]:
    """Everything LossStat prints to stdout, one string per line."""
    lines = [CSV_HEADER]
    lines.extend(csv_row(e, tz) for e in entries)
    lines.append(f"{len(lines) - 1} entries read")
    return lines


def table_lines(entries: Sequence[LossEntry], tz: tzinfo | None = None) -> list[str]:
    """An aligned table for people: counts with thousands separators, channel and source last."""
    rows = [
        (
            f"{e.observation_count:,d}",
            f"{e.total_bytes_lost:,d}",
            format_timestamp_ms(e.first_observation_ms, tz),
            format_timestamp_ms(e.last_observation_ms, tz),
            str(e.session_id),
            str(e.stream_id),
            printable(e.channel),
            printable(e.source),
        )
        for e in entries
    ]
    header = (*TABLE_COLUMNS, "CHANNEL", "SOURCE")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    numeric = {0, 1, 4, 5}

    def fmt(row: Sequence[str]) -> str:
        cells = [
            c.rjust(w) if i in numeric else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    total = sum(e.total_bytes_lost for e in entries)
    return [
        fmt(header),
        fmt(["-" * w for w in widths]),
        *(fmt(r) for r in rows),
        f"{len(rows)} entries read, {total:,d} bytes lost in total",
    ]


def run_loss_stat(location: str, output_format: str = "table") -> int:
    """Print the loss report at ``location`` (an aeron dir or the file); 0, or 1 if missing or corrupt."""
    path = LossReportFile.path_for(location)
    try:
        report = LossReportFile.map_existing(path)
    except FileNotFoundError:
        print(
            f"mediadriver: Loss report does not exist: {path} (no driver has used {location}? try --dir or AERON_DIR)",
            file=sys.stderr,
        )
        return 1
    except OSError as e:
        print(f"mediadriver: cannot read {path}: {describe_os_error(e)}", file=sys.stderr)
        return 1
    entries: list[LossEntry] = []
    problem = None
    with report:
        try:
            entries.extend(report.entries())
        except CorruptLossReportError as e:
            problem = e
    lines = csv_lines(entries) if output_format == "csv" else table_lines(entries)
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
    if problem is not None:
        print(f"mediadriver: {path}: {problem}; the entries before it are shown", file=sys.stderr)
        return 1
    return 0
