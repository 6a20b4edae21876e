"""The ``streams`` and ``exporter`` subcommands, the ``stat`` filter options and the live screens.

Registered by ``driver.cli.build_parser``; kept here so the CLI module stays a thin dispatcher.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
import time
from collections.abc import Callable

from driver.concurrent.cnc_file import CncError
from driver.concurrent.counter_types import read_counters
from driver.status.driver_snapshot import CncWatcher, DriverSnapshot, read_snapshot
from driver.views.stat_view import CounterFilter, render_table
from driver.views.streams import render_streams

DEFAULT_METRICS_PORT = 9300  # = driver.exporter.DEFAULT_PORT; --help must not need prometheus_client
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


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


def live_stat(aeron_dir: str, args: argparse.Namespace, counters: CounterFilter) -> int:
    return run_live(
        aeron_dir, args.interval, lambda snap, prev: render_table(snap, counters, prev, args.interval)
    )


def cmd_streams(args: argparse.Namespace, properties: dict[str, str]) -> int:
    from driver import cli
    from driver.concurrent.counters import CountersReader

    try:
        counters = counter_filter(args)
    except ValueError as e:
        return cli._fail(str(e), cli.EXIT_USAGE)
    aeron_dir = cli._aeron_dir(args, properties)
    try:
        cnc = cli._open_cnc(aeron_dir)
    except (CncError, OSError) as e:
        return cli._fail(str(e))
    with contextlib.closing(cnc):
        if args.once:
            reader = CountersReader(cnc.counters_metadata_buffer, cnc.counters_values_buffer)
            print(render_streams(cnc.path, counters.apply(read_counters(reader))), flush=True)
            return 0
    return run_live(
        aeron_dir,
        args.interval,
        lambda snap, _prev: (
            f"{time.strftime('%H:%M:%S')} - " + render_streams(snap.cnc_path, counters.apply(snap.counters))
        ),
    )


def cmd_exporter(args: argparse.Namespace, properties: dict[str, str]) -> int:
    from driver import cli
    from driver.exporter import MetricsServer

    aeron_dir = cli._aeron_dir(args, properties)
    try:
        server = MetricsServer(aeron_dir, args.port, args.host, args.stale_after)
    except OSError as e:
        return cli._fail(
            f"cannot listen on {args.host}:{args.port}: {e.strerror or e}; choose another --port"
        )
    stop = threading.Event()
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda _s, _f: stop.set())
    print(f"mediadriver: exporter serving {server.url} for {aeron_dir}; Ctrl-C stops it", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.close()
    print("mediadriver: exporter stopped", flush=True)
    return 0


def start_driver_metrics(aeron_dir: str, port: int, host: str, stale_after_s: float):
    """``run --metrics-port``: serve the driver's own cnc.dat (read-only mapping) from a server thread."""
    from driver.exporter import MetricsServer

    return MetricsServer(aeron_dir, port, host, stale_after_s, process_metrics=True)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    streams = sub.add_parser("streams", help="per-stream positions (pub-pos .. sub-pos), like StreamStat")
    streams.add_argument("--dir", help="aeron dir")
    streams.add_argument("--once", action="store_true", help="print once and exit (for scripts)")
    streams.add_argument("--interval", type=float, default=1.0, help="refresh interval in seconds")
    add_filter_options(streams, types=False)
    streams.set_defaults(handler=cmd_streams)

    exporter = sub.add_parser(
        "exporter", help="serve a driver's counters to Prometheus (maps cnc.dat read-only)"
    )
    exporter.add_argument("--dir", help="aeron dir")
    exporter.add_argument(
        "--port", type=int, default=DEFAULT_METRICS_PORT, help=f"default {DEFAULT_METRICS_PORT}; 0 picks one"
    )
    exporter.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    exporter.add_argument(
        "--stale-after",
        type=float,
        default=10.0,
        help="aeron_up turns 0 once the driver heartbeat is this many seconds old (default 10, aeron.driver.timeout)",
    )
    exporter.set_defaults(handler=cmd_exporter)
