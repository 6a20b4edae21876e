"""The ``mediadriver`` command: run the driver, and read any 1.15.1 cnc.dat (ours or the Java driver's)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from driver import stop_signals
from driver.context import (
    PROFILES,
    ConfigurationError,
    DriverContext,
    default_aeron_dir,
    parse_property_args,
)
from driver.util.extras import MissingExtra, missing_extra, require

EXIT_USAGE = 2
EXIT_FAILURE = 1


def _aeron_dir(args: argparse.Namespace, properties: dict[str, str]) -> str:
    return args.dir or properties.get("aeron.dir") or os.environ.get("AERON_DIR") or default_aeron_dir()


def _fail(message: str, code: int = EXIT_FAILURE) -> int:
    print(f"mediadriver: {message}", file=sys.stderr)
    return code


# --- run -------------------------------------------------------------------------------------------


def _run_loop(coro_factory) -> None:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a declared dependency
        asyncio.run(coro_factory())
    else:
        uvloop.run(coro_factory())


def cmd_run(args: argparse.Namespace, properties: dict[str, str]) -> int:
    from driver.media_driver import DriverStartError, MediaDriver

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
        return _fail(str(e), EXIT_USAGE)
    if ctx.threading_mode == "INVOKER":
        return _fail(
            "threading mode INVOKER is for programs that embed the driver and call MediaDriver.invoker; "
            "`mediadriver run` needs SHARED, DEDICATED or SHARED_NETWORK",
            EXIT_USAGE,
        )
    for prop in ctx.unknown_properties:
        print(f"mediadriver: warning: unknown property {prop} ignored", file=sys.stderr)
    # A signal may arrive before the loop runs (held since the process started): remember it until then.
    early_signals = stop_signals.hold()
    archive_ctx = None
    if args.http_port is not None and not args.archive:
        return _fail(
            "--http needs --archive (the service records and replays through the archive)", EXIT_USAGE
        )
    if args.http_port is not None:
        require("service", "run --http")  # before the driver starts, so nothing is left half started
    if args.archive:
        archive_ctx, error = _archive_context(args, properties, aeron_dir=ctx.aeron_dir)
        if error is not None:
            return error
    try:
        driver = MediaDriver.launch(ctx)
    except DriverStartError as e:
        return _fail(str(e))
    archive = None
    if archive_ctx is not None:
        from driver.archive.archive import ArchiveStartError
        from driver.archive_launcher import connect_embedded

        try:
            archive = connect_embedded(driver, archive_ctx)
        except ArchiveStartError as e:
            driver.close()
            return _fail(str(e))
        print(f"mediadriver: archive in {archive_ctx.archive_dir}", flush=True)
    if driver.saved_error_log is not None:
        print(
            f"mediadriver: the previous driver's error log was saved to {driver.saved_error_log}",
            file=sys.stderr,
        )
    metrics = None
    if args.metrics_port is not None:
        from driver.views.commands import start_driver_metrics

        try:
            metrics = start_driver_metrics(
                ctx.aeron_dir, args.metrics_port, args.metrics_host, ctx.driver_timeout_ms / 1000
            )
        except OSError as e:
            driver.close()
            return _fail(
                f"cannot serve metrics on {args.metrics_host}:{args.metrics_port}: {e.strerror or e}"
            )
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
        _run_loop(main)
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


async def _start_service(args: argparse.Namespace, aeron_dir: str, archive_ctx):
    """The record & replay HTTP API on this loop (docs/service.md), or None after saying why it cannot start."""
    from driver.service.command import announce, archive_streams, control_settings, http_settings
    from driver.service.server import start_http

    try:
        http = await start_http(
            aeron_dir,
            archive_ctx.archive_dir,
            http_settings(args),
            reserved=archive_streams(archive_ctx),
            **control_settings(archive_ctx.local_control_channel, archive_ctx.local_control_stream_id),
        )
    except Exception as e:
        print(f"mediadriver: cannot start the HTTP API: {e}", file=sys.stderr)
        return None
    announce(http)
    return http


# --- stat / errors ---------------------------------------------------------------------------------


def _open_cnc(aeron_dir: str, timeout_s: float = 1.0):
    from driver.concurrent.cnc_file import CNC_FILE, CncError, CncFile, check_version

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


def render_stat(cnc, counter_filter=None) -> str:
    """One AeronStat screen: header, then ``%3d: %,20d - %s`` per allocated counter (passing the filter)."""
    from driver.concurrent.counter_types import decode_counter
    from driver.concurrent.counters import CountersReader
    from driver.util.text import printable

    reader = CountersReader(cnc.counters_metadata_buffer, cnc.counters_values_buffer)
    lines = [
        f"{time.strftime('%H:%M:%S')} - Aeron Stat (CnC v{cnc.version}), pid {cnc.pid}",
        "=" * 70,
    ]

    def add(counter_id: int, type_id: int, key: bytes, label: str) -> None:
        if counter_filter is None or counter_filter.matches(
            decode_counter(counter_id, type_id, key, label, 0)
        ):
            lines.append(f"{counter_id:3d}: {reader.get_counter_value(counter_id):20,d} - {printable(label)}")

    reader.for_each(add)
    return "\n".join(lines)


def cmd_stat(args: argparse.Namespace, properties: dict[str, str]) -> int:
    from driver.concurrent.cnc_file import CncError
    from driver.status.driver_snapshot import read_snapshot
    from driver.views.commands import counter_filter, live_stat
    from driver.views.stat_view import render_table

    try:
        counters = counter_filter(args)
    except ValueError as e:
        return _fail(str(e), EXIT_USAGE)
    aeron_dir = _aeron_dir(args, properties)
    try:
        cnc = _open_cnc(aeron_dir)
    except (CncError, OSError) as e:
        return _fail(str(e))
    with contextlib.closing(cnc):
        if args.once and args.table:
            print(render_table(read_snapshot(cnc, with_errors=False), counters), flush=True)
        elif args.once:
            print(render_stat(cnc, counters if counters.active else None), flush=True)
    return 0 if args.once else live_stat(aeron_dir, args, counters)


def cmd_errors(args: argparse.Namespace, properties: dict[str, str]) -> int:
    from driver.concurrent.cnc_file import CncError
    from driver.concurrent.error_log import format_error_log
    from driver.util.text import printable

    try:
        cnc = _open_cnc(_aeron_dir(args, properties))
    except (CncError, OSError) as e:
        return _fail(str(e))
    with contextlib.closing(cnc):
        # Line breaks and tabs are the stack traces' own layout; the driver escapes client text in messages
        # when it records them (docs/errorlog.md), any other control character is escaped here.
        print(printable(format_error_log(cnc.error_log_buffer), keep="\n\t"), flush=True)
    return 0


# --- terminate ---------------------------------------------------------------------------------------


def _driver_heartbeat_ms(aeron_dir: str) -> int:
    """The driver's to-driver consumer heartbeat (epoch ms); 0 once a clean stop withdrew it or no cnc.dat."""
    from driver.concurrent.cnc_file import CncError
    from driver.concurrent.ring_buffer import ManyToOneRingBuffer

    try:
        cnc = _open_cnc(aeron_dir)
    except (CncError, OSError):
        return 0
    with contextlib.closing(cnc):
        return ManyToOneRingBuffer(cnc.to_driver_buffer).consumer_heartbeat_time()


def cmd_terminate(args: argparse.Namespace, properties: dict[str, str]) -> int:
    from driver.client import Aeron, AeronError

    aeron_dir = _aeron_dir(args, properties)
    try:
        with Aeron.connect(aeron_dir=aeron_dir) as aeron:
            aeron.request_driver_termination(args.token.encode())
    except AeronError as e:
        return _fail(str(e))
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if _driver_heartbeat_ms(aeron_dir) == 0:
            print(f"mediadriver: the driver of {aeron_dir} stopped", flush=True)
            return 0
        time.sleep(0.05)
    return _fail(
        f"the driver of {aeron_dir} is still running after {args.timeout:g} s: its termination validator "
        "refused (it denies by default; start it with -Daeron.driver.termination.validator=allow)"
    )


# --- loss / analyze-loss --------------------------------------------------------------------------


def cmd_loss(args: argparse.Namespace, properties: dict[str, str]) -> int:
    from driver.reports.loss_stat import run_loss_stat

    return run_loss_stat(_aeron_dir(args, properties), args.format)


def cmd_analyze_loss(args: argparse.Namespace, properties: dict[str, str]) -> int:
    from driver.analysis.command import run

    return run(args)


# --- archive server --------------------------------------------------------------------------------


def _archive_context(args: argparse.Namespace, properties: dict[str, str], aeron_dir: str | None = None):
    """(ArchiveContext, None) or (None, exit code) after printing why the settings cannot be used."""
    from driver.archive.archive_context import ArchiveContext

    explicit = {
        "archive_dir": getattr(args, "archive_dir", None),
        "aeron_dir": aeron_dir,
        "threading_mode": getattr(args, "archive_threading_mode", None),
    }
    try:
        ctx = ArchiveContext.from_sources(explicit, properties)
    except ConfigurationError as e:  # a setting the archive cannot use (ArchiveConfigurationError too)
        return None, _fail(str(e), EXIT_USAGE)
    for prop in ctx.unknown_properties:
        print(f"mediadriver: warning: unknown property {prop} ignored", file=sys.stderr)
    return ctx, None


def cmd_archive_server(args: argparse.Namespace, properties: dict[str, str]) -> int:
    """``mediadriver archive [--dir A]``: the archive as a client of a running driver (ours or Java's)."""
    from driver.archive.archive import Archive, ArchiveStartError
    from driver.archive_launcher import run_standalone

    args.archive_dir = args.dir
    ctx, error = _archive_context(args, properties, aeron_dir=args.aeron_dir or properties.get("aeron.dir"))
    if error is not None:
        return error
    assert ctx is not None
    if ctx.threading_mode == "INVOKER":
        return _fail("archive threading mode INVOKER is for programs that embed the archive", EXIT_USAGE)
    early_signals = stop_signals.hold()
    try:
        archive = Archive(ctx, driver_timeout_s=args.driver_timeout)
    except ArchiveStartError as e:
        return _fail(str(e))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in stop_signals.STOP_SIGNALS:
            loop.add_signal_handler(sig, stop.set)
        if early_signals:
            stop.set()
        print(
            f"mediadriver: archive running in {ctx.archive_dir} on driver {archive.aeron.aeron_dir} "
            f"(pid {os.getpid()}); Ctrl-C stops it",
            flush=True,
        )
        await run_standalone(archive, stop)

    try:
        _run_loop(main)
    finally:
        for sig in stop_signals.STOP_SIGNALS:  # a second signal must not cut the clean-up short
            signal.signal(sig, signal.SIG_IGN)
        archive.close()
    print("mediadriver: archive stopped", flush=True)
    return 0


def add_archive_server_parser(sub) -> argparse.ArgumentParser:
    """``archive``: with no tool subcommand, runs the archive server."""
    from driver.archive.archive_context import ArchiveContext

    archive = sub.add_parser(
        "archive",
        help="run the archive as a client of a driver (no TOOL), or read an archive dir: list, describe ID, "
        "verify [ID], segments ID; purge ID asks a running archive",
    )
    archive.add_argument("--dir", help="archive dir (default -Daeron.archive.dir or ./aeron-archive)")
    archive.add_argument("--aeron-dir", help="the driver's aeron dir (default AERON_DIR, -Daeron.dir)")
    archive.add_argument(
        "--threading-mode", dest="archive_threading_mode", help="DEDICATED (default) or SHARED"
    )
    archive.add_argument(
        "--driver-timeout", type=float, default=10.0, help="seconds to wait for a running driver (default 10)"
    )
    archive.epilog = "settings (-Dname=value or NAME_IN_CAPS env):\n" + "\n".join(
        f"  {f.metadata['prop']:42s} {f.metadata['doc']} [{f.metadata['unit']}]"
        for f in ArchiveContext.settings()
    )
    archive.formatter_class = argparse.RawDescriptionHelpFormatter
    archive.set_defaults(handler=cmd_archive)
    return archive


def cmd_archive(args: argparse.Namespace, properties: dict[str, str]) -> int:
    """``mediadriver archive``: with a tool (list, describe, verify, segments) read an archive dir, else run
    the archive server."""
    if args.archive_tool is None:
        return cmd_archive_server(args, properties)
    return args.tool_handler(args, properties)


# --- parser ----------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mediadriver",
        description="An Aeron 1.15.1 compatible media driver on asyncio/uvloop. Any command also takes "
        "-Daeron.name=value properties; AERON_* environment variables are read too.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser(
        "run", help="run the media driver until SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 or SIGUSR2"
    )
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
        help="a set of settings: low-latency = every agent idles with the yield strategy (no parks; a core "
        "while running); -D properties still override it",
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
    from driver.service.command import add_http_options, add_serve_parser

    add_http_options(run, port_flag="--http", default_port=None)
    run.epilog = "settings (-Dname=value or NAME_IN_CAPS env):\n" + settings
    run.formatter_class = argparse.RawDescriptionHelpFormatter
    run.set_defaults(handler=cmd_run)

    stat = sub.add_parser("stat", help="print the counters of a driver, like AeronStat")
    stat.add_argument("--dir", help="aeron dir")
    stat.add_argument("--once", action="store_true", help="print one screen and exit (for scripts)")
    stat.add_argument("--interval", type=float, default=1.0, help="refresh interval in seconds")
    stat.add_argument("--table", action="store_true", help="with --once: print the live view's table instead")
    from driver.views.commands import add_filter_options, add_parsers

    add_filter_options(stat)
    stat.set_defaults(handler=cmd_stat)
    add_parsers(sub)  # streams, exporter

    errors = sub.add_parser("errors", help="print the driver's distinct error log, like ErrorStat")
    errors.add_argument("--dir", help="aeron dir")
    errors.set_defaults(handler=cmd_errors)

    terminate = sub.add_parser(
        "terminate", help="ask a running driver to stop (TERMINATE_DRIVER; the driver must allow it)"
    )
    terminate.add_argument("--dir", help="aeron dir")
    terminate.add_argument("--token", default="", help="token for the driver's termination validator")
    terminate.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the driver to stop")
    terminate.set_defaults(handler=cmd_terminate)

    loss = sub.add_parser("loss", help="print the driver's loss-report.dat, like LossStat")
    loss.add_argument("--dir", help="aeron dir (or the loss-report.dat file itself)")
    loss.add_argument(
        "--format",
        choices=("table", "csv"),
        default="table",
        help="table (default) or csv, exactly as LossStat",
    )
    loss.set_defaults(handler=cmd_loss)

    from driver.views.archive_commands import add_tool_parsers

    add_tool_parsers(add_archive_server_parser(sub))

    add_serve_parser(sub)
    from driver.views.service_client import add_parsers as add_service_client_parsers

    add_service_client_parsers(sub)  # record, replay, datasets

    from driver.analysis.command import add_parser as add_analyze_loss_parser

    add_analyze_loss_parser(sub).set_defaults(handler=cmd_analyze_loss)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        properties, rest = parse_property_args(argv)
    except ConfigurationError as e:
        return _fail(str(e), EXIT_USAGE)
    args = build_parser().parse_args(rest)
    if not _runs_until_stopped(args):
        stop_signals.release()  # held since start-up (driver.__main__): short commands get the usual handling
    command = args.command
    try:
        return args.handler(args, properties)
    except MissingExtra as e:
        return _fail(str(e), EXIT_USAGE)
    except ImportError as e:  # a command that imports an extra's module without asking require() first
        missing = missing_extra(e, command)
        if missing is None:
            raise
        return _fail(str(missing), EXIT_USAGE)


def _runs_until_stopped(args: argparse.Namespace) -> bool:
    return args.handler is cmd_run or (args.handler is cmd_archive and args.archive_tool is None)


if __name__ == "__main__":
    sys.exit(main())
