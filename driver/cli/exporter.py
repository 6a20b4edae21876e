"""``mediadriver exporter``: a running driver's counters served to Prometheus through a read-only mapping of its
cnc.dat (driver/exporter/). A family of its own: ``stat`` need not wait for prometheus_client to import."""

from __future__ import annotations

import argparse
import signal
import threading

from driver.cli.common import COMMAND_HELP, aeron_dir, fail
from driver.exporter import DEFAULT_PORT as DEFAULT_METRICS_PORT
from driver.exporter import MetricsServer

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def cmd_exporter(args: argparse.Namespace, properties: dict[str, str]) -> int:
    directory = aeron_dir(args, properties)
    try:
        server = MetricsServer(directory, args.port, args.host, args.stale_after)
    except OSError as e:
        return fail(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}; choose another --port")
    stop = threading.Event()
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda _s, _f: stop.set())
    print(f"mediadriver: exporter serving {server.url} for {directory}; Ctrl-C stops it", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.close()
    print("mediadriver: exporter stopped", flush=True)
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    exporter = sub.add_parser("exporter", help=COMMAND_HELP["exporter"])
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
