"""``mediadriver analyze-loss``: checks that pyspark, matplotlib and a Java runtime are there, then runs the job.

Nothing here imports pyspark at module level, so the command can say what is missing instead of failing.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from driver.analysis.decode import LOSS_REPORT_FILE
from driver.util.extras import install_command, require

JAVA_HINT = (
    "install one with `apt-get install openjdk-17-jre-headless` (Debian/Ubuntu), "
    "or set JAVA_HOME to a Java 17+ installation"
)
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/")
_GLOB = re.compile(r"[*?\[{]")
_CAUSE = re.compile(r"^(: )?[\w.$]+(Exception|Error): ")


class PreflightError(Exception):
    """Something the job needs is missing; the message says how to get it."""


def check_python_packages() -> str:
    """The pyspark version; MissingExtra (one line naming the extra and the pip command) when it is missing."""
    require("analysis", "analyze-loss")
    import pyspark

    return pyspark.__version__


def find_java() -> Path:
    """The java Spark will start: $JAVA_HOME/bin/java if JAVA_HOME is set, else ``java`` on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = Path(java_home) / "bin" / "java"
        if not os.access(java, os.X_OK):
            raise PreflightError(f"JAVA_HOME={java_home} has no bin/java, so Spark cannot start: {JAVA_HINT}")
        return java
    found = shutil.which("java")
    if found is None:
        raise PreflightError(
            f"no Java runtime found for Spark (JAVA_HOME is unset and no java on PATH): {JAVA_HINT}"
        )
    return Path(found)


def java_major_version(java: Path) -> int | None:
    """Major version from ``java -version`` (8 for 1.8.x), or None when it cannot be told."""
    try:
        result = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', result.stderr + result.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def check_java(spark_version: str) -> Path:
    java = find_java()
    needed = 17 if int(spark_version.split(".")[0] or 0) >= 4 else 8
    major = java_major_version(java)
    if major is None:
        raise PreflightError(f"{java} does not run (`{java} -version` failed): {JAVA_HINT}")
    if major < needed:
        raise PreflightError(
            f"Spark {spark_version} needs Java {needed} or newer but {java} is Java {major}: {JAVA_HINT}"
        )
    return java


def resolve_inputs(paths: list[str]) -> list[str]:
    """What to hand to ``binaryFiles``: URIs and globs as given; a local dir holding loss-report.dat -> that file.

    Local paths are checked here so a typo is reported before Spark starts.
    """
    inputs = []
    for raw in paths:
        if _URI.match(raw):
            inputs.append(raw)
            continue
        path = Path(raw).expanduser()
        if _GLOB.search(raw):
            if not glob.glob(str(path)):
                raise PreflightError(f"{raw} matches no files")
            inputs.append(str(path.absolute()))
        elif path.is_dir():
            inputs.append(
                str((path / LOSS_REPORT_FILE if (path / LOSS_REPORT_FILE).is_file() else path).absolute())
            )
        elif path.exists():
            inputs.append(str(path.absolute()))
        else:
            raise PreflightError(f"{raw} does not exist")
        if "," in inputs[-1]:
            raise PreflightError(
                f"{raw}: paths with commas cannot be read (Spark splits input paths on commas)"
            )
    return inputs


def add_parser(sub: argparse._SubParsersAction, help_line: str) -> argparse.ArgumentParser:
    parser = sub.add_parser(
        "analyze-loss",
        help=help_line,
        description="Decode loss-report.dat files from many drivers with PySpark, write them as Parquet under "
        "--out, and write report.md, summary.json and PNG charts there. Needs the 'analysis' extra "
        f"({install_command('analysis')}) and Java 17+ for Spark.",
    )
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="loss-report.dat files, aeron dirs, directories of loss files, globs, or URIs Spark can read "
        "(hdfs://, s3a://, ...). The host column is the parent directory of a loss-report.dat, or the file "
        "name without .dat / .loss-report.dat.",
    )
    parser.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    parser.add_argument(
        "--out",
        default="loss-analysis",
        help="output directory (default ./loss-analysis); with a remote master, a path the executors share",
    )
    parser.add_argument("--top", type=int, default=20, help="rows in each top-N table and chart (default 20)")
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting, e.g. --conf spark.driver.memory=4g (repeatable)",
    )
    return parser


def spark_conf(items: list[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` options as Spark settings; ValueError naming the first that is not KEY=VALUE."""
    conf = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--conf {item!r}: expected KEY=VALUE")
        conf[key] = value
    return conf


def run(args: argparse.Namespace) -> int:
    def fail(message: str) -> int:
        print(f"mediadriver analyze-loss: {message}", file=sys.stderr)
        return 1

    try:
        conf = spark_conf(args.conf)
    except ValueError as e:
        return fail(str(e))
    try:
        spark_version = check_python_packages()
        inputs = resolve_inputs(args.paths)
        check_java(spark_version)
    except PreflightError as e:
        return fail(str(e))

    from driver.analysis.job import analyze, create_session, stderr_progress

    stderr_progress(f"starting Spark {spark_version} on {args.master}")
    started = time.perf_counter()
    spark = create_session(args.master, conf)
    stderr_progress(f"Spark started in {time.perf_counter() - started:.1f} s")
    try:
        result = analyze(spark, inputs, args.out, top=args.top)
    except Exception as e:  # Spark's errors arrive wrapped (Py4J): show the line that names the cause
        lines = [line.strip() for line in str(e).splitlines() if line.strip()] or [type(e).__name__]
        cause = next((line for line in lines if _CAUSE.search(line)), lines[0])
        return fail(f"the Spark job failed: {cause.removeprefix(': ')}")
    finally:
        spark.stop()
    totals = result.aggregates.totals
    print(
        f"{result.entries:,d} entries from {result.files_read:,d} files ({len(result.skipped)} skipped), "
        f"{totals['bytes_lost']:,d} bytes lost; report: {result.report}; parquet: {result.parquet}",
        flush=True,
    )
    for path, reason in result.skipped:
        print(f"skipped {path}: {reason}", file=sys.stderr)
    if result.files_read == 0:
        return fail("no readable loss report among the inputs")
    return 0
