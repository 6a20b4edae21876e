"""``mediadriver archive export``: checks for pyspark and Java as ``analyze-loss`` does, then writes an archive
directory's messages (one recording, a time range, or all) as Parquet or CSV with Spark.

Nothing here imports pyspark at module level, so the command can say what is missing instead of failing.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path
from typing import Any

from driver.analysis.command import _CAUSE, PreflightError, check_java, check_python_packages, spark_conf
from driver.util.extras import install_command

PROG = "mediadriver archive export"


def _time(text: str) -> datetime.datetime:
    """An ISO 8601 time (UTC unless it says otherwise)."""
    try:
        value = datetime.datetime.fromisoformat(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 time (e.g. 2026-12-02T13:45:00)"
        ) from e
    return value if value.tzinfo else value.replace(tzinfo=datetime.UTC)


def add_export_parser(tools: Any) -> argparse.ArgumentParser:
    """``export`` among the ``archive`` tools (``tools``: their subparsers)."""
    parser = tools.add_parser(
        "export",
        help="write recorded messages as Parquet or CSV with Spark, from the archive's files alone",
        description="Read the archive directory's recordings with Spark (one row per whole message: recording "
        "id, session id, stream id, position, timestamp, reserved value, payload) and write them under --out. "
        f"Needs the 'analysis' extra ({install_command('analysis')}) and Java 17+ for Spark.",
    )
    parser.add_argument(
        "--dir",
        default=argparse.SUPPRESS,
        help="archive dir (default: -Daeron.archive.dir or ./aeron-archive)",
    )
    parser.add_argument("--format", choices=("parquet", "csv"), default="parquet", help="default parquet")
    parser.add_argument("--out", required=True, help="output directory (replaced); with --master, shared")
    parser.add_argument("--recording", type=int, metavar="ID", help="only this recording")
    parser.add_argument("--dataset", help="only the recordings of this record & replay data set (id or name)")
    parser.add_argument("--from", dest="time_from", type=_time, metavar="TIME", help="messages recorded at or "
                        "after TIME (ISO 8601, UTC unless given)")  # fmt: skip
    parser.add_argument("--to", dest="time_to", type=_time, metavar="TIME", help="... and before TIME")
    parser.add_argument(
        "--skip-corrupt",
        action="store_true",
        help="leave damaged frames and checksum mismatches out and count them (default: fail naming them)",
    )
    parser.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    parser.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting (repeatable)"
    )
    return parser


def run(args: argparse.Namespace, archive_dir: Path) -> int:
    def fail(message: str) -> int:
        print(f"{PROG}: {message}", file=sys.stderr)
        return 1

    try:
        conf = spark_conf(args.conf)
    except ValueError as e:
        return fail(str(e))
    if not (archive_dir / "archive.catalog").is_file():
        return fail(f"{archive_dir} has no archive.catalog: not an archive directory")
    try:
        spark_version = check_python_packages()
        check_java(spark_version)
    except PreflightError as e:
        return fail(str(e))

    from driver.analysis.recording_export import export, recording_session

    started = time.perf_counter()
    spark = recording_session(args.master, conf)
    try:
        result = export(
            spark, str(archive_dir.absolute()), str(Path(args.out).absolute()), args.format, args.recording,
            args.time_from, args.time_to, args.skip_corrupt, args.dataset,
        )  # fmt: skip
    except Exception as e:  # Spark's errors arrive wrapped (Py4J): show the line that names the cause
        lines = [line.strip() for line in str(e).splitlines() if line.strip()] or [type(e).__name__]
        cause = next((line for line in lines if "RecordingReadError" in line), None)
        cause = cause or next((line for line in lines if _CAUSE.search(line)), lines[0])
        return fail(f"the Spark job failed: {cause.removeprefix(': ')}")
    finally:
        spark.stop()
    skipped = f", {result.damaged} damaged place(s) skipped" if args.skip_corrupt else ""
    print(
        f"{result.rows:,d} messages written to {result.out} ({args.format}) in "
        f"{time.perf_counter() - started:.1f} s{skipped}",
        flush=True,
    )
    return 0
