"""The ``mediadriver`` command: run the driver, and read any 1.15.1 cnc.dat (ours or the Java driver's).

Each command family registers its parsers in its own module, named in ``FAMILIES``; the families share only
``common.py`` (``run`` and ``archive`` also ``long_running.py``). This module assembles the parser and dispatches,
importing only the family of the command being run: between them the families import the driver, the archive, the
service and numpy, which a short command such as ``stat --once`` need not wait for.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from driver import stop_signals
from driver.cli.common import COMMAND_HELP, EXIT_USAGE, fail, fail_os_error
from driver.context import ConfigurationError, parse_property_args
from driver.util.extras import MissingExtra, missing_extra

FAMILIES: dict[str, str] = {
    "run": "run",
    "stat": "stat",
    "streams": "stat",
    "exporter": "exporter",
    "errors": "errors",
    "terminate": "terminate",
    "loss": "loss",
    "archive": "archive",  # the server and its tools
    "serve": "serve",
    "record": "service",
    "replay": "service",
    "datasets": "service",
    "page": "service",
    "analyze-loss": "analyze_loss",
}
"""Each command -> the module of this package whose ``add_parsers`` registers it, in the order `mediadriver --help`
lists them."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``command``'s family (one of ``FAMILIES``) or, without one, the command list only: each
    command's line (``COMMAND_HELP``) with no family imported, for `mediadriver --help` and usage errors."""
    parser = argparse.ArgumentParser(
        prog="mediadriver",
        description="An Aeron 1.15.1 compatible media driver on asyncio/uvloop. Any command also takes "
        "-Daeron.name=value properties; AERON_* environment variables are read too.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if command in FAMILIES:
        importlib.import_module(f"{__name__}.{FAMILIES[command]}").add_parsers(sub)
    else:
        for name, line in COMMAND_HELP.items():
            sub.add_parser(name, help=line, add_help=False)
    return parser


def command_of(argv: Sequence[str]) -> str | None:
    """The known command a command line (without its -D properties) runs, if its first argument names one; else
    None, and main() builds the command list: the top-level help and usage errors list every command."""
    return argv[0] if argv and argv[0] in FAMILIES else None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        properties, rest = parse_property_args(argv)
    except ConfigurationError as e:
        return fail(str(e), EXIT_USAGE)
    args = build_parser(command_of(rest)).parse_args(rest)
    if not _runs_until_stopped(args):
        stop_signals.release()  # held since start-up (driver.__main__): short commands get the usual handling
    command = args.command
    try:
        return args.handler(args, properties)
    except MissingExtra as e:
        return fail(str(e), EXIT_USAGE)
    except PermissionError as e:  # another user's files (the driver's, the archive's): the cause and the fix
        return fail_os_error(e)
    except ImportError as e:  # a command that imports an extra's module without asking require() first
        missing = missing_extra(e, command)
        if missing is None:
            raise
        return fail(str(missing), EXIT_USAGE)


def _runs_until_stopped(args: argparse.Namespace) -> bool:
    """The driver, and the archive server (the archive command without a tool)."""
    return args.command == "run" or (args.command == "archive" and args.archive_tool is None)


if __name__ == "__main__":
    sys.exit(main())
