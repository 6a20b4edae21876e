"""The archive's recordings as a Spark DataFrame (driver/analysis/recording_source.py): read from the files
alone, message for message what a full replay through the archive delivers to a Python subscriber; slices open
only the segment files they need; damage is an error naming file and position, or skipped and counted."""

from __future__ import annotations

import json
import os
import random
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyspark")

from pyspark.errors import PySparkException
from pyspark.sql import functions as F

from driver.analysis import recordings
from driver.analysis.recording_export import read_recordings, recording_session
from driver.archive.catalog import Catalog
from driver.archive.checksums import read_checksums
from driver.archive.client import SourceLocation
from driver.archive.recording_index import ENTRY_DTYPE
from driver.archive.segment_file import segment_path, segment_position
from driver.concurrent.frame_checksums import frame_checksums
from harness.recorded_streams import (
    IPC,
    Message,
    RecordingEnv,
    Session,
    record,
    recording_archive,
    replay_messages,
)
from harness.spark_cluster import stop_session
from harness.wait import wait_for
from tests.support.file_opens import file_opens
from tests.support.scratch import scratch_dir

MESSAGES = int(os.environ.get("RECORDING_SOURCE_MESSAGES", "200000"))
SIZES = (0, 1, 8, 32, 100, 200, 1000, 1400, 3000, 8000)  # 1376 bytes fit a 1408-byte frame: the rest fragment
WEIGHTS = (2, 10, 30, 30, 10, 6, 4, 3, 3, 2)
PAUSE_EVERY = MESSAGES // 8
SEGMENT_LENGTH = 2 << 20  # about 40 segment files (partitions) for 200,000 messages
PAUSE_S = 0.05  # idle gaps: the sidecar index marks them, so times step between chunks


def messages(rng: random.Random, count: int, seed_value: int) -> list[Message]:
    sizes = rng.choices(SIZES, WEIGHTS, k=count)
    blob = rng.randbytes(max(SIZES))
    return [(blob[i % 97 : i % 97 + size], seed_value + i) for i, size in enumerate(sizes)]


@dataclass
class Recorded:
    archive_dir: Path
    ids: list[int]
    replayed: dict[int, list[Message]]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    """Three recordings: one from its publication's start, one of a session that joined late (its start is not
    a term's), one small; mixed sizes, a fifth of the bytes in fragmented messages; idle gaps now and then."""
    rng = random.Random(44)
    with scratch_dir(tmp_path_factory, "recording-source") as base:
        with recording_archive(base, segment_length=SEGMENT_LENGTH) as env:
            ids = record(
                env,
                [
                    Session(messages(rng, MESSAGES, 0), between=_pauses),
                    Session(messages(rng, MESSAGES // 4, 1 << 40), late=1001, between=_pauses),
                    Session(messages(rng, 10, 2 << 40)),
                ],
            )
            replayed = {r: replay_messages(env, r) for r in ids}
        yield Recorded(base / "archive", ids, replayed)


def _pauses(i: int) -> None:
    if i and i % PAUSE_EVERY == 0:
        time.sleep(PAUSE_S)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = recording_session("local[2]")
    yield session
    stop_session(session)


@pytest.mark.slow
def test_the_data_source_equals_a_full_replay_message_for_message(recorded: Recorded, spark: Any) -> None:
    df = read_recordings(spark, str(recorded.archive_dir))
    assert df.rdd.getNumPartitions() > 10  # a partition per segment file
    table = df.toArrow().sort_by([("recording_id", "ascending"), ("position", "ascending")])
    columns = {name: table.column(name).to_pylist() for name in table.column_names}
    got: dict[int, list[Message]] = {}
    for recording_id, payload, reserved in zip(
        columns["recording_id"], columns["payload"], columns["reserved_value"], strict=True
    ):
        got.setdefault(recording_id, []).append((payload, reserved))
    assert sorted(got) == recorded.ids
    for recording_id in recorded.ids:
        expected = recorded.replayed[recording_id]
        assert len(got[recording_id]) == len(expected), recording_id
        assert got[recording_id] == expected, recording_id
    assert len(recorded.replayed[recorded.ids[0]]) == MESSAGES
    late = recorded.replayed[recorded.ids[1]]
    assert late[0][1] == (1 << 40) + 1001  # the late session's recording starts with its 1002nd message
    fragmented = sum(1 for payload, _ in recorded.replayed[recorded.ids[0]] if len(payload) > 1376)
    assert fragmented > MESSAGES // 20
    with Catalog(recorded.archive_dir, read_only=True) as catalog:
        descriptors = {e.recording_id: e.descriptor for e in catalog}
    assert descriptors[recorded.ids[1]].start_position % descriptors[recorded.ids[1]].term_buffer_length
    identities = set(zip(columns["recording_id"], columns["session_id"], columns["stream_id"], strict=True))
    assert identities == {(r, d.session_id, d.stream_id) for r, d in descriptors.items()}
    first = [
        (p, t) for r, p, t in zip(columns["recording_id"], columns["position"], columns["timestamp"], strict=True)
        if r == recorded.ids[0]
    ]  # fmt: skip
    stamps = [t for _, t in first]
    assert None not in stamps[:-1] and stamps[:-1] == sorted(stamps[:-1])
    positions = [p for p, _ in first]
    assert positions == sorted(set(positions)) and positions[0] == descriptors[recorded.ids[0]].start_position


@pytest.mark.slow
def test_small_batches_give_the_replayed_messages_and_the_default_batches_times(recorded: Recorded) -> None:
    """Outside Spark: every slice read in batches of about 64 KiB (the cut between any two messages, fragmented
    ones kept whole, segment boundaries mid-message, padding at term ends) gives the replay's messages, with the
    positions and interpolated times of the default batches."""
    planned = recordings.plan(recorded.archive_dir)

    def read(batch_bytes: int) -> dict[int, list[tuple[int, Any, bytes, int]]]:
        rows: dict[int, list[tuple[int, Any, bytes, int]]] = {}
        for s in planned.slices:
            for batch in recordings.SliceReader(s, batch_bytes=batch_bytes).batches():
                rows.setdefault(s.recording.recording_id, []).extend(
                    zip(*(batch.column(c).to_pylist() for c in ("position", "timestamp", "payload",
                                                                 "reserved_value")), strict=True)
                )  # fmt: skip
        return rows

    small, default = read(64 * 1024), read(recordings.BATCH_BYTES)
    assert small == default
    for recording_id in recorded.ids:
        assert [(p, r) for _, _, p, r in small[recording_id]] == recorded.replayed[recording_id]
        positions = [p for p, _, _, _ in small[recording_id]]
        assert positions == sorted(set(positions))


def test_a_filter_no_recording_passes_reads_no_rows(recorded: Recorded, spark: Any) -> None:
    df = read_recordings(spark, str(recorded.archive_dir)).where(F.col("recording_id") == 1000)
    assert df.count() == 0
    assert read_recordings(spark, str(recorded.archive_dir)).where(F.col("position") < 0).count() == 0


def test_a_position_or_time_slice_opens_only_the_segment_files_it_needs(
    recorded: Recorded, spark: Any
) -> None:
    first = recorded.ids[0]
    all_rows = read_recordings(spark, str(recorded.archive_dir)).where(F.col("recording_id") == first)
    table = all_rows.select("position", "timestamp").toArrow().sort_by("position")
    positions = table.column("position").to_pylist()
    stamped = list(zip(positions, table.column("timestamp").to_pylist(), strict=True))
    low, high = positions[len(positions) // 3], positions[len(positions) // 3 + 500]
    with Catalog(recorded.archive_dir, read_only=True) as catalog:
        d = catalog.descriptor(first)
    assert d is not None

    def segment(p: int) -> int:
        return segment_position(d.start_position, p, d.term_buffer_length, d.segment_file_length).index

    wanted = {f"{first}-{k}.rec" for k in range(segment(low), segment(high) + 1)}
    with file_opens(recorded.archive_dir) as opened:
        sliced = read_recordings(spark, str(recorded.archive_dir)).where(
            (F.col("recording_id") == first) & (F.col("position") >= low) & (F.col("position") <= high)
        )
        count = sliced.count()
    assert count == 501
    segments_opened = {name for name in opened if name.endswith(".rec")}
    assert segments_opened <= wanted | {f"{first}-{segment(high) + 1}.rec"}  # the last may finish in the next
    assert wanted <= segments_opened
    assert len(segments_opened) < len(list(recorded.archive_dir.glob(f"{first}-*.rec"))) // 4

    # A time slice: the messages recorded between two of the idle gaps.
    t0, t1 = stamped[PAUSE_EVERY + 10][1], stamped[2 * PAUSE_EVERY - 10][1]
    expected = sum(1 for _, t in stamped if t0 <= t <= t1)
    with file_opens(recorded.archive_dir) as opened:
        by_time = read_recordings(spark, str(recorded.archive_dir)).where(
            (F.col("timestamp") >= F.lit(t0)) & (F.col("timestamp") <= F.lit(t1))
        )
        assert by_time.count() == expected
        assert by_time.select("recording_id").distinct().collect()[0][0] in recorded.ids
    time_segments = {name for name in opened if name.endswith(".rec")}
    spanned = {segment(p) for p, t in stamped if t0 <= t <= t1}
    assert len(time_segments) <= len(spanned) + 6  # a few segments of the other recordings at the same times
    assert len(time_segments) < len(list(recorded.archive_dir.glob("*.rec"))) // 3


def frame(term_id: int, term_offset: int, session: int, stream: int, payload: bytes, flags: int) -> bytes:
    header = struct.pack(
        "<iBBHiiiiq", 32 + len(payload), 0, flags, 1, term_offset, session, stream, term_id, 7
    )
    return (header + payload).ljust((32 + len(payload) + 31) & -32, b"\0")


def pad(term_id: int, term_offset: int, session: int, stream: int, length: int) -> bytes:
    return struct.pack("<iBBHiiiiq", length, 0, 0xC0, 0, term_offset, session, stream, term_id, 0)


def test_a_message_across_a_segment_boundary_belongs_to_the_slice_where_it_starts(
    tmp_path: Path, spark: Any
) -> None:
    """Frames written by hand: a fragmented message whose first fragment ends term (and segment) 0 and whose
    last starts segment 1; a replay through our archive and the data source both see it whole, once."""
    term = segment = 64 * 1024
    archive_dir = tmp_path / "archive"
    archive_dir.mkdir()
    session, stream = 99, 5
    whole = bytes(range(256)) * 12  # 3072 bytes: three fragments of 1024
    body = bytearray()
    offset = 0
    while offset < term - 2 * 1056:  # fill term 0 up to the last two 1056-byte frames
        body += frame(0, offset, session, stream, b"x" * 992, 0xC0)
        offset += 1024
    body += frame(0, offset, session, stream, b"y" * 1, 0xC0)
    offset += 64
    body += frame(0, offset, session, stream, whole[:1024], 0x80)
    offset += 1056
    body += pad(0, offset, session, stream, term - offset)
    tail = frame(1, 0, session, stream, whole[1024:2048], 0x00) + frame(
        1, 1056, session, stream, whole[2048:], 0x40
    )
    tail += frame(1, 2112, session, stream, b"after", 0xC0)
    stop = term + len(tail)
    with Catalog(archive_dir, max_entries=4) as catalog:
        catalog.add_new_recording(
            start_position=0, start_timestamp=1, initial_term_id=0, segment_file_length=segment,
            term_buffer_length=term, mtu_length=1408, session_id=session, stream_id=stream,
            stripped_channel=IPC, original_channel=IPC, source_identity=IPC,
        )  # fmt: skip
        catalog.recording_stopped(0, stop, 2)
    segment_path(archive_dir, 0, 0).write_bytes(bytes(body).ljust(segment, b"\0"))
    segment_path(archive_dir, 0, 1).write_bytes(tail.ljust(segment, b"\0"))
    df = read_recordings(spark, str(archive_dir))
    assert df.rdd.getNumPartitions() == 2
    rows = df.orderBy("position").select("position", "payload").collect()
    payloads = [bytes(r[1]) for r in rows]
    assert payloads[-3:] == [b"y", whole, b"after"]
    assert rows[-2][0] == offset - 1056 and rows[-1][0] == term + 2112
    with recording_archive(tmp_path) as env:
        replayed = replay_messages(env, 0)
    assert [p for p, _ in replayed] == payloads


def record_small(env: RecordingEnv, count: int = 300) -> int:
    rng = random.Random(7)
    return record(env, [Session(messages(rng, count, 0))])[0]


def test_damage_fails_the_read_naming_file_and_position_or_is_skipped_and_counted(
    tmp_path: Path, spark: Any
) -> None:
    with recording_archive(tmp_path) as env:
        victim_id = record_small(env)
        other_id = record_small(env)
        d = env.client.list_recording(victim_id)
        expected = replay_messages(env, victim_id)
    sums = read_checksums(env.archive_dir, victim_id)
    assert sums is not None
    victim = sums[len(sums) // 2]
    position = int(victim["position"])
    index, offset = segment_position(d.start_position, position, d.term_buffer_length, d.segment_file_length)
    path = segment_path(env.archive_dir, victim_id, index)
    with open(path, "r+b") as f:
        f.seek(offset + 32)
        f.write(b"\xff" if f.read(1) != b"\xff" else b"\x00")
    with pytest.raises(PySparkException) as failed:
        read_recordings(spark, str(env.archive_dir)).count()
    assert f"{path}: position {position}: checksum mismatch" in str(failed.value)
    skipped = read_recordings(spark, str(env.archive_dir), corrupt="skip")
    kept = skipped.where(F.col("recording_id") == victim_id).count()
    with open(path, "rb") as f:  # the damaged block's messages are left out: its checksum covers them all
        f.seek(offset)
        in_run = len(frame_checksums(f.read(int(victim["length"])), position))
    assert len(expected) - in_run - 2 <= kept < len(expected)
    assert skipped.where(F.col("recording_id") == other_id).count() == 300
    report = read_recordings(spark, str(env.archive_dir), corrupt="report").collect()
    assert [(r.recording_id, r.file, r.position) for r in report] == [(victim_id, str(path), position)]
    assert "checksum mismatch" in report[0].reason
    # An entry the catalog marks invalid (as purge does) is not read.
    with Catalog(env.archive_dir) as catalog:
        catalog.invalidate(victim_id)
    assert {
        r[0] for r in read_recordings(spark, str(env.archive_dir)).select("recording_id").distinct().collect()
    } == {other_id}


def test_a_live_recording_is_read_up_to_its_recorded_position_at_planning(tmp_path: Path, spark: Any) -> None:
    with recording_archive(tmp_path) as env:
        stream_id = next(env.stream_ids)
        publication = env.aeron.add_exclusive_publication(IPC, stream_id)
        env.client.start_recording(IPC, stream_id, SourceLocation.LOCAL)
        wait_for(lambda: publication.is_connected, 10, "the recording's subscription")
        for i in range(500):
            wait_for(lambda i=i: publication.offer(i.to_bytes(4, "little") * 50) > 0, 10, "offer")
        end = publication.position
        recording_id = env.client.find_last_matching_recording(0, IPC, stream_id, publication.session_id)
        wait_for(lambda: env.client.get_recording_position(recording_id) == end, 10, "recorded")
        planned = recordings.plan(env.archive_dir)
        assert planned.recordings[0].end_position == end  # stop position still -1: the sidecars say how far
        df = read_recordings(spark, str(env.archive_dir))
        assert df.count() == 500
        for i in range(500, 600):
            wait_for(lambda i=i: publication.offer(i.to_bytes(4, "little") * 50) > 0, 10, "offer")
        wait_for(
            lambda: env.client.get_recording_position(recording_id) == publication.position, 10, "recorded"
        )
        assert read_recordings(spark, str(env.archive_dir)).count() == 600
        publication.close()


def test_bad_options_and_paths_are_named(tmp_path: Path, spark: Any) -> None:
    with pytest.raises(PySparkException, match="not an archive directory"):
        read_recordings(spark, str(tmp_path)).count()
    with pytest.raises(PySparkException, match="corrupt='sometimes'"):
        read_recordings(spark, str(tmp_path), corrupt="sometimes").count()


def test_interpolated_times_follow_the_index_and_jump_over_idle_gaps() -> None:
    entries = np.array([(0, 1000, 0), (100, 2000, 1), (100, 9000, 1), (300, 11000, 2)], ENTRY_DTYPE)
    index = recordings._index_around(entries, 0, 400)
    times, valid = recordings.interpolate_times(index, np.array([0, 50, 100, 200, 300, 400]))
    assert times[:5].tolist() == [1000, 1500, 9000, 10000, 11000]
    assert valid.tolist() == [True, True, True, True, True, False]


def test_a_service_data_set_names_its_recordings(tmp_path: Path) -> None:
    folder = tmp_path / "datasets"
    folder.mkdir()
    manifest = {"id": "0123456789ab", "name": "morning", "recordings": [{"recording_id": 3}, {"recording_id": 5}]}
    (folder / "0123456789ab.json").write_text(json.dumps(manifest))
    assert recordings.dataset_recordings(tmp_path, "morning") == {3, 5}
    assert recordings.dataset_recordings(tmp_path, "0123456789ab") == {3, 5}
    with pytest.raises(FileNotFoundError, match="no data set 'evening'"):
        recordings.dataset_recordings(tmp_path, "evening")
