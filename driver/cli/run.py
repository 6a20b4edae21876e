"""``mediadriver run``: the media driver until a stop signal, with ``--archive`` the archive, with ``--http`` the
record & replay service and with ``--metrics-port`` a Prometheus exporter, all in this process."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from typing import Any

from driver import stop_signals
from driver.cli.common import COMMAND_HELP, EXIT_USAGE, fail, warn_unknown
from driver.cli.long_running import (
    archive_context,
    archive_subsystem,
    exporter_subsystem,
    run_loop,
    service_subsystem,
)
from driver.context import PROFILES, ConfigurationError, DriverContext
from driver.media_driver import DriverStartError, MediaDriver
from driver.service.options import add_http_options
from driver.util.extras import require


def cmd_run(args: argparse.Namespace, properties: dict[str, str]) -> int:
    explicit = {
        "aeron_dir": args.dir,
        "threading_mode": args.threading_mode,
        "client_liveness_timeout_ns": args.client_liveness_timeout,
        "dir_delete_on_start": True if args.delete_dir_on_start else None,
    }
    if args.profile is not None:
        # The profile's properties sit below -D ones: a property given explicitly still wins.
        properties = {**PROFILES[args.profile], **properties}
    try:
        ctx = DriverContext.from_sources(explicit, properties)
    except ConfigurationError as e:
        return fail(str(e), EXIT_USAGE)
    if ctx.threading_mode == "INVOKER":
        return fail(
            "threading mode INVOKER is for programs that embed the driver and call MediaDriver.invoker; "
            "`mediadriver run` needs SHARED, DEDICATED or SHARED_NETWORK",
            EXIT_USAGE,
        )
    warn_unknown(ctx.unknown_properties)
    # A signal may arrive before the loop runs (held since the process started): remember it until then.
    early_signals = stop_signals.hold()
    archive_ctx = None
    if args.http_port is not None and not args.archive:
        return fail(
            "--http needs --archive (the service records and replays through the archive)", EXIT_USAGE
        )
    if args.http_port is not None:
        require("service", "run --http")  # before the driver starts, so nothing is left half started
    if args.archive:
        archive_ctx, error = archive_context(args, properties, aeron_dir=ctx.aeron_dir)
        if error is not None:
            return error
    try:
        driver = MediaDriver.launch(ctx)
    except DriverStartError as e:
        return fail(str(e))
    archive = None
    if archive_ctx is not None:
        launcher = archive_subsystem()
        try:
            archive = launcher.connect_embedded(driver, archive_ctx)
        except launcher.ArchiveStartError as e:
            driver.close()
            return fail(str(e))
        print(f"mediadriver: archive in {archive_ctx.archive_dir}", flush=True)
    if driver.saved_error_log is not None:
        print(
            f"mediadriver: the previous driver's error log was saved to {driver.saved_error_log}",
            file=sys.stderr,
        )
    metrics = None
    if args.metrics_port is not None:
        try:
            # The driver's own cnc.dat (a read-only mapping), served from a server thread.
            metrics = exporter_subsystem().MetricsServer(
                ctx.aeron_dir,
                args.metrics_port,
                args.metrics_host,
                ctx.driver_timeout_ms / 1000,
                process_metrics=True,
            )
        except OSError as e:
            driver.close()
            return fail(f"cannot serve metrics on {args.metrics_host}:{args.metrics_port}: {e.strerror or e}")
        print(f"mediadriver: metrics on {metrics.url}", flush=True)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        http = None

        def request_stop() -> None:
            # The service goes first (it is a client of the driver), then the driver.
            if http is None or http.task is None or http.task.done():
                driver.request_stop()
                return
            http.stop()
            http.task.add_done_callback(lambda _t: driver.request_stop())

        for sig in stop_signals.STOP_SIGNALS:
            loop.add_signal_handler(sig, request_stop)
        print(
            f"mediadriver: running on {ctx.aeron_dir} (pid {os.getpid()}, CnC v15); Ctrl-C stops it",
            flush=True,
        )
        run = asyncio.ensure_future(driver.run())
        await asyncio.sleep(0)
        if early_signals:
            driver.request_stop()
        elif args.http_port is not None and archive_ctx is not None:
            http = await _start_service(args, ctx.aeron_dir, archive_ctx)
            if http is None:
                driver.request_stop()
        await run
        if http is not None and http.task is not None and not http.task.done():
            http.stop()
            await asyncio.wait_for(http.task, 10)

    try:
        run_loop(main)
    finally:
        # The loop's handlers went with it: a second signal must not cut the clean-up short.
        for sig in stop_signals.STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        if archive is not None:
            archive.close()
        if metrics is not None:
            metrics.close()  # before the driver unmaps and maybe deletes its dir
        driver.close()
    print("mediadriver: stopped", flush=True)
    return 0


async def _start_service(args: argparse.Namespace, aeron_dir: str, archive_ctx: Any):
    """The record & replay HTTP API on this loop (docs/service.md), or None after saying why it cannot start."""
    service = service_subsystem()
    try:
        http = await service.start_embedded(args, aeron_dir, archive_ctx)
    except Exception as e:
        print(f"mediadriver: cannot start the HTTP API: {e}", file=sys.stderr)
        return None
    service.announce(http)
    return http


def add_parsers(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help=COMMAND_HELP["run"])
    run.add_argument("--dir", help="aeron dir (default: AERON_DIR, -Daeron.dir or /dev/shm/aeron-$USER)")
    run.add_argument(
        "--threading-mode",
        help="SHARED (default: one runner over all agents), DEDICATED (one runner per agent), "
        "SHARED_NETWORK (conductor alone, sender and receiver together) or INVOKER (embedders only: "
        "no runner, the embedding program calls MediaDriver.invoker; `run` refuses it)",
    )
    run.add_argument("--client-liveness-timeout", help="e.g. 5s, 500ms (default 5s)")
    run.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        help="a set of settings: low-latency = parks of at most 100 us and SCHED_FIFO where permitted "
        "(docs/tuning.md); -D properties still override it",
    )
    run.add_argument(
        "--delete-dir-on-start", action="store_true", help="replace the dir even if a driver is live"
    )
    run.add_argument(
        "--metrics-port", type=int, help="serve Prometheus metrics on this port (0: any free port)"
    )
    run.add_argument(
        "--metrics-host", default="127.0.0.1", help="address for --metrics-port (default 127.0.0.1)"
    )
    settings = "\n".join(
        f"  {f.metadata['prop']:40s} {f.metadata['doc']} [{f.metadata['unit']}]"
        for f in DriverContext.settings()
    )
    run.add_argument("--archive", action="store_true", help="also run the archive (recording and replay)")
    run.add_argument("--archive-dir", help="archive dir (default -Daeron.archive.dir or ./aeron-archive)")
    add_http_options(run, port_flag="--http", default_port=None)
    run.epilog = "settings (-Dname=value or NAME_IN_CAPS env):\n" + settings
    run.formatter_class = argparse.RawDescriptionHelpFormatter
    run.set_defaults(handler=cmd_run)
