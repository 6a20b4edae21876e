"""The Spark job behind ``mediadriver analyze-loss``: many drivers' loss-report.dat -> Parquet + a report.

Local inputs are listed here and handed to Spark as a range of indices into the list; other URIs are listed by
Spark (``binaryFile`` source: paths, globs, or any URI Spark can read). A ``mapInArrow`` decodes each whole file
into numpy columns and sends many files' entries per Arrow record batch (``columns.decode_batches``): no Python
object per entry on either side of the exchange. Corrupt files go into a set accumulator and are skipped.
The entries are written to ``<out>/entries.parquet``, read back for the aggregates (three Spark jobs), and
``report.write_report`` draws the charts and writes report.md and summary.json.

Local files are mapped by the Python workers, so a sparse 1 MiB file costs only its written pages
(tools/bench/spark_loss.py measures the rate against a plain-Python reader).
"""

from __future__ import annotations

import functools
import glob
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pyspark import cloudpickle
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from driver.analysis import columns, decode
from driver.analysis.report import Aggregates, write_report

APP_NAME = "mediadriver analyze-loss"
PARQUET_DIR = "entries.parquet"
TOP = 20
# "Nice" bucket sizes for loss over time; the smallest giving at most MAX_BUCKETS buckets is used.
BUCKETS_MS = (1_000, 10_000, 60_000, 300_000, 900_000, 3_600_000, 6 * 3_600_000, 86_400_000, 7 * 86_400_000)
MAX_BUCKETS = 200
FILES_PER_TASK = 500  # local files per decode task beyond one task per core: progress, retries and balance

ROW_TYPES = {
    "file": T.StringType(),
    "host": T.StringType(),
    "channel": T.StringType(),
    "source": T.StringType(),
    "stream_id": T.IntegerType(),
    "session_id": T.IntegerType(),
    "observation_count": T.LongType(),
    "total_bytes_lost": T.LongType(),
    "first_observation_ms": T.LongType(),
    "last_observation_ms": T.LongType(),
}
assert tuple(ROW_TYPES) == decode.ROW_FIELDS == tuple(columns.SCHEMA.names)
# What columns.decode_batches yields: one Arrow column per field, one row per entry.
ENTRY_SCHEMA = T.StructType([T.StructField(name, kind, False) for name, kind in ROW_TYPES.items()])

Progress = Callable[[str], None]


def stderr_progress(message: str) -> None:
    print(f"analyze-loss: {message}", file=sys.stderr, flush=True)


LOG4J2_PROPERTIES = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


def _quiet_log4j_option() -> str:
    """A JVM option pointing log4j2 at an errors-only config, so Spark's start-up warnings stay out of the way."""
    path = Path(tempfile.gettempdir()) / "mediadriver-analyze-loss-log4j2.properties"
    if not path.exists() or path.read_text() != LOG4J2_PROPERTIES:
        path.write_text(LOG4J2_PROPERTIES)
    return f"-Dlog4j2.configurationFile={path.as_uri()}"


def create_session(master: str = "local[*]", conf: dict[str, str] | None = None) -> SparkSession:
    """A SparkSession for the job: no UI, UTC session time zone, quiet logs, executors on this Python."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    conf = dict(conf or {})
    conf.setdefault("spark.driver.extraJavaOptions", _quiet_log4j_option())
    builder = (
        SparkSession.builder.master(master)
        .appName(APP_NAME)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.log.level", "ERROR")
    )
    if master.startswith("local"):
        # A few MB of aggregates: Spark's 200 default shuffle partitions only add scheduling on one machine.
        builder = builder.config("spark.sql.shuffle.partitions", "8")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    # Executors then need pyspark but not this package (see decode.py).
    cloudpickle.register_pickle_by_value(decode)
    cloudpickle.register_pickle_by_value(columns)
    return spark


@dataclass
class DecodeCounters:
    """Accumulators filled while the files are decoded (valid once an action over the rows has run)."""

    skipped: Any
    files: Any
    entries: Any

    def skipped_files(self) -> list[tuple[str, str]]:
        return sorted(self.skipped.value)


def local_files(inputs: Sequence[str]) -> list[str]:
    """The files local ``inputs`` name, as binaryFiles would list them: a glob's matches, a directory's visible
    files (not those starting with '.' or '_'), a file itself; sorted, each once."""
    found: set[str] = set()
    for item in inputs:
        path = item.removeprefix("file://") if item.startswith("file://") else item.removeprefix("file:")
        for match in glob.glob(path) or [path]:
            if os.path.isdir(match):
                found.update(
                    entry.path
                    for entry in os.scandir(match)
                    if entry.is_file() and not entry.name.startswith((".", "_"))
                )
            elif os.path.isfile(match):
                found.add(os.path.abspath(match))
    return sorted(found)


def decode_files(
    spark: SparkSession, inputs: Sequence[str], min_partitions: int | None = None
) -> tuple[DataFrame, DecodeCounters]:
    """A lazy DataFrame of every entry in ``inputs`` (timestamps as TimestampType) and its counters."""
    sc = spark.sparkContext
    counters = DecodeCounters(
        skipped=sc.accumulator(set(), decode.SetAccumulatorParam()),
        files=sc.accumulator(0),
        entries=sc.accumulator(0),
    )
    # Spark lists the files (paths, globs, any URI it reads). Local files are read by the Python workers
    # themselves (mapped, so only the pages holding entries are touched); others come in the listing's content.
    local = local_files(inputs) if all(urlparse(p).scheme in ("", "file") for p in inputs) else []
    counted = {"skipped": counters.skipped, "files": counters.files, "entries": counters.entries}
    if local:
        # Listed here: Spark's file index lists each of a glob's directories in a job of its own (seconds for
        # a thousand drivers). The paths travel with the function; Spark hands out ranges of their indices.
        # A task per core, more only for many files: each task costs ~0.1 CPU-s of set-up (its Python worker's
        # and the JVM's), measured on local[2] against ~1 CPU-s to decode and hand over a thousand files.
        slices = min(
            len(local), min_partitions or max(sc.defaultParallelism, -(-len(local) // FILES_PER_TASK))
        )
        listing = spark.range(0, len(local), 1, slices)
        decoder = functools.partial(columns.decode_batches, paths=[f"file:{p}" for p in local], **counted)
    else:
        listing = spark.read.format("binaryFile").load(list(inputs)).select("path", "content")
        if min_partitions is not None:
            listing = listing.repartition(min_partitions)
        decoder = functools.partial(columns.decode_batches, **counted)
    decoded = listing.mapInArrow(decoder, ENTRY_SCHEMA)
    df = decoded.select(
        *[name for name in ROW_TYPES if not name.endswith("_ms")],
        F.timestamp_millis("first_observation_ms").alias("first_observation"),
        F.timestamp_millis("last_observation_ms").alias("last_observation"),
    )
    return df, counters


class StageMonitor:
    """Prints the running stage's task progress (and entries decoded so far) every ``interval_s`` seconds."""

    def __init__(
        self,
        spark: SparkSession,
        progress: Progress,
        what: str,
        counters: DecodeCounters | None = None,
        interval_s: float = 2.0,
    ) -> None:
        self._tracker = spark.sparkContext.statusTracker()
        self._progress = progress
        self._what = what
        self._counters = counters
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="analyze-loss-progress", daemon=True)
        self._last = ""

    def __enter__(self) -> StageMonitor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                stages = [self._tracker.getStageInfo(s) for s in self._tracker.getActiveStageIds()]
            except Exception:  # the context is stopping; progress is best effort
                return
            done = sum(s.numCompletedTasks for s in stages if s)
            total = sum(s.numTasks for s in stages if s)
            parts = [f"{done}/{total} tasks done"] if total else []
            if self._counters is not None:
                parts.append(
                    f"{self._counters.entries.value:,d} entries from {self._counters.files.value:,d} files so far"
                )
            message = f"{self._what}: {', '.join(parts) or 'waiting for Spark'}"
            if message != self._last:
                self._last = message
                self._progress(message)


@dataclass
class AnalysisResult:
    out_dir: Path
    parquet: Path
    report: Path
    summary: Path
    charts: list[Path]
    files_read: int
    entries: int
    skipped: list[tuple[str, str]]
    decode_seconds: float
    aggregates: Aggregates = field(repr=False)

    @property
    def entries_per_second(self) -> float:
        return self.entries / self.decode_seconds if self.decode_seconds > 0 else 0.0


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    return [r.asDict() for r in df.collect()]


def _bucket_ms(span_ms: int) -> int:
    for bucket in BUCKETS_MS:
        if span_ms // bucket < MAX_BUCKETS:
            return bucket
    return max(BUCKETS_MS[-1], span_ms // MAX_BUCKETS + 1)


def aggregate(entries: DataFrame, top: int = TOP) -> Aggregates:
    """Everything the report shows, in three Spark jobs (totals, grouping sets, top images), collected small."""
    totals = entries.agg(
        F.count(F.lit(1)).alias("entries"),
        F.coalesce(F.sum("total_bytes_lost"), F.lit(0)).alias("bytes_lost"),
        F.coalesce(F.sum("observation_count"), F.lit(0)).alias("observations"),
        F.countDistinct("file").alias("files_with_loss"),
        F.countDistinct("channel", "stream_id").alias("streams"),
        F.min(F.unix_millis("first_observation")).alias("first_ms"),
        F.max(F.unix_millis("last_observation")).alias("last_ms"),
    ).first()
    assert totals is not None
    agg = Aggregates(totals.asDict(), [], [], [], [], [], [], 0)
    if not totals["entries"]:
        return agg
    agg.bucket_ms = bucket_ms = _bucket_ms(totals["last_ms"] - totals["first_ms"])

    # One pass for every grouping: channel, source, host, (channel, stream) and the two time buckets. The data
    # columns are never null, so the non-null keys of a result row say which grouping it belongs to. One
    # distinct count only (hosts): each more multiplies the rows Spark's Expand makes.
    view = f"loss_entries_{uuid.uuid4().hex}"
    entries.select(
        "channel",
        "source",
        "host",
        "stream_id",
        "total_bytes_lost",
        "observation_count",
        (F.floor(F.unix_millis("last_observation") / bucket_ms) * bucket_ms).alias("last_bucket"),
        (F.floor(F.unix_millis("first_observation") / bucket_ms) * bucket_ms).alias("first_bucket"),
    ).createOrReplaceTempView(view)
    try:
        grouped = entries.sparkSession.sql(
            f"""
            SELECT * FROM (
                SELECT *, row_number() OVER (
                    PARTITION BY gid ORDER BY bytes_lost DESC, observations DESC, channel, stream_id, source, host
                ) AS rank
                FROM (
                    SELECT grouping_id() AS gid, channel, stream_id, source, host, last_bucket, first_bucket,
                        sum(total_bytes_lost) AS bytes_lost, sum(observation_count) AS observations,
                        count(1) AS images, count(DISTINCT host) AS hosts
                    FROM {view}
                    GROUP BY GROUPING SETS ((channel), (source), (host), (channel, stream_id), (last_bucket),
                        (first_bucket))
                )
            )
            WHERE rank <= {int(top)} OR last_bucket IS NOT NULL OR first_bucket IS NOT NULL
            """
        ).collect()
    finally:
        entries.sparkSession.catalog.dropTempView(view)
    lost_by_bucket: dict[int, int] = {}
    new_by_bucket: dict[int, int] = {}
    for row in sorted(grouped, key=lambda r: r["rank"]):
        r = row.asDict()
        loss = {k: r[k] for k in ("bytes_lost", "observations", "images")}
        if r["last_bucket"] is not None:
            lost_by_bucket[r["last_bucket"]] = r["bytes_lost"]
        elif r["first_bucket"] is not None:
            new_by_bucket[r["first_bucket"]] = r["images"]
        elif r["stream_id"] is not None:
            agg.top_offenders.append(
                {
                    "channel": r["channel"],
                    "stream_id": r["stream_id"],
                    **loss,
                    "hosts": r["hosts"],
                }
            )
        elif r["channel"] is not None:
            agg.by_channel.append({"channel": r["channel"], **loss, "hosts": r["hosts"]})
        elif r["source"] is not None:
            agg.by_source.append({"source": r["source"], **loss, "hosts": r["hosts"]})
        else:
            agg.by_host.append({"host": r["host"], **loss})
    agg.over_time = [
        {"bucket_ms": b, "bytes_lost": lost_by_bucket.get(b, 0), "new_images": new_by_bucket.get(b, 0)}
        for b in sorted(lost_by_bucket.keys() | new_by_bucket.keys())
    ]
    agg.top_images = _rows(
        entries.select(
            "host",
            "channel",
            "stream_id",
            "session_id",
            "source",
            "observation_count",
            "total_bytes_lost",
            F.unix_millis("first_observation").alias("first_ms"),
            F.unix_millis("last_observation").alias("last_ms"),
        )
        .orderBy(
            F.desc("total_bytes_lost"),
            F.desc("observation_count"),
            "host",
            "channel",
            "stream_id",
            "session_id",
        )
        .limit(top)
    )
    return agg


def analyze(
    spark: SparkSession,
    inputs: Sequence[str],
    out_dir: Path | str,
    progress: Progress = stderr_progress,
    top: int = TOP,
    min_partitions: int | None = None,
) -> AnalysisResult:
    """Decode ``inputs``, write ``<out>/entries.parquet``, aggregate and write the report."""
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    parquet = out / PARQUET_DIR
    df, counters = decode_files(spark, inputs, min_partitions)
    progress(f"decoding {len(inputs)} input path(s) on {spark.sparkContext.master} into {parquet}")
    started = time.perf_counter()
    with StageMonitor(spark, progress, "decoding", counters):
        df.write.mode("overwrite").parquet(parquet.as_uri())
    decode_seconds = time.perf_counter() - started
    skipped = counters.skipped_files()
    for path, reason in skipped:
        progress(f"skipped {path}: {reason}")
    files_read, entries = counters.files.value, counters.entries.value
    progress(
        f"decoded {entries:,d} entries from {files_read:,d} files into Parquet in {decode_seconds:.1f} s "
        f"({entries / max(decode_seconds, 1e-9):,.0f} entries/s); {len(skipped)} file(s) skipped"
    )
    progress("aggregating")
    started = time.perf_counter()
    stored = spark.read.parquet(parquet.as_uri())  # columnar scans beat caching 1M rows for three jobs
    with StageMonitor(spark, progress, "aggregating"):
        aggregates = aggregate(stored, top)
    aggregates.files_read = files_read
    aggregates.skipped = skipped
    aggregates.inputs = list(inputs)
    progress(f"aggregated in {time.perf_counter() - started:.1f} s; drawing charts")
    report, summary, charts = write_report(aggregates, out)
    progress(f"wrote {report} and {len(charts)} chart(s)")
    return AnalysisResult(
        out, parquet, report, summary, charts, files_read, entries, skipped, decode_seconds, aggregates
    )
