"""The archive's recordings as a Spark data source (PySpark's Python data source API, Spark 4.1+)::

    spark.dataSource.register(RecordingDataSource)
    df = spark.read.format("aeron-recording").load("/var/lib/aeron-archive")

One row per whole message (``recordings.SCHEMA``), one partition per segment file. Options: ``dataset`` (a
record & replay service data set of the directory, by id or name: only its recordings), ``corrupt`` (``fail``,
the default: a damaged frame or a checksum mismatch fails the read naming file and position; ``skip``: such
stretches are left out; ``report``: rows of ``recordings.CORRUPT_SCHEMA``, one per damaged place, instead of
messages). Filters on ``recording_id``, ``position`` and ``timestamp`` are pushed down (with
``spark.sql.python.filterPushdown.enabled``, which ``create_session`` sets): only the segment files they need
are opened.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from driver.analysis import recordings
from driver.analysis.recordings import INT64_MAX, Bounds, SegmentSlice

FORMAT = "aeron-recording"
CORRUPT_MODES = ("fail", "skip", "report")


class SlicePartition(InputPartition):
    def __init__(self, value: SegmentSlice) -> None:
        super().__init__(value)


def _nanos(value: Any) -> int | None:
    """A timestamp literal as epoch ns (naive ones are UTC, as the session time zone is)."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        delta = value - datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    if isinstance(value, int):
        return value
    return None


def apply_filter(bounds: Bounds, f: Filter) -> bool:
    """Narrow ``bounds`` by one pushed filter; True when the filter is then fully handled by the source."""
    column = f.attribute[0] if len(f.attribute) == 1 else None
    if column == "recording_id":
        if isinstance(f, EqualTo) and isinstance(f.value, int):
            bounds.only_recordings([f.value])
            return True
        if isinstance(f, In) and all(isinstance(v, int) for v in f.value):
            bounds.only_recordings(f.value)
            return True
        return _range(f, lambda low, high: bounds.only_recordings_between(low, high))
    if column == "position":
        return _range(f, bounds.positions)
    if column == "timestamp":
        value = _nanos(getattr(f, "value", None))
        if value is None:
            return False
        # Narrowed to whole microseconds around the literal; Spark still applies the exact filter.
        if isinstance(f, GreaterThan | GreaterThanOrEqual):
            bounds.times(low=value - 1000)
        elif isinstance(f, LessThan | LessThanOrEqual):
            bounds.times(high=value + 1000)
        elif isinstance(f, EqualTo):
            bounds.times(value - 1000, value + 1000)
        return False
    return False


def _range(f: Filter, narrow: Any) -> bool:
    value = getattr(f, "value", None)
    if not isinstance(value, int) or isinstance(value, bool):
        return False
    if isinstance(f, EqualTo):
        narrow(value, value + 1)
    elif isinstance(f, GreaterThan):
        narrow(value + 1, INT64_MAX)
    elif isinstance(f, GreaterThanOrEqual):
        narrow(value, INT64_MAX)
    elif isinstance(f, LessThan):
        narrow(0, value)
    elif isinstance(f, LessThanOrEqual):
        narrow(0, value + 1)
    else:
        return False
    return True


class RecordingReader(DataSourceReader):
    def __init__(self, path: str, options: dict[str, str]) -> None:
        self.path = path
        self.corrupt = options.get("corrupt", "fail").lower()
        if self.corrupt not in CORRUPT_MODES:
            raise ValueError(f"option corrupt={self.corrupt!r}: expected one of {', '.join(CORRUPT_MODES)}")
        self.bounds = Bounds()
        dataset = options.get("dataset")
        if dataset:
            self.bounds.only_recordings(recordings.dataset_recordings(Path(path), dataset))

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        if self.corrupt == "report":
            return filters  # the report's columns are not the messages'
        return [f for f in filters if not apply_filter(self.bounds, f)]

    def partitions(self) -> Sequence[InputPartition]:
        planned = recordings.plan(self.path, self.bounds)
        return [SlicePartition(s) for s in planned.slices]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is None:
            return  # no slice planned: Spark reads one empty partition in place of none
        yield from recordings.read_slice(partition.value, self.corrupt)


class RecordingDataSource(DataSource):
    """``spark.read.format("aeron-recording").load(ARCHIVE_DIR)``: see the module's doc."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        report = self.options.get("corrupt", "fail").lower() == "report"
        return from_arrow_schema(recordings.CORRUPT_SCHEMA if report else recordings.SCHEMA)

    def reader(self, schema: StructType) -> DataSourceReader:
        path = self.options.get("path")
        if not path:
            raise ValueError("load(ARCHIVE_DIR): the archive directory to read")
        return RecordingReader(path, dict(self.options))
