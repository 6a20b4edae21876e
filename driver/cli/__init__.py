"""The ``mediadriver`` command: run the driver, and read any 1.15.1 cnc.dat (ours or the Java driver's).

Each command family registers its own parser in its own module (run, stat, terminate, loss, archive, service,
analyze_loss); they share only ``driver.cli.common``. This module assembles the parser and dispatches.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from driver import stop_signals
from driver.cli import analyze_loss, archive, loss, run, service, stat, terminate
from driver.cli.common import EXIT_USAGE, fail
from driver.context import ConfigurationError, parse_property_args
from driver.util.extras import MissingExtra, missing_extra


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mediadriver",
        description="An Aeron 1.15.1 compatible media driver on asyncio/uvloop. Any command also takes "
        "-Daeron.name=value properties; AERON_* environment variables are read too.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # The order is the one `mediadriver --help` lists.
    run.add_parser(sub)
    stat.add_parsers(sub)  # stat, streams, exporter, errors
    terminate.add_parser(sub)
    loss.add_parser(sub)
    archive.add_parser(sub)  # the server and its tools
    service.add_parsers(sub)  # serve, record, replay, datasets, page
    analyze_loss.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        properties, rest = parse_property_args(argv)
    except ConfigurationError as e:
        return fail(str(e), EXIT_USAGE)
    args = build_parser().parse_args(rest)
    if not _runs_until_stopped(args):
        stop_signals.release()  # held since start-up (driver.__main__): short commands get the usual handling
    command = args.command
    try:
        return args.handler(args, properties)
    except MissingExtra as e:
        return fail(str(e), EXIT_USAGE)
    except ImportError as e:  # a command that imports an extra's module without asking require() first
        missing = missing_extra(e, command)
        if missing is None:
            raise
        return fail(str(missing), EXIT_USAGE)


def _runs_until_stopped(args: argparse.Namespace) -> bool:
    return args.handler is run.cmd_run or (args.handler is archive.cmd_archive and args.archive_tool is None)


if __name__ == "__main__":
    sys.exit(main())
