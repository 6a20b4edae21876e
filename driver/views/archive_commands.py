"""The ``archive`` command's tools: ``list``, ``describe ID``, ``verify [ID]``, ``segments ID`` read an archive
dir; ``purge ID`` asks a running archive.

Registered by ``driver.cli.build_parser``. ``mediadriver archive`` without a tool runs the archive server
(``driver.cli.run_archive_server``), so the tool subcommand is optional. ``--dir`` is accepted before or after
the tool's name.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable

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
from driver.views.archive_replicate import add_replicate_parser

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_PROBLEMS = 3  # verify found something wrong (distinct from "could not read the directory")


def _fail(message: str) -> int:
    print(f"mediadriver archive: {message}", file=sys.stderr)
    return EXIT_FAILURE


def _with_catalog(args: argparse.Namespace, properties: dict[str, str], body: Callable[..., int]) -> int:
    archive_dir = resolve_archive_dir(getattr(args, "dir", None), properties)
    try:
        catalog = open_catalog(archive_dir)
    except ArchiveDirError as e:
        return _fail(str(e))
    with contextlib.closing(catalog):
        try:
            return body(archive_dir, catalog)
        except ArchiveDirError as e:
            return _fail(str(e))


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
    from driver.archive.client import AeronArchive, ArchiveClientContext, ArchiveError
    from driver.client.exceptions import AeronError

    try:
        context = ArchiveClientContext.from_sources({"aeron_dir": args.aeron_dir}, properties)
        with contextlib.closing(AeronArchive.connect(context=context)) as archive:
            files = archive.purge_recording(args.recording_id)
    except (ArchiveError, AeronError, OSError) as e:
        return _fail(f"purge of recording {args.recording_id}: {e}")
    print(f"recording {args.recording_id} purged: {files} file(s) being deleted by the archive", flush=True)
    return EXIT_OK


def _verify_checksums(archive_dir, d, v) -> None:
    """Each frame up to the stop (or, without one, where the frames end) against the checksum sidecar."""
    from driver.archive.checksums import checksum_path, verify_checksums

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
        "--aeron-dir", default=argparse.SUPPRESS, help="the driver's aeron dir (default AERON_DIR, -Daeron.dir)"
    )
    segs = tool("segments", "the segment files of one recording: positions, size, presence", cmd_segments)
    segs.add_argument("recording_id", type=int, metavar="ID")
    add_replicate_parser(tools)
