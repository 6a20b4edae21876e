"""``mediadriver archive export``: Spark over the archive's files (driver/analysis/); its options and its run live
with the analysis, which needs the ``analysis`` extra only once it runs."""

from __future__ import annotations

import argparse
from typing import Any

from driver.analysis.export_command import add_export_parser, run
from driver.views.archive_catalog import resolve_archive_dir


def cmd_export(args: argparse.Namespace, properties: dict[str, str]) -> int:
    return run(args, resolve_archive_dir(getattr(args, "dir", None), properties))


def add_parser(tools: Any) -> None:
    add_export_parser(tools).set_defaults(tool_handler=cmd_export)
