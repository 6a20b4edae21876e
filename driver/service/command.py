"""``mediadriver serve``, and the settings and start-up of ``mediadriver run --archive --http`` (docs/service.md
section 1); their options are in options.py.

``serve`` is a client of a running driver and archive on this host (the archive dir holds the data sets, so it
must be local); ``run --archive --http PORT`` embeds all three on the driver's loop."""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import signal
import sys
from typing import Any

import uvloop

from driver.archive.archive_context import ArchiveContext
from driver.context import ConfigurationError, default_aeron_dir
from driver.service.options import add_http_options
from driver.service.token_file import TOKEN_ENV, read_token
from driver.util.extras import require


def http_settings(args: argparse.Namespace):
    # Both need the service extra (pydantic, uvicorn): `run` without --http and `--help` must not.
    from driver.service.retention import Retention
    from driver.service.server import HttpSettings

    # Taken out of the environment, so no child process inherits it.
    token = os.environ.pop(TOKEN_ENV, None) or None
    if args.http_token_file:
        token = read_token(args.http_token_file)
    if args.http_no_auth and token is not None:
        raise ValueError("--http-no-auth and a token (--http-token-file or $" + TOKEN_ENV + ") contradict")
    for name in ("retention_max_age", "retention_max_bytes", "retention_max_datasets"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be above 0, not {value}")
    retention = Retention(args.retention_max_age, args.retention_max_bytes, args.retention_max_datasets)
    return HttpSettings(
        host=args.http_host, port=args.http_port, token=token, no_auth=args.http_no_auth, retention=retention
    )


def control_settings(local_control_channel: str, local_control_stream_id: int) -> dict[str, Any]:
    """The service talks to the archive over IPC (it is on the archive's host), with its own response stream."""
    return {
        "control_request_channel": local_control_channel,
        "control_request_stream_id": local_control_stream_id,
        "control_response_channel": "aeron:ipc",
        "control_response_stream_id": 0x7E5D_0000 + secrets.randbelow(0xFFFF),
    }


def archive_streams(archive_ctx) -> list:
    """The archive's streams a replay must not target (docs/service.md section 5)."""
    from driver.service.service import ReservedStream  # needs the service extra (pydantic)

    return [
        ReservedStream(
            archive_ctx.control_channel, archive_ctx.control_stream_id, "the archive's control requests"
        ),
        ReservedStream(
            archive_ctx.local_control_channel,
            archive_ctx.local_control_stream_id,
            "the archive's local control requests",
        ),
        ReservedStream(
            archive_ctx.recording_events_channel,
            archive_ctx.recording_events_stream_id,
            "the archive's recording events",
        ),
    ]


async def start_embedded(args: argparse.Namespace, aeron_dir: str, archive_ctx: ArchiveContext) -> Any:
    """The HTTP API of ``run --archive --http`` on the driver's loop (needs the service extra, which the command
    asked for before the driver started)."""
    from driver.service.server import start_http

    return await start_http(
        aeron_dir,
        archive_ctx.archive_dir,
        http_settings(args),
        reserved=archive_streams(archive_ctx),
        **control_settings(archive_ctx.local_control_channel, archive_ctx.local_control_stream_id),
    )


def announce(http) -> None:
    if http.token_file is not None:
        auth = f"; bearer token in {http.token_file} ('mediadriver page' opens the page with it)"
    elif http.token is not None:
        auth = " (bearer token required)"
    else:
        auth = "; no token (--http-no-auth): open to every user who can reach it"
    print(f"mediadriver: record & replay API on {http.url}/api/v1, docs {http.url}/docs{auth}", flush=True)


def add_serve_parser(sub, help_line: str) -> argparse.ArgumentParser:
    serve = sub.add_parser("serve", help=help_line)
    serve.add_argument("--aeron-dir", help="the driver's aeron dir (default AERON_DIR, -Daeron.dir)")
    serve.add_argument(
        "--archive-dir", help="the archive's dir (default -Daeron.archive.dir or ./aeron-archive)"
    )
    add_http_options(serve, port_flag="--port", default_port=8080)
    serve.set_defaults(handler=cmd_serve)
    return serve


def cmd_serve(args: argparse.Namespace, properties: dict[str, str]) -> int:
    require("service", "serve")
    try:
        archive_ctx = ArchiveContext.from_sources({"archive_dir": args.archive_dir}, properties)
    except ConfigurationError as e:
        print(f"mediadriver: {e}", file=sys.stderr)
        return 2
    aeron_dir = (
        args.aeron_dir or properties.get("aeron.dir") or os.environ.get("AERON_DIR") or default_aeron_dir()
    )
    try:
        settings = http_settings(args)
    except OSError as e:
        print(f"mediadriver: cannot read the token file: {e}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"mediadriver: {e}", file=sys.stderr)
        return 2
    from driver.service.server import start_http  # needs the service extra, asked for above

    async def main() -> int:
        try:
            http = await start_http(
                aeron_dir,
                archive_ctx.archive_dir,
                settings,
                reserved=archive_streams(archive_ctx),
                **control_settings(archive_ctx.local_control_channel, archive_ctx.local_control_stream_id),
            )
        except Exception as e:
            print(f"mediadriver: cannot start the service: {e}", file=sys.stderr)
            return 1
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, http.stop)
        announce(http)
        await http.task
        return 0

    code = uvloop.run(main())
    print("mediadriver: service stopped", flush=True)
    return code
