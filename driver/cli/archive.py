"""``mediadriver archive``: without a tool, the archive server as a client of a running driver (ours or Java's);
with one, ``list``, ``describe ID``, ``verify [ID]``, ``segments ID`` read an archive dir, ``purge ID`` asks a
running archive and ``replicate`` (archive_replicate.py) has it copy another archive's recording. The tool
subcommand is optional; ``--dir`` is accepted before or after the tool's name.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
from collections.abc import Callable

from driver import stop_signals
from driver.archive.archive import Archive, ArchiveStartError
from driver.archive.archive_context import ArchiveContext
from driver.archive.checksums import checksum_path, verify_checksums
from driver.archive.client import AeronArchive, ArchiveClientContext, ArchiveError
from driver.archive_launcher import run_standalone
from driver.cli.archive_export import add_parser as add_export_parser
from driver.cli.archive_replicate import add_replicate_parser
from driver.cli.common import COMMAND_HELP, EXIT_OK, EXIT_USAGE, fail
from driver.cli.long_running import archive_context, run_loop
from driver.client.exceptions import AeronError
from driver.util.files import describe_os_error
from driver.views.archive_catalog import (
    DEFAULT_ARCHIVE_DIR,
    FORMATS,
    ArchiveDirError,
    open_catalog,
    read_entry,
    read_rows,
    render_describe,
    render_list,
    render_segments,
    render_verification,
    resolve_archive_dir,
    verify_entry,
)

EXIT_PROBLEMS = 3  # verify found something wrong (distinct from "could not read the directory")
PROG = "mediadriver archive"


# --- the archive server ------------------------------------------------------------------------------


def cmd_archive_server(args: argparse.Namespace, properties: dict[str, str]) -> int:
    """``mediadriver archive [--dir A]``: the archive as a client of a running driver (ours or Java's)."""
    args.archive_dir = args.dir
    ctx, error = archive_context(args, properties, aeron_dir=args.aeron_dir or properties.get("aeron.dir"))
    if error is not None:
        return error
    assert ctx is not None
    if ctx.threading_mode == "INVOKER":
        return fail("archive threading mode INVOKER is for programs that embed the archive", EXIT_USAGE)
    early_signals = stop_signals.hold()
    try:
        archive = Archive(ctx, driver_timeout_s=args.driver_timeout)
    except ArchiveStartError as e:
        return fail(str(e))

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
        run_loop(main)
    finally:
        for sig in stop_signals.STOP_SIGNALS:  # a second signal must not cut the clean-up short
            signal.signal(sig, signal.SIG_IGN)
        archive.close()
    print("mediadriver: archive stopped", flush=True)
    return 0


def cmd_archive(args: argparse.Namespace, properties: dict[str, str]) -> int:
    """``mediadriver archive``: with a tool (list, describe, verify, segments) read an archive dir, else run
    the archive server."""
    if args.archive_tool is None:
        return cmd_archive_server(args, properties)
    return args.tool_handler(args, properties)


# --- the tools ---------------------------------------------------------------------------------------


def _with_catalog(args: argparse.Namespace, properties: dict[str, str], body: Callable[..., int]) -> int:
    archive_dir = resolve_archive_dir(getattr(args, "dir", None), properties)
    try:
        catalog = open_catalog(archive_dir)
    except ArchiveDirError as e:
        return fail(str(e), prog=PROG)
    with contextlib.closing(catalog):
        try:
            return body(archive_dir, catalog)
        except ArchiveDirError as e:
            return fail(str(e), prog=PROG)


def cmd_list(args: argparse.Namespace, properties: dict[str, str]) -> int:
    def body(archive_dir, catalog) -> int:
        print(render_list(archive_dir, catalog, args.format), flush=True)
        return EXIT_OK

    return _with_catalog(args, properties, body)


def cmd_describe(args: argparse.Namespace, properties: dict[str, str]) -> int:
    def body(archive_dir, catalog) -> int:
        print(render_describe(archive_dir, read_entry(catalog, args.recording_id)), flush=True)
        return EXIT_OK

    return _with_catalog(args, properties, body)


def cmd_segments(args: argparse.Namespace, properties: dict[str, str]) -> int:
    def body(archive_dir, catalog) -> int:
        entry = read_entry(catalog, args.recording_id)
        print("\n".join(render_segments(archive_dir, entry.descriptor)), flush=True)
        return EXIT_OK

    return _with_catalog(args, properties, body)


def cmd_verify(args: argparse.Namespace, properties: dict[str, str]) -> int:
    def body(archive_dir, catalog) -> int:
        if args.recording_id is not None:
            rows = [(args.recording_id, read_entry(catalog, args.recording_id), None)]
        else:
            rows = [(row.recording_id, row.entry, row.error) for row in read_rows(catalog)]
        lines: list[str] = []
        failed = 0
        for recording_id, entry, error in rows:
            if entry is None:
                failed += 1
                lines += [f"recording {recording_id}: 1 problem(s)", f"  - corrupt catalog entry: {error}"]
                continue
            v = verify_entry(archive_dir, entry)
            if args.checksums and entry.valid:
                _verify_checksums(archive_dir, entry.descriptor, v)
            failed += not v.ok
            lines += render_verification(v)
        lines.append(
            f"{len(rows)} recording(s) checked, {failed} with problems (read-only: nothing was changed)"
        )
        print("\n".join(lines), flush=True)
        return EXIT_PROBLEMS if failed else EXIT_OK

    return _with_catalog(args, properties, body)


def cmd_purge(args: argparse.Namespace, properties: dict[str, str]) -> int:
    """Asks the running archive (its control channel from -Daeron.archive.control.channel, ...) to purge."""
    try:
        context = ArchiveClientContext.from_sources({"aeron_dir": args.aeron_dir}, properties)
        with contextlib.closing(AeronArchive.connect(context=context)) as archive:
            files = archive.purge_recording(args.recording_id)
    except OSError as e:
        return fail(f"purge of recording {args.recording_id}: {describe_os_error(e)}", prog=PROG)
    except (ArchiveError, AeronError) as e:
        return fail(f"purge of recording {args.recording_id}: {e}", prog=PROG)
    print(f"recording {args.recording_id} purged: {files} file(s) being deleted by the archive", flush=True)
    return EXIT_OK


def _verify_checksums(archive_dir, d, v) -> None:
    """Each frame up to the stop (or, without one, where the frames end) against the checksum sidecar."""
    stop = d.stop_position if d.stop_position != -1 else v.data_end
    if stop is None:
        return
    if not checksum_path(archive_dir, d.recording_id).exists():
        v.notes.append("recorded without checksums: not checked against any")
        return
    try:
        problem = verify_checksums(archive_dir, d, stop)
    except (OSError, ValueError) as e:
        problem = f"cannot be read: {e}"
    if problem is not None:
        v.problems.append(f"checksums: {problem}")
    else:
        v.notes.append(f"checksums hold up to {stop}")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """``archive``: with no tool subcommand, runs the archive server."""
    archive = sub.add_parser(
        "archive",
        help=COMMAND_HELP["archive"],
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
    add_tool_parsers(archive)


def add_tool_parsers(archive: argparse.ArgumentParser) -> None:
    """The tools as optional subcommands of ``archive`` (``args.archive_tool`` is None when none is given)."""
    tools = archive.add_subparsers(dest="archive_tool", required=False, metavar="TOOL")

    def tool(name: str, help_text: str, handler) -> argparse.ArgumentParser:
        parser = tools.add_parser(name, help=help_text)
        # SUPPRESS: a --dir given before the tool's name is not reset by the tool's default.
        parser.add_argument(
            "--dir",
            default=argparse.SUPPRESS,
            help=f"archive dir (default: -Daeron.archive.dir or {DEFAULT_ARCHIVE_DIR})",
        )
        parser.set_defaults(tool_handler=handler)
        return parser

    listing = tool("list", "a table of the catalog's recordings (like CatalogTool describe)", cmd_list)
    listing.add_argument("--format", choices=FORMATS, default="table", help="table (default), csv or json")
    describe = tool("describe", "every descriptor field of one recording and its segment files", cmd_describe)
    describe.add_argument("recording_id", type=int, metavar="ID")
    verify = tool(
        "verify",
        "check recordings against their segment files (read-only); exit code 3 when a problem is found",
        cmd_verify,
    )
    verify.add_argument(
        "recording_id", type=int, nargs="?", metavar="ID", help="one recording (default: all)"
    )
    verify.add_argument(
        "--checksums",
        action="store_true",
        help="also check every frame against the CRC32C the recorder wrote into <id>.crc",
    )
    purge = tool(
        "purge",
        "ask the running archive to remove a stopped recording: its catalog entry is marked invalid (1.15.1 "
        "skips it) and its segment and sidecar files are deleted",
        cmd_purge,
    )
    purge.add_argument("recording_id", type=int, metavar="ID")
    purge.add_argument(
        "--aeron-dir",
        default=argparse.SUPPRESS,
        help="the driver's aeron dir (default AERON_DIR, -Daeron.dir)",
    )
    segs = tool("segments", "the segment files of one recording: positions, size, presence", cmd_segments)
    segs.add_argument("recording_id", type=int, metavar="ID")
    add_replicate_parser(tools)
    add_export_parser(tools)
