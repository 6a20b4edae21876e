"""Spark over an archive directory: the session (``create_session`` with filter pushdown on and the
``aeron-recording`` source registered), ``read_recordings`` and the job behind ``mediadriver archive export``.
Executors import this package (the data source is pickled by reference), so workers need it installed."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from driver.analysis.job import create_session
from driver.analysis.recording_source import FORMAT, RecordingDataSource

PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


def recording_session(master: str = "local[*]", conf: dict[str, str] | None = None) -> SparkSession:
    """A session (as analyze-loss makes one) that reads recordings and pushes filters down to them."""
    spark = create_session(master, {PUSHDOWN: "true", **(conf or {})})
    spark.dataSource.register(RecordingDataSource)
    return spark


def read_recordings(spark: SparkSession, archive_dir: str, **options: str) -> DataFrame:
    """The messages of ``archive_dir`` (options: ``dataset``, ``corrupt``): see ``recording_source``."""
    reader = spark.read.format(FORMAT)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(archive_dir)


def _utc(value: datetime.datetime) -> datetime.datetime:
    return value if value.tzinfo else value.replace(tzinfo=datetime.UTC)


@dataclass
class Exported:
    rows: int
    damaged: int  # places skipped (``skip_corrupt``)
    out: str


def export(
    spark: SparkSession,
    archive_dir: str,
    out: str,
    fmt: str = "parquet",
    recording_id: int | None = None,
    time_from: datetime.datetime | None = None,
    time_to: datetime.datetime | None = None,
    skip_corrupt: bool = False,
    dataset: str | None = None,
) -> Exported:
    """Writes the messages (one recording, a time range [from, to), or all) to ``out`` as Parquet or CSV (the
    payload as base64 there); the row count."""
    options: dict[str, Any] = {"corrupt": "skip" if skip_corrupt else "fail"}
    if dataset:
        options["dataset"] = dataset
    df = read_recordings(spark, archive_dir, **options)
    if recording_id is not None:
        df = df.where(F.col("recording_id") == recording_id)
    if time_from is not None:
        df = df.where(F.col("timestamp") >= F.lit(_utc(time_from)))
    if time_to is not None:
        df = df.where(F.col("timestamp") < F.lit(_utc(time_to)))
    damaged = 0
    if skip_corrupt:
        report = read_recordings(
            spark, archive_dir, corrupt="report", **({"dataset": dataset} if dataset else {})
        )
        if recording_id is not None:
            report = report.where(F.col("recording_id") == recording_id)
        damaged = report.count()
    # Spark's base64 breaks lines every 76 characters (MIME): one line per row in a CSV file.
    base64 = F.regexp_replace(F.base64("payload"), "[\\r\\n]", "")
    writer_df = df if fmt == "parquet" else df.withColumn("payload", base64)
    writer_df.write.mode("overwrite").format(fmt).option("header", "true").save(out)
    rows = spark.read.format(fmt).option("header", "true").load(out).count()
    return Exported(rows, damaged, out)
