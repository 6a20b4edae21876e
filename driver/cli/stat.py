"""``mediadriver stat`` and ``streams``: a running driver's counters read through its cnc.dat (ours or the Java
driver's), once or as a live screen."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable

from driver.cli.common import COMMAND_HELP, EXIT_USAGE, aeron_dir, fail, fail_os_error, open_cnc
from driver.concurrent.cnc_file import CncError, CncFile
from driver.concurrent.counter_types import decode_counter, read_counters
from driver.concurrent.counters import CountersReader
from driver.status.driver_snapshot import CncWatcher, DriverSnapshot, read_snapshot
from driver.util.text import printable
from driver.views.stat_view import CounterFilter, render_table
from driver.views.streams import render_streams


def add_filter_options(parser: argparse.ArgumentParser, types: bool = True) -> None:
    many = "repeatable, or a comma list"
    if types:
        parser.add_argument(
            "--type", action="append", help=f"counter type name (rcv-pos, pub-lmt, system, ...) or id; {many}"
        )
    parser.add_argument("--stream", action="append", help=f"stream id; {many}")
    parser.add_argument("--channel", action="append", help=f"substring of the channel URI; {many}")


def counter_filter(args: argparse.Namespace) -> CounterFilter:
    """Raises ValueError naming the bad option value."""
    return CounterFilter.from_options(getattr(args, "type", None), args.stream, args.channel)


def run_live(
    aeron_dir: str, interval_s: float, render: Callable[[DriverSnapshot, DriverSnapshot | None], str]
) -> int:
    """Clear the screen and print ``render(snapshot, previous)`` every interval until Ctrl-C.

    Follows the driver across restarts (and waits for one while cnc.dat is missing).
    """
    previous = None
    with CncWatcher(aeron_dir) as watcher, contextlib.suppress(KeyboardInterrupt):
        while True:
            cnc = watcher.current()
            snapshot = None
            if cnc is not None:
                try:
                    snapshot = read_snapshot(cnc, with_errors=False)
                except (CncError, ValueError) as e:  # a malformed file: say so, and map it again next time
                    watcher.close()
                    watcher.problem = str(e)
            text = (
                render(snapshot, previous)
                if snapshot is not None
                else f"waiting for a driver: {watcher.problem}"
            )
            sys.stdout.write("\033[H\033[2J" + text + "\n")
            sys.stdout.flush()
            previous = snapshot
            time.sleep(interval_s)
    return 0


# --- stat ----------------------------------------------------------------------------------------------


def render_stat(cnc: CncFile, counter_filter: CounterFilter | None = None) -> str:
    """One AeronStat screen: header, then ``%3d: %,20d - %s`` per allocated counter (passing the filter)."""
    reader = CountersReader(cnc.counters_metadata_buffer, cnc.counters_values_buffer)
    lines = [
        f"{time.strftime('%H:%M:%S')} - Aeron Stat (CnC v{cnc.version}), pid {cnc.pid}",
        "=" * 70,
    ]

    def add(counter_id: int, type_id: int, key: bytes, label: str) -> None:
        if counter_filter is None or counter_filter.matches(
            decode_counter(counter_id, type_id, key, label, 0)
        ):
            lines.append(f"{counter_id:3d}: {reader.get_counter_value(counter_id):20,d} - {printable(label)}")

    reader.for_each(add)
    return "\n".join(lines)


def _filtered_cnc(
    args: argparse.Namespace, properties: dict[str, str]
) -> tuple[CounterFilter, str, CncFile] | int:
    """The command's counter filter, aeron dir and open cnc.dat; or the exit code of a usage or open failure."""
    try:
        counters = counter_filter(args)
    except ValueError as e:
        return fail(str(e), EXIT_USAGE)
    directory = aeron_dir(args, properties)
    try:
        return counters, directory, open_cnc(directory)
    except CncError as e:
        return fail(str(e))
    except OSError as e:
        return fail_os_error(e)


def cmd_stat(args: argparse.Namespace, properties: dict[str, str]) -> int:
    opened = _filtered_cnc(args, properties)
    if isinstance(opened, int):
        return opened
    counters, directory, cnc = opened
    with contextlib.closing(cnc):
        if args.once and args.table:
            print(render_table(read_snapshot(cnc, with_errors=False), counters), flush=True)
        elif args.once:
            print(render_stat(cnc, counters if counters.active else None), flush=True)
    if args.once:
        return 0
    return run_live(
        directory, args.interval, lambda snap, prev: render_table(snap, counters, prev, args.interval)
    )


# --- streams ----------------------------------------------------------------------------------------


def cmd_streams(args: argparse.Namespace, properties: dict[str, str]) -> int:
    opened = _filtered_cnc(args, properties)
    if isinstance(opened, int):
        return opened
    counters, directory, cnc = opened
    with contextlib.closing(cnc):
        if args.once:
            reader = CountersReader(cnc.counters_metadata_buffer, cnc.counters_values_buffer)
            print(render_streams(cnc.path, counters.apply(read_counters(reader))), flush=True)
            return 0
    return run_live(
        directory,
        args.interval,
        lambda snap, _prev: (
            f"{time.strftime('%H:%M:%S')} - " + render_streams(snap.cnc_path, counters.apply(snap.counters))
        ),
    )


# --- parsers -------------------------------------------------------------------------------------------


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """stat, then streams."""
    stat = sub.add_parser("stat", help=COMMAND_HELP["stat"])
    stat.add_argument("--dir", help="aeron dir")
    stat.add_argument("--once", action="store_true", help="print one screen and exit (for scripts)")
    stat.add_argument("--interval", type=float, default=1.0, help="refresh interval in seconds")
    stat.add_argument("--table", action="store_true", help="with --once: print the live view's table instead")
    add_filter_options(stat)
    stat.set_defaults(handler=cmd_stat)

    streams = sub.add_parser("streams", help=COMMAND_HELP["streams"])
    streams.add_argument("--dir", help="aeron dir")
    streams.add_argument("--once", action="store_true", help="print once and exit (for scripts)")
    streams.add_argument("--interval", type=float, default=1.0, help="refresh interval in seconds")
    add_filter_options(streams, types=False)
    streams.set_defaults(handler=cmd_streams)
