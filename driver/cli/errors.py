"""``mediadriver errors``: a running driver's distinct error log, read through its cnc.dat, as ErrorStat prints it."""

from __future__ import annotations

import argparse
import contextlib

from driver.cli.common import COMMAND_HELP, aeron_dir, fail, fail_os_error, open_cnc
from driver.concurrent.cnc_file import CncError
from driver.concurrent.error_log import format_error_log
from driver.util.text import printable


def cmd_errors(args: argparse.Namespace, properties: dict[str, str]) -> int:
    try:
        cnc = open_cnc(aeron_dir(args, properties))
    except CncError as e:
        return fail(str(e))
    except OSError as e:
        return fail_os_error(e)
    with contextlib.closing(cnc):
        # Line breaks and tabs are the stack traces' own layout; the driver escapes client text in messages
        # when it records them (docs/errorlog.md), any other control character is escaped here.
        print(printable(format_error_log(cnc.error_log_buffer), keep="\n\t"), flush=True)
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    errors = sub.add_parser("errors", help=COMMAND_HELP["errors"])
    errors.add_argument("--dir", help="aeron dir")
    errors.set_defaults(handler=cmd_errors)
