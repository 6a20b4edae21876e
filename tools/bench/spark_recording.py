#!/usr/bin/env python3
"""Recordings read by Spark (the ``aeron-recording`` source) against a replay through the archive into a Python
subscriber, in one run, as one JSON line.

Records ``--messages`` messages of ``--size`` bytes (every ``--fragmented``-th one 3 KiB, so fragmented) from a
Python publication with our archive on an embedded driver (IPC, 1 MiB terms, ``--segment-mib`` segments), then:
- ``replay``: the whole recording replayed through the archive into a Python subscriber (a ``FragmentAssembler``
  counting messages), the driver and archive in this process;
- Spark, with the driver stopped (files only): rows/s into a DataFrame ``count()`` and into Parquet, on
  ``local[2]`` and, unless ``--cluster-workers 0``, on a standalone cluster of that many 1-core workers on
  loopback started here. The first Spark run of a session (JVM warm-up, Python workers starting) is reported
  apart as ``cold``; the figures are the best warm run of ``--repeat``.
``prebuilt_count``: the same count over a source that reads nothing (prebuilt batches of the same rows, payload
of the mean size, in as many partitions): what Spark alone costs per row on the Python data source path, so the
ceiling of any reader. Ratios: each Spark rate against the replay's. The load average is printed too: every figure moves with it.

``--verify`` records instead messages of mixed sizes (0 B to 3 KiB, about a twentieth fragmented) and, after it, a
session that joined late (its recording starts mid-term, a tenth as many messages), and checks message for message
that the data source on ``local[2]`` and on the standalone cluster (unless ``--cluster-workers 0``) gives what a
full replay of each recording delivers: per message, in order, its payload's length and CRC32 (Spark's ``crc32``,
zlib's on the replay side) and its reserved value. Exit 1 when they differ.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import shutil
import sys
import tempfile
import time
import zlib
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.recorded_streams import Message, RecordingEnv, Session, record, recording_archive, replay
from tools.bench.spark_loss import best_of

FRAGMENTED_SIZE = 3 * 1024


def make_messages(count: int, size: int, fragmented_every: int) -> list[tuple[bytes, int]]:
    small, large = bytes(range(256)) * (size // 256 + 1), bytes(FRAGMENTED_SIZE)
    small = small[:size]
    return [
        (large if fragmented_every and i % fragmented_every == fragmented_every - 1 else small, i)
        for i in range(count)
    ]


MIXED_SIZES = (0, 1, 8, 32, 100, 200, 1000, 1400, 3000)  # a 1408-byte mtu: 1400 and 3000 fragment
MIXED_WEIGHTS = (2, 10, 30, 30, 10, 6, 4, 3, 3)


class MixedMessages(Sequence[Message]):
    """``count`` messages of ``MIXED_SIZES`` (by ``MIXED_WEIGHTS``), made when asked for (10 M do not sit in
    memory); reserved values ``first_reserved + i``."""

    def __init__(self, count: int, first_reserved: int) -> None:
        self.count, self.first_reserved = count, first_reserved
        self.cumulative = np.cumsum(MIXED_WEIGHTS).tolist()
        self.blob = bytes(range(256)) * 13

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.count))]
        pick = (i * 2654435761 >> 7) % self.cumulative[-1]  # a fixed scatter of the sizes
        size = MIXED_SIZES[bisect.bisect_right(self.cumulative, pick)]
        start = i % 251
        return self.blob[start : start + size], self.first_reserved + i


class Digests:
    """Per message, in order: payload length, CRC32, reserved value (what the round trip compares)."""

    def __init__(self) -> None:
        self.lengths, self.crcs, self.reserved = array("q"), array("q"), array("q")

    def on_message(self, buffer: Any, offset: int, length: int, header: Any) -> None:
        self.lengths.append(length)
        self.crcs.append(zlib.crc32(buffer.view[offset : offset + length]))
        self.reserved.append(header.reserved_value)

    def arrays(self) -> tuple[np.ndarray, ...]:
        return tuple(np.frombuffer(a, np.int64) for a in (self.lengths, self.crcs, self.reserved))


Replayed = dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]


def replay_digests(env: RecordingEnv, recording_ids: list[int]) -> Replayed:
    """Each recording replayed in full through the archive: per message its length, CRC32 and reserved value."""
    replayed = {}
    for recording_id in recording_ids:
        digests = Digests()
        replay(env, recording_id, digests.on_message)
        replayed[recording_id] = digests.arrays()
    return replayed


def verify(replayed: Replayed, archive_dir: Path, master: str, segment_length: int) -> dict[str, Any]:
    """The data source's rows on ``master`` against the full replays, message for message; also how many messages
    straddle a segment boundary (the next message starts in a later segment than this one's first byte)."""
    from pyspark.sql import functions as F

    from driver.analysis.recording_export import read_recordings, recording_session

    spark = recording_session(master)
    try:
        table = (
            read_recordings(spark, str(archive_dir))
            .select(
                "recording_id",
                "position",
                F.length("payload").alias("length"),
                F.crc32("payload").alias("crc"),
                "reserved_value",
            )
            .toArrow()
            .sort_by([("recording_id", "ascending"), ("position", "ascending")])
        )
    finally:
        spark.stop()
    ids = table.column("recording_id").to_numpy()
    result: dict[str, Any] = {"equal": True, "recordings": {}}
    for recording_id, (lengths, crcs, reserved) in replayed.items():
        mine = ids == recording_id
        got = [table.column(c).to_numpy()[mine].astype(np.int64) for c in ("length", "crc", "reserved_value")]
        positions = table.column("position").to_numpy()[mine]
        same = len(got[0]) == len(lengths) and all(
            np.array_equal(a, b) for a, b in zip(got, (lengths, crcs, reserved), strict=True)
        )
        result["recordings"][recording_id] = {
            "replayed": len(lengths),
            "read": len(got[0]),
            "equal": bool(same),
            "fragmented": int((lengths > 1376).sum()),
            "first_position": int(positions[0]) if len(positions) else None,
            "across_segments": int(
                (positions[:-1] // segment_length != (positions[1:] - 1) // segment_length).sum()
            ),
        }
        result["equal"] &= bool(same)
    return result


def prebuilt_source(rows: int, partitions: int, payload_size: int) -> Any:
    """A Spark source of the recording source's schema that reads nothing: each of ``partitions`` partitions yields
    one prebuilt batch of ``payload_size``-byte payloads, again and again, ``rows`` in all. What Spark alone
    costs per row on the Python data source path: the ceiling of any source of these rows."""
    import numpy as np
    import pyarrow as pa
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
    from pyspark.sql.pandas.types import from_arrow_schema

    from driver.analysis.recordings import BATCH_BYTES, SCHEMA

    per_batch = max(BATCH_BYTES // (payload_size + 32), 1)

    class Reader(DataSourceReader):
        def partitions(self) -> list[InputPartition]:
            share = -(-rows // partitions)
            return [InputPartition(min(share, rows - k * share)) for k in range(partitions)]

        def read(self, partition: InputPartition) -> Any:
            n = min(per_batch, partition.value)
            offsets = pa.py_buffer(np.arange(n + 1, dtype=np.int32) * payload_size)
            payload = pa.BinaryArray.from_buffers(
                pa.binary(), n, [None, offsets, pa.py_buffer(bytes(n * payload_size))]
            )
            longs, ints = pa.array(np.arange(n, dtype=np.int64)), pa.array(np.zeros(n, np.int32))
            stamps = longs.cast(SCHEMA.field("timestamp").type)
            batch = pa.RecordBatch.from_arrays(
                [longs, ints, ints, longs, stamps, longs, payload], schema=SCHEMA
            )
            left = partition.value
            while left > 0:
                yield batch if left >= n else batch.slice(0, left)
                left -= n

    class Prebuilt(DataSource):
        @classmethod
        def name(cls) -> str:
            return "prebuilt-batches"

        def schema(self) -> Any:
            return from_arrow_schema(SCHEMA)

        def reader(self, schema: Any) -> DataSourceReader:
            return Reader()

    return Prebuilt


def spark_rates(archive_dir: Path, out: Path, master: str, repeat: int, recording_id: int) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from driver.analysis.recording_export import read_recordings, recording_session

    spark = recording_session(master)
    try:

        def count() -> int:
            return int(
                read_recordings(spark, str(archive_dir)).where(F.col("recording_id") == recording_id).count()
            )

        def parquet() -> int:
            df = read_recordings(spark, str(archive_dir)).where(F.col("recording_id") == recording_id)
            df.write.mode("overwrite").parquet(str(out))
            return int(spark.read.parquet(str(out)).count())

        def prebuilt() -> int:
            return int(spark.read.format("prebuilt-batches").load().count())

        cold = best_of(1, count)
        figures: dict[str, Any] = {"cold_count_seconds": cold["seconds"]}
        df = read_recordings(spark, str(archive_dir)).where(F.col("recording_id") == recording_id)
        partitions = df.rdd.getNumPartitions()
        payload_size = int(df.select(F.avg(F.length("payload"))).first()[0])
        spark.dataSource.register(prebuilt_source(cold["entries"], partitions, payload_size))
        figures["prebuilt_payload_bytes"] = payload_size
        for name, run in (("count", count), ("prebuilt_count", prebuilt), ("parquet", parquet)):
            warm = best_of(repeat, run)
            figures[name] = {**warm, "rows_per_s": warm.pop("entries_per_s"), "rows": warm.pop("entries")}
    finally:
        spark.stop()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--messages", type=int, default=1_000_000, help="default 1,000,000 (10000000: the full figure)"
    )
    parser.add_argument("--size", type=int, default=100, help="message bytes (default 100)")
    parser.add_argument("--fragmented", type=int, default=100, help="every Nth message 3 KiB (0: none)")
    parser.add_argument("--segment-mib", type=int, default=64, help="segment file length (default 64 MiB)")
    parser.add_argument("--repeat", type=int, default=3, help="warm Spark runs of each kind (best)")
    parser.add_argument(
        "--cluster-workers", type=int, default=2, help="1-core workers of the cluster (0: none)"
    )
    parser.add_argument("--dir", type=Path, help="work here (kept) instead of in a temporary dir")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="mixed sizes, a late session; the round trip checked message by message",
    )
    args = parser.parse_args()

    work = args.dir or Path(tempfile.mkdtemp(prefix="spark-recording-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    try:
        started = time.perf_counter()
        counted = 0
        verified: dict[str, Any] = {}

        def on_message(*_: Any) -> None:
            nonlocal counted
            counted += 1

        with recording_archive(work, term_length=1 << 20, segment_length=args.segment_mib << 20) as env:
            if args.verify:
                late = Session(MixedMessages(args.messages // 10 + 1001, 1 << 40), late=1001)
                recording_id, late_id = record(env, [Session(MixedMessages(args.messages, 0)), late])
            else:
                messages = make_messages(args.messages, args.size, args.fragmented)
                recording_id = record(env, [Session(messages)])[0]
                del messages
            record_s = time.perf_counter() - started
            print(
                f"spark_recording: recorded {args.messages:,d} messages in {record_s:.1f} s", file=sys.stderr
            )

            def run_replay() -> int:
                nonlocal counted
                counted = 0
                replay(env, recording_id, on_message)
                return counted

            replayed = best_of(1, run_replay)
            if args.verify:
                replayed_digests = replay_digests(env, [recording_id, late_id])
        replay_figures = {
            **replayed,
            "rows_per_s": replayed.pop("entries_per_s"),
            "rows": replayed.pop("entries"),
        }
        print(f"spark_recording: replay {replay_figures}", file=sys.stderr)

        archive_dir = work / "archive"
        if args.verify:
            verified["local[2]"] = verify(replayed_digests, archive_dir, "local[2]", args.segment_mib << 20)
            print(f"spark_recording: round trip on local[2] {verified['local[2]']}", file=sys.stderr)
        spark: dict[str, dict[str, Any]] = {"local[2]": spark_rates(archive_dir, work / "out.parquet", "local[2]",
                                                                     args.repeat, recording_id)}  # fmt: skip
        if args.cluster_workers:
            from harness.spark_cluster import spark_cluster

            cluster_name = f"standalone, {args.cluster_workers} workers of 1 core"
            with spark_cluster(work / "cluster", workers=args.cluster_workers) as cluster:
                if args.verify:
                    verified[cluster_name] = verify(
                        replayed_digests, archive_dir, cluster.master_url, args.segment_mib << 20
                    )
                    print(
                        f"spark_recording: round trip on {cluster_name} {verified[cluster_name]}",
                        file=sys.stderr,
                    )
                spark[cluster_name] = spark_rates(
                    archive_dir, work / "out.parquet", cluster.master_url, args.repeat, recording_id
                )
        if args.verify and not all(result["equal"] for result in verified.values()):
            print("spark_recording: the data source differs from the replay", file=sys.stderr)
            return 1
        for master, figures in spark.items():
            print(f"spark_recording: {master}: {figures}", file=sys.stderr)
            for kind in ("count", "parquet"):
                if figures[kind]["rows"] != replay_figures["rows"]:
                    print(
                        f"spark_recording: {master} {kind}: {figures[kind]['rows']} rows, the replay "
                        f"{replay_figures['rows']}",
                        file=sys.stderr,
                    )
                    return 1
        ratios: dict[str, float] = {}
        for master, figures in spark.items():
            for kind in ("count", "parquet"):
                ratios[f"{master} {kind} / replay"] = round(
                    figures[kind]["rows_per_s"] / replay_figures["rows_per_s"], 3
                )
            ratios[f"{master} prebuilt_count (Spark alone) / replay"] = round(
                figures["prebuilt_count"]["rows_per_s"] / replay_figures["rows_per_s"], 3
            )
        print(
            json.dumps(
                {
                    "bench": "spark_recording",
                    "messages": args.messages,
                    "size": args.size,
                    "fragmented_every": args.fragmented,
                    "segment_mib": args.segment_mib,
                    "record_seconds": round(record_s, 2),
                    "replay_into_python": replay_figures,
                    "spark": spark,
                    "ratios": ratios,
                    **({"round_trip": verified} if args.verify else {}),
                    "cpus": os.cpu_count(),
                    "load_1m_start": round(load, 2),
                    "load_1m_end": round(os.getloadavg()[0], 2),
                }
            )
        )
        return 0
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
