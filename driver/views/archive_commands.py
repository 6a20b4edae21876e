"""The ``archive`` command's tools: ``list``, ``describe ID``, ``verify [ID]``, ``segments ID``, and
``replicate --from CONTROL_CHANNEL SRC_ID``, which asks a running archive to copy another archive's recording.

Registered by ``driver.cli.build_parser``. ``mediadriver archive`` without a tool runs the archive server
(``driver.cli.run_archive_server``), so the tool subcommand is optional. ``--dir`` is accepted before or after
the tool's name.
"""

from __future__ import annotations

import argparse
import contextlib
import struct
import sys
import time
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
            failed += not v.ok
            lines += render_verification(v)
        lines.append(
            f"{len(rows)} recording(s) checked, {failed} with problems (read-only: nothing was changed)"
        )
        print("\n".join(lines), flush=True)
        return EXIT_PROBLEMS if failed else EXIT_OK

    return _with_catalog(args, properties, body)


def _replication_position(aeron, replication_id: int) -> int | None:
    """The value of the replication's counter in the driver (the copy's recorded position), or None."""
    from driver.archive.replication_session import REPLICATION_TYPE_ID

    found: list[int] = []

    def match(counter_id: int, type_id: int, key: bytes, label: str) -> None:
        if type_id == REPLICATION_TYPE_ID and struct.unpack_from("<q", key)[0] == replication_id:
            found.append(counter_id)

    aeron.counters_reader.for_each(match)
    return aeron.counters_reader.get_counter_value(found[0]) if found else None


def cmd_replicate(args: argparse.Namespace, properties: dict[str, str]) -> int:
    """Ask the archive (on the driver of --aeron-dir, through its control channel) to replicate, and follow
    its signals; progress once a second. Returns when the copy is synced, merged with live, or stopped."""
    from driver.archive.client import AeronArchive, ArchiveError
    from driver.client.exceptions import AeronError

    try:
        archive = AeronArchive.connect(
            aeron_dir=getattr(args, "aeron_dir", None) or properties.get("aeron.dir"),
            control_request_channel=args.control_channel,
            control_request_stream_id=args.control_stream_id,
            control_response_channel="aeron:ipc" if args.control_channel.startswith("aeron:ipc") else None,
            message_timeout_ns=int(args.timeout_s * 1e9) if args.timeout_s else None,
        )
    except (ArchiveError, AeronError, TimeoutError, OSError) as e:
        return _fail(f"replicate: cannot reach the archive: {e}")
    with contextlib.closing(archive):
        try:
            replication_id = archive.replicate(
                args.src_recording_id,
                args.source_channel,
                args.source_stream_id,
                live_destination=args.live_destination or "",
                dst_recording_id=args.extend if args.extend is not None else -1,
            )
        except ArchiveError as e:
            return _fail(f"replicate: {e.error_message or e}")
        print(
            f"replication {replication_id}: recording {args.src_recording_id} of {args.source_channel}",
            flush=True,
        )
        ends = {"synced", "merged", "stopped"} if args.live_destination is None else {"merged", "stopped"}
        started = time.monotonic()
        last_report = started
        last_position: int | None = None
        error: str | None = None
        try:
            while True:
                for signal in archive.poll_replication():
                    if signal.replication_id != replication_id:
                        continue
                    if signal.name == "error":
                        error = signal.message
                        print(f"error: {signal.message}", file=sys.stderr, flush=True)
                        continue
                    print(
                        f"{signal.name}: recording {signal.recording_id} position {signal.position}",
                        flush=True,
                    )
                    if signal.name in ends:
                        return EXIT_FAILURE if error else EXIT_OK
                now = time.monotonic()
                if now - last_report >= 1.0:
                    position = _replication_position(archive.aeron, replication_id)
                    if position is not None:
                        rate = (
                            0.0 if last_position is None else (position - last_position) / (now - last_report)
                        )
                        print(f"progress: position {position} ({rate / 1e6:.1f} MB/s)", flush=True)
                        last_position = position
                    last_report = now
                time.sleep(0.01)
        except KeyboardInterrupt:
            with contextlib.suppress(ArchiveError):
                archive.stop_replication(replication_id)
            print("replication stopped", file=sys.stderr, flush=True)
            return EXIT_FAILURE


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
    segs = tool("segments", "the segment files of one recording: positions, size, presence", cmd_segments)
    segs.add_argument("recording_id", type=int, metavar="ID")
    replicate = tools.add_parser(
        "replicate",
        help="ask the running archive to copy recording SRC_ID of another archive (follows it to the end)",
    )
    replicate.add_argument(
        "--from",
        dest="source_channel",
        required=True,
        metavar="CONTROL_CHANNEL",
        help="the source archive's control channel, e.g. aeron:udp?endpoint=host:8010",
    )
    replicate.add_argument(
        "--from-stream-id", dest="source_stream_id", type=int, default=10, help="default 10"
    )
    replicate.add_argument("src_recording_id", type=int, metavar="SRC_ID")
    replicate.add_argument(
        "--live-destination",
        metavar="CHANNEL",
        help="aeron:udp?endpoint=host:port where the live stream reaches this host: merge with live",
    )
    replicate.add_argument(
        "--extend", type=int, metavar="DST_ID", help="extend this copy from where it stopped"
    )
    replicate.add_argument(
        "--control-channel",
        default="aeron:ipc",
        help="the destination archive's control channel (default aeron:ipc)",
    )
    replicate.add_argument(
        "--control-stream-id", type=int, default=11, help="default 11 (the local control stream)"
    )
    replicate.add_argument(
        "--timeout", dest="timeout_s", type=float, help="archive message timeout in seconds"
    )
    replicate.set_defaults(tool_handler=cmd_replicate)
