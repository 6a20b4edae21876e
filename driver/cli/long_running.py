"""What the long-running commands (``run`` and the archive server) share: their event loop, and the named lazy
points of the optional subsystems they run only when asked. Not in common.py: uvloop takes tens of milliseconds to
import, which the short commands need not wait for.

The lazy points are the command line's only imports inside functions besides an optional extra's (tests/
test_imports.py lists them): ``run`` without ``--archive`` must not pay for the archive (its conductor, catalog
and numpy for checksums: ~170 ms and ~8 MB at start-up), nor ``run`` without ``--metrics-port`` for the exporter
(prometheus_client), nor ``run`` without ``--http`` for the service.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Coroutine
from types import ModuleType
from typing import Any

import uvloop

from driver.cli.common import EXIT_USAGE, fail, warn_unknown
from driver.context import ConfigurationError


def archive_subsystem() -> ModuleType:
    """Lazy point of the archive: driver.archive_launcher (``connect_embedded``, ``ArchiveContext``,
    ``ArchiveStartError``)."""
    import driver.archive_launcher

    return driver.archive_launcher


def exporter_subsystem() -> ModuleType:
    """Lazy point of the Prometheus exporter: driver.exporter (``MetricsServer``)."""
    import driver.exporter

    return driver.exporter


def service_subsystem() -> ModuleType:
    """Lazy point of the record & replay service's start-up: driver.service.command (its settings; the server
    itself needs the service extra, which the command asks for first)."""
    import driver.service.command

    return driver.service.command


def archive_context(
    args: argparse.Namespace, properties: dict[str, str], aeron_dir: str | None = None
) -> tuple[Any, int | None]:
    """(ArchiveContext, None) or (None, exit code) after printing why the settings cannot be used."""
    explicit = {
        "archive_dir": getattr(args, "archive_dir", None),
        "aeron_dir": aeron_dir,
        "threading_mode": getattr(args, "archive_threading_mode", None),
    }
    try:
        ctx = archive_subsystem().ArchiveContext.from_sources(explicit, properties)
    except ConfigurationError as e:  # a setting the archive cannot use (ArchiveConfigurationError too)
        return None, fail(str(e), EXIT_USAGE)
    warn_unknown(ctx.unknown_properties)
    return ctx, None


def run_loop(coro_factory: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run a long-running command's coroutine on uvloop."""
    uvloop.run(coro_factory())
