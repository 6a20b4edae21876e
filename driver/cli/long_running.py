"""What the long-running commands (``run`` and the archive server) share: the archive's settings from options
and properties, and their event loop. Not in common.py: the archive's context and uvloop take tens of milliseconds
to import, which the short commands need not wait for."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Coroutine
from typing import Any

import uvloop

from driver.archive.archive_context import ArchiveContext
from driver.cli.common import EXIT_USAGE, fail, warn_unknown
from driver.context import ConfigurationError


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
