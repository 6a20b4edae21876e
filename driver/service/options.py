"""The ``--http`` options of ``mediadriver run --archive`` and ``mediadriver serve``: defined apart from the
service itself (driver/service/command.py) so that building a parser, ``run --help`` included, imports neither
the archive nor the service."""

from __future__ import annotations

import argparse

from driver.service.token_file import TOKEN_ENV


def add_http_options(parser: argparse.ArgumentParser, *, port_flag: str, default_port: int | None) -> None:
    parser.add_argument(
        port_flag,
        dest="http_port",
        type=int,
        default=default_port,
        help="serve the record & replay HTTP API on this port (0: any free port)",
    )
    parser.add_argument(
        "--http-host",
        default="127.0.0.1",
        help="address for the HTTP API (default 127.0.0.1: this machine only)",
    )
    parser.add_argument(
        "--http-token-file",
        help=f"require 'Authorization: Bearer <token>' with the token read from this file (or ${TOKEN_ENV}); "
        "default: a new token in <archive dir>/http-token, readable by this user only",
    )
    parser.add_argument(
        "--retention-max-age", type=float, metavar="S", help="delete data sets whose last message is older"
    )
    parser.add_argument(
        "--retention-max-bytes",
        type=int,
        metavar="N",
        help="delete the oldest data sets while the archive's recording files take more than N bytes of disk",
    )
    parser.add_argument(
        "--retention-max-datasets", type=int, metavar="N", help="delete the oldest data sets beyond N"
    )
    parser.add_argument(
        "--http-no-auth",
        action="store_true",
        help="no token: any local user (any host with --http-host) may record, replay and export",
    )
