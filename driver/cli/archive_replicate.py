"""``mediadriver archive replicate --from CONTROL_CHANNEL SRC_ID [--live-destination CHANNEL] [--extend DST_ID]``:
asks the archive of a running driver to copy a recording of another archive (docs/archive.md section 20) and
follows it, printing each signal and, once a second, the copy's position and rate. Registered by
``driver.cli.archive``."""

from __future__ import annotations

import argparse
import contextlib
import struct
import sys
import time
from typing import Any

from driver.archive.client import AeronArchive, ArchiveError
from driver.archive.replication_session import REPLICATION_TYPE_ID
from driver.cli.common import EXIT_FAILURE, EXIT_OK, fail
from driver.client.exceptions import AeronError

PROG = "mediadriver archive"


def _replication_position(aeron: Any, replication_id: int) -> int | None:
    """The value of the replication's counter in the driver (the copy's recorded position), or None."""
    found: list[int] = []

    def match(counter_id: int, type_id: int, key: bytes, label: str) -> None:
        if type_id == REPLICATION_TYPE_ID and struct.unpack_from("<q", key)[0] == replication_id:
            found.append(counter_id)

    aeron.counters_reader.for_each(match)
    return aeron.counters_reader.get_counter_value(found[0]) if found else None


def cmd_replicate(args: argparse.Namespace, properties: dict[str, str]) -> int:
    """Ask the archive (on the driver of --aeron-dir, through its control channel) to replicate, and follow
    its signals; progress once a second. Returns when the copy is synced, merged with live, or stopped."""
    try:
        archive = AeronArchive.connect(
            aeron_dir=getattr(args, "aeron_dir", None) or properties.get("aeron.dir"),
            control_request_channel=args.control_channel,
            control_request_stream_id=args.control_stream_id,
            control_response_channel="aeron:ipc" if args.control_channel.startswith("aeron:ipc") else None,
            message_timeout_ns=int(args.timeout_s * 1e9) if args.timeout_s else None,
        )
    except (ArchiveError, AeronError, TimeoutError, OSError) as e:
        return fail(f"replicate: cannot reach the archive: {e}", prog=PROG)
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
            return fail(f"replicate: {e.error_message or e}", prog=PROG)
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


def add_replicate_parser(tools: Any) -> None:
    """``replicate`` among the ``archive`` tools (``tools``: their subparsers)."""
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
    replicate.add_argument(
        "src_recording_id", type=int, metavar="SRC_ID", help="the recording id at the source"
    )
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
