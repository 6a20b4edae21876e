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
