"""What every ``mediadriver`` command shares: exit codes, the one-line failure, the aeron dir a command reads, a
mapped cnc.dat, the archive's settings and the event loop of the long-running commands."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import uvloop

from driver.archive.archive_context import ArchiveContext
from driver.concurrent.cnc_file import CNC_FILE, CncError, CncFile, check_version
from driver.context import ConfigurationError, default_aeron_dir

PROG = "mediadriver"
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


def fail(message: str, code: int = EXIT_FAILURE, prog: str = PROG) -> int:
    """Print ``prog: message`` on stderr and return ``code`` (the command's exit code)."""
    print(f"{prog}: {message}", file=sys.stderr)
    return code


def warn_unknown(properties: list[str]) -> None:
    for prop in properties:
        print(f"{PROG}: warning: unknown property {prop} ignored", file=sys.stderr)


def aeron_dir(args: argparse.Namespace, properties: dict[str, str]) -> str:
    """--dir, else -Daeron.dir, else AERON_DIR, else the default."""
    return args.dir or properties.get("aeron.dir") or os.environ.get("AERON_DIR") or default_aeron_dir()


def open_cnc(aeron_dir: str, timeout_s: float = 1.0) -> CncFile:
    """The driver's cnc.dat mapped read-only, once its version is set (a driver starting now sets it soon)."""
    path = Path(aeron_dir) / CNC_FILE
    if not path.exists():
        raise CncError(f"{path} does not exist: no driver has used {aeron_dir} (try --dir or AERON_DIR)")
    cnc = CncFile.map_existing(path, writable=False)
    deadline = time.monotonic() + timeout_s
    while cnc.version == 0 and time.monotonic() < deadline:
        time.sleep(0.001)
    try:
        check_version(cnc)
    except CncError:
        cnc.close()
        raise
    return cnc


def archive_context(
    args: argparse.Namespace, properties: dict[str, str], aeron_dir: str | None = None
) -> tuple[ArchiveContext | None, int | None]:
    """(ArchiveContext, None) or (None, exit code) after printing why the settings cannot be used."""
    explicit = {
        "archive_dir": getattr(args, "archive_dir", None),
        "aeron_dir": aeron_dir,
        "threading_mode": getattr(args, "archive_threading_mode", None),
    }
    try:
        ctx = ArchiveContext.from_sources(explicit, properties)
    except ConfigurationError as e:  # a setting the archive cannot use (ArchiveConfigurationError too)
        return None, fail(str(e), EXIT_USAGE)
    warn_unknown(ctx.unknown_properties)
    return ctx, None


def run_loop(coro_factory: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run a long-running command's coroutine on uvloop."""
    uvloop.run(coro_factory())
