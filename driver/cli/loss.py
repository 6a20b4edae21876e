"""``mediadriver loss``: a driver's loss-report.dat printed as LossStat prints it."""

from __future__ import annotations

import argparse

from driver.cli.common import COMMAND_HELP, aeron_dir
from driver.reports.loss_stat import run_loss_stat


def cmd_loss(args: argparse.Namespace, properties: dict[str, str]) -> int:
    return run_loss_stat(aeron_dir(args, properties), args.format)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    loss = sub.add_parser("loss", help=COMMAND_HELP["loss"])
    loss.add_argument("--dir", help="aeron dir (or the loss-report.dat file itself)")
    loss.add_argument(
        "--format",
        choices=("table", "csv"),
        default="table",
        help="table (default) or csv, exactly as LossStat",
    )
    loss.set_defaults(handler=cmd_loss)
