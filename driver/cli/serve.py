"""``mediadriver serve``: the record & replay service as a client of a running driver and archive; its options
and its run live with the service (driver/service/command.py). A family of its own: the service's HTTP client
commands (service.py) need neither the archive's settings nor the event loop that ``serve`` imports."""

from __future__ import annotations

import argparse

from driver.cli.common import COMMAND_HELP
from driver.service.command import add_serve_parser


def add_parsers(sub: argparse._SubParsersAction) -> None:
    add_serve_parser(sub, COMMAND_HELP["serve"])
