"""``mediadriver terminate``: ask a running driver to stop (TERMINATE_DRIVER) and wait until it has."""

from __future__ import annotations

import argparse
import contextlib
import time

from driver.cli.common import COMMAND_HELP, aeron_dir, fail, open_cnc
from driver.client import Aeron, AeronError
from driver.concurrent.cnc_file import CncError
from driver.concurrent.ring_buffer import ManyToOneRingBuffer


def _driver_heartbeat_ms(aeron_dir: str) -> int:
    """The driver's to-driver consumer heartbeat (epoch ms); 0 once a clean stop withdrew it or no cnc.dat."""
    try:
        cnc = open_cnc(aeron_dir)
    except (CncError, OSError):
        return 0
    with contextlib.closing(cnc):
        return ManyToOneRingBuffer(cnc.to_driver_buffer).consumer_heartbeat_time()


def cmd_terminate(args: argparse.Namespace, properties: dict[str, str]) -> int:
    directory = aeron_dir(args, properties)
    try:
        with Aeron.connect(aeron_dir=directory) as aeron:
            aeron.request_driver_termination(args.token.encode())
    except AeronError as e:
        return fail(str(e))
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if _driver_heartbeat_ms(directory) == 0:
            print(f"mediadriver: the driver of {directory} stopped", flush=True)
            return 0
        time.sleep(0.05)
    return fail(
        f"the driver of {directory} is still running after {args.timeout:g} s: its termination validator "
        "refused (it denies by default; start it with -Daeron.driver.termination.validator=allow)"
    )


def add_parsers(sub: argparse._SubParsersAction) -> None:
    terminate = sub.add_parser("terminate", help=COMMAND_HELP["terminate"])
    terminate.add_argument("--dir", help="aeron dir")
    terminate.add_argument("--token", default="", help="token for the driver's termination validator")
    terminate.add_argument(
        "--timeout", type=float, default=5.0, help="seconds to wait for the driver to stop"
    )
    terminate.set_defaults(handler=cmd_terminate)
