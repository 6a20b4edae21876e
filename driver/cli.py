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

from driver.context import ConfigurationError, DriverContext, default_aeron_dir, parse_property_args

EXIT_USAGE = 2
EXIT_FAILURE = 1
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


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
    try:
        ctx = DriverContext.from_sources(explicit, properties)
    except ConfigurationError as e:
        return _fail(str(e), EXIT_USAGE)
    for prop in ctx.unknown_properties:
        print(f"mediadriver: warning: unknown property {prop} ignored", file=sys.stderr)
    # A signal may arrive as soon as cnc.dat is ready, before the loop runs: remember it until then.
    early_signals: list[int] = []
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda s, _f: early_signals.append(s))  # replaced by the loop's handlers below
    try:
        driver = MediaDriver.launch(ctx)
    except DriverStartError as e:
        return _fail(str(e))
    if driver.saved_error_log is not None:
        print(
            f"mediadriver: the previous driver's error log was saved to {driver.saved_error_log}",
            file=sys.stderr,
        )

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in STOP_SIGNALS:
            loop.add_signal_handler(sig, driver.request_stop)
        print(
            f"mediadriver: running on {ctx.aeron_dir} (pid {os.getpid()}, CnC v15); Ctrl-C stops it",
            flush=True,
        )
        run = asyncio.ensure_future(driver.run())
        await asyncio.sleep(0)
        if early_signals:
            driver.request_stop()
        await run

    try:
        _run_loop(main)
    finally:
        driver.close()
    print("mediadriver: stopped", flush=True)
    return 0


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


def render_stat(cnc) -> str:
    """One AeronStat screen: header, then ``%3d: %,20d - %s`` per allocated counter."""
    from driver.concurrent.counters import CountersReader

    reader = CountersReader(cnc.counters_metadata_buffer, cnc.counters_values_buffer)
    lines = [
        f"{time.strftime('%H:%M:%S')} - Aeron Stat (CnC v{cnc.version}), pid {cnc.pid}",
        "=" * 70,
    ]
    reader.for_each(
        lambda counter_id, _type_id, _key, label: lines.append(
            f"{counter_id:3d}: {reader.get_counter_value(counter_id):20,d} - {label}"
        )
    )
    return "\n".join(lines)


def cmd_stat(args: argparse.Namespace, properties: dict[str, str]) -> int:
    from driver.concurrent.cnc_file import CncError

    try:
        cnc = _open_cnc(_aeron_dir(args, properties))
    except (CncError, OSError) as e:
        return _fail(str(e))
    try:
        if args.once:
            print(render_stat(cnc), flush=True)
            return 0
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                sys.stdout.write("\033[H\033[2J" + render_stat(cnc) + "\n--\n")
                sys.stdout.flush()
                time.sleep(args.interval)
        return 0
    finally:
        cnc.close()


def cmd_errors(args: argparse.Namespace, properties: dict[str, str]) -> int:
    from driver.concurrent.cnc_file import CncError
    from driver.concurrent.error_log import format_error_log

    try:
        cnc = _open_cnc(_aeron_dir(args, properties))
    except (CncError, OSError) as e:
        return _fail(str(e))
    with contextlib.closing(cnc):
        print(format_error_log(cnc.error_log_buffer), flush=True)
    return 0


# --- parser ----------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mediadriver",
        description="An Aeron 1.15.1 compatible media driver on asyncio/uvloop. Any command also takes "
        "-Daeron.name=value properties; AERON_* environment variables are read too.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run the media driver until SIGINT/SIGTERM")
    run.add_argument("--dir", help="aeron dir (default: AERON_DIR, -Daeron.dir or /dev/shm/aeron-$USER)")
    run.add_argument("--threading-mode", help="DEDICATED (default), SHARED or INVOKER")
    run.add_argument("--client-liveness-timeout", help="e.g. 5s, 500ms (default 5s)")
    run.add_argument(
        "--delete-dir-on-start", action="store_true", help="replace the dir even if a driver is live"
    )
    settings = "\n".join(
        f"  {f.metadata['prop']:40s} {f.metadata['doc']} [{f.metadata['unit']}]"
        for f in DriverContext.settings()
    )
    run.epilog = "settings (-Dname=value or NAME_IN_CAPS env):\n" + settings
    run.formatter_class = argparse.RawDescriptionHelpFormatter
    run.set_defaults(handler=cmd_run)

    stat = sub.add_parser("stat", help="print the counters of a driver, like AeronStat")
    stat.add_argument("--dir", help="aeron dir")
    stat.add_argument("--once", action="store_true", help="print one screen and exit (for scripts)")
    stat.add_argument("--interval", type=float, default=1.0, help="refresh interval in seconds")
    stat.set_defaults(handler=cmd_stat)

    errors = sub.add_parser("errors", help="print the driver's distinct error log, like ErrorStat")
    errors.add_argument("--dir", help="aeron dir")
    errors.set_defaults(handler=cmd_errors)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        properties, rest = parse_property_args(argv)
    except ConfigurationError as e:
        return _fail(str(e), EXIT_USAGE)
    args = build_parser().parse_args(rest)
    return args.handler(args, properties)


if __name__ == "__main__":
    sys.exit(main())
