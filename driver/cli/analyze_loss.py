"""``mediadriver analyze-loss``: the Spark analysis of many drivers' loss reports (driver/analysis/);
its options and its run live with the analysis, which needs the ``analysis`` extra only once it runs."""

from __future__ import annotations

import argparse

from driver.analysis.command import add_parser as add_analysis_parser
from driver.analysis.command import run
from driver.cli.common import COMMAND_HELP


def cmd_analyze_loss(args: argparse.Namespace, properties: dict[str, str]) -> int:
    return run(args)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    parser = add_analysis_parser(sub, COMMAND_HELP["analyze-loss"])
    parser.set_defaults(handler=cmd_analyze_loss)
