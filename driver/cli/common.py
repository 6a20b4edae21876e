"""What every ``mediadriver`` command shares: exit codes, the one-line failure, the aeron dir a command reads, a
mapped cnc.dat. Light on purpose: every command imports it (the long-running ones' parts are in long_running.py)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from driver.concurrent.cnc_file import CNC_FILE, CncError, CncFile, check_version
from driver.context import default_aeron_dir
from driver.util.files import describe_os_error, permission_denied

PROG = "mediadriver"

COMMAND_HELP: dict[str, str] = {
    "run": "run the media driver until SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 or SIGUSR2",
    "stat": "print the counters of a driver, like AeronStat",
    "streams": "per-stream positions (pub-pos .. sub-pos), like StreamStat",
    "exporter": "serve a driver's counters to Prometheus (maps cnc.dat read-only)",
    "errors": "print the driver's distinct error log, like ErrorStat",
    "terminate": "ask a running driver to stop (TERMINATE_DRIVER; the driver must allow it)",
    "loss": "print the driver's loss-report.dat, like LossStat",
    "archive": "run the archive as a client of a driver (no TOOL), or read an archive dir: list, describe ID, "
    "verify [ID], segments ID; purge ID asks a running archive",
    "serve": "run the record & replay HTTP API as a client of a running driver and archive on this host",
    "record": "record streams into a data set through the record & replay service",
    "replay": "replay a data set through the record & replay service",
    "datasets": "list, show, delete, export and import the service's data sets",
    "page": "print the record & replay page's address, with the token for the service's owner",
    "analyze-loss": "analyse many drivers' loss-report.dat with Spark: Parquet plus a report with charts",
}
"""Each command's line in `mediadriver --help`, in its order: the top-level help lists these without importing
any command family (driver/cli/__init__.py); each family's parser takes its line from here."""
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


def fail(message: str, code: int = EXIT_FAILURE, prog: str = PROG) -> int:
    """Print ``prog: message`` on stderr and return ``code`` (the command's exit code)."""
    print(f"{prog}: {message}", file=sys.stderr)
    return code


def fail_os_error(error: OSError, code: int = EXIT_FAILURE, prog: str = PROG) -> int:
    """``fail`` with an OSError as a user reads it: the file and the cause (a refusal names the fix)."""
    return fail(describe_os_error(error), code, prog)


def warn_unknown(properties: list[str]) -> None:
    for prop in properties:
        print(f"{PROG}: warning: unknown property {prop} ignored", file=sys.stderr)


def aeron_dir(args: argparse.Namespace, properties: dict[str, str]) -> str:
    """--dir, else -Daeron.dir, else AERON_DIR, else the default."""
    return args.dir or properties.get("aeron.dir") or os.environ.get("AERON_DIR") or default_aeron_dir()


def open_cnc(aeron_dir: str, timeout_s: float = 1.0) -> CncFile:
    """The driver's cnc.dat mapped read-only, once its version is set (a driver starting now sets it soon)."""
    path = Path(aeron_dir) / CNC_FILE
    try:
        if not path.exists():
            raise CncError(f"{path} does not exist: no driver has used {aeron_dir} (try --dir or AERON_DIR)")
        cnc = CncFile.map_existing(path, writable=False)
    except PermissionError as e:
        raise CncError(permission_denied(path)) from e
    deadline = time.monotonic() + timeout_s
    while cnc.version == 0 and time.monotonic() < deadline:
        time.sleep(0.001)
    try:
        check_version(cnc)
    except CncError:
        cnc.close()
        raise
    return cnc
