#!/usr/bin/env python3
"""An asyncio request/response service over UDP whose client, restarted at any moment, resumes from the
archive: every response reaches it exactly once, in order (docs/asyncio.md).

    mediadriver run --archive -Daeron.spies.simulate.connection=true      # a driver with its archive
    python examples/asyncio_request_response.py server
    python examples/asyncio_request_response.py client --count 100000 --log responses.log

The server answers request ``n`` of a client with response ``n`` on one response stream that the archive
records. The client appends each response it takes to its log as one line ``n position`` (one write each): the
log is its state. Started again after a crash, it reads its last line, asks the archive for the response stream
from that position on (``archive.resume``: the recorded history, then live) and sends again the requests it has
no response to; the server answers each request number of a client once, so a request sent twice gets one
response. The client reads the responses through a spy on the server's driver, so it runs on the server's host
(across hosts, ``ReplayMerge`` does the same over the network, docs/archive.md section 16).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import struct
import sys
from pathlib import Path

from driver.archive.client import AeronArchive, SourceLocation
from driver.client import aio

REQUESTS = "aeron:udp?endpoint=127.0.0.1:40123"
REQUEST_STREAM = 1
RESPONSES = "aeron:udp?endpoint=127.0.0.1:40124"
RESPONSE_STREAM = 2
ARCHIVE_REQUESTS = "aeron:udp?endpoint=localhost:8010"
ARCHIVE_RESPONSES = "aeron:udp?endpoint=localhost:8020"

NUMBER = struct.Struct("<q")  # a request's or a response's number, then the client's name


def encode(number: int, client: str) -> bytes:
    return NUMBER.pack(number) + client.encode()


def decode(data: bytes) -> tuple[int, str]:
    return NUMBER.unpack_from(data)[0], data[NUMBER.size :].decode()


def answer(number: int) -> int:
    """What the service computes for request ``number``."""
    return number * number


async def serve(args: argparse.Namespace) -> None:
    """Answer each client's requests in order, each number once, until SIGTERM or SIGINT."""
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    async with await AeronArchive.connect_async(
        aeron_dir=args.aeron_dir,
        control_request_channel=args.archive_requests,
        control_response_channel=args.archive_responses,
    ) as archive:
        aeron = archive.aeron
        responses = await aeron.add_publication_async(args.responses, RESPONSE_STREAM)
        await archive.start_recording_async(args.responses, RESPONSE_STREAM, SourceLocation.LOCAL)
        requests = await aeron.add_subscription_async(args.requests, REQUEST_STREAM)
        print("server ready", flush=True)
        expected: dict[str, int] = {}  # each client's next request number

        async def answer_all() -> None:
            async for batch in requests.batches():
                for message in batch:
                    number, client = decode(message.data)
                    if number != expected.get(client, 0):
                        continue  # sent again by a restarted client: answered already
                    expected[client] = number + 1
                    await responses.offer_async(encode(number, client) + NUMBER.pack(answer(number)))

        task = asyncio.ensure_future(answer_all())
        await stop.wait()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def last_taken(log: Path) -> tuple[int, int]:
    """(the last response number in the log, the stream position after it); (-1, 0) for a new log. A line cut
    short by a crash is dropped (its response is taken again)."""
    if not log.exists():
        return -1, 0
    data = log.read_bytes()
    whole = data[: data.rfind(b"\n") + 1]
    if len(whole) != len(data):
        with log.open("r+b") as f:
            f.truncate(len(whole))
    lines = whole.splitlines()
    if not lines:
        return -1, 0
    number, position = lines[-1].split()
    return int(number), int(position)


async def call(args: argparse.Namespace) -> None:
    """Send requests 0 .. count-1 (those without a response yet) and log every response once."""
    log = Path(args.log)
    last, position = last_taken(log)
    if last + 1 >= args.count:
        return
    async with await AeronArchive.connect_async(
        aeron_dir=args.aeron_dir,
        control_request_channel=args.archive_requests,
        control_response_channel=args.archive_responses,
    ) as archive:
        aeron = archive.aeron
        requests = await aeron.add_publication_async(args.requests, REQUEST_STREAM)

        async def send() -> None:
            for number in range(last + 1, args.count):
                await requests.offer_async(encode(number, args.name))

        sender = asyncio.ensure_future(send())
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            async for message in archive.resume(f"aeron-spy:{args.responses}", RESPONSE_STREAM, position):
                number, client = decode(message.data[: -NUMBER.size])
                if client != args.name:
                    continue
                # one write per response: a crash leaves whole lines (or one cut short, dropped on restart)
                os.write(fd, b"%d %d\n" % (number, message.position))
                if number == args.count - 1:
                    break
        finally:
            os.close(fd)
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=("server", "client"))
    parser.add_argument(
        "--aeron-dir", default=None, help="the driver's dir (default: as Aeron.connect finds it)"
    )
    parser.add_argument("--requests", default=REQUESTS, help="the requests' UDP channel")
    parser.add_argument("--responses", default=RESPONSES, help="the responses' UDP channel (recorded)")
    parser.add_argument("--archive-requests", default=ARCHIVE_REQUESTS, help="the archive's control channel")
    parser.add_argument(
        "--archive-responses", default=ARCHIVE_RESPONSES, help="where the archive answers this process"
    )
    parser.add_argument("--count", type=int, default=100_000, help="client: requests to make")
    parser.add_argument("--log", default="responses.log", help="client: its log of responses (its state)")
    parser.add_argument("--name", default="client-1", help="client: its name, the same after a restart")
    args = parser.parse_args(argv)
    aio.run(serve(args) if args.role == "server" else call(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
