"""An archive directory's recordings read as messages, from the files alone (no driver, no archive process): the
planning and the reading behind the Spark data source (``recording_source``) and ``mediadriver archive export``.

Planning reads the catalog (read-only), each recording's sidecar index and checksums: one ``SegmentSlice`` per
segment file a query needs, with the positions of it to read. Filters on recording id, position and time narrow
the slices: time through the sidecar index, so a slice of a day opens the segment files of that slice only. A
recording without a stop position is read up to what the recorder had written when the plan was made: the end of
the last frame its checksums (else its index) name, else the recovery scan's end (docs/archive.md section 7).

Reading maps one segment file read-only and walks its frames in one native call (the checksum walk, which also
gives each frame's CRC32C for the check against ``<id>.crc``). Frames are checked (type, term id and offset for the
position, session and stream, each field one gather over the mapping's words); messages are the runs of DATA
frames from a BEGIN to an END fragment, and their payloads are copied into one buffer per batch by one native call
(``payload_gather``), so no Python step is taken per message or per byte. A message belongs to
the slice where its first frame is: the slice reads on into the next segment file to finish it, and skips the
fragments at its own start that finish a message begun before it (or before the recording joined).
"""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from driver.analysis.payload_gather import gather_payloads
from driver.archive.catalog import CATALOG_FILE_NAME, Catalog, CatalogError
from driver.archive.checksums import CHECKSUM_MAGIC, READABLE_VERSIONS, checksum_path, read_checksums
from driver.archive.checksums import HEADER as CHECKSUM_HEADER
from driver.archive.recording_index import NULL_TIME, read_index
from driver.archive.segment_file import (
    recover_stop_position,
    segment_base_position,
    segment_path,
    segment_position,
)
from driver.concurrent.frame_checksums import ENTRY_DTYPE as CHECKSUM_DTYPE
from driver.concurrent.frame_checksums import first_mismatch, frame_checksums
from driver.concurrent.logbuffer.frame_descriptor import (
    BEGIN_FLAG,
    END_FLAG,
    FRAME_ALIGNMENT,
    HDR_TYPE_DATA,
    HDR_TYPE_PAD,
    HEADER_LENGTH,
)

DATASETS_DIR = "datasets"  # the record & replay service's manifests (docs/service.md section 3)
BATCH_BYTES = 8 << 20  # segment bytes per record batch
INT64_MAX = (1 << 63) - 1

# The 32-byte data frame header (docs/wire.md), read at every frame start at once.
HEADER = np.dtype(
    {
        "names": ["length", "flags", "type", "term_offset", "session_id", "stream_id", "term_id", "reserved"],
        "formats": ["<i4", "u1", "<u2", "<i4", "<i4", "<i4", "<i4", "<i8"],
        "offsets": [0, 5, 6, 8, 12, 16, 20, 24],
        "itemsize": HEADER_LENGTH,
    }
)

TIMESTAMP = pa.timestamp("us", tz="UTC")
SCHEMA = pa.schema(
    [
        pa.field("recording_id", pa.int64(), False),
        pa.field("session_id", pa.int32(), False),
        pa.field("stream_id", pa.int32(), False),
        pa.field("position", pa.int64(), False),
        pa.field("timestamp", TIMESTAMP, True),
        pa.field("reserved_value", pa.int64(), False),
        pa.field("payload", pa.binary(), False),
    ]
)
"""One row per whole message. ``position``: the stream position of its first frame. ``timestamp``: when the
recorder wrote it, interpolated linearly (by position) between the sidecar index's entries that enclose it;
null where the recording has no index with times (a 1.15.1 recording, an index rebuilt by a scan) or past its
last entry. ``reserved_value``: that of its first frame."""

CORRUPT_SCHEMA = pa.schema(
    [
        pa.field("recording_id", pa.int64(), False),
        pa.field("file", pa.string(), False),
        pa.field("position", pa.int64(), False),
        pa.field("reason", pa.string(), False),
    ]
)
"""``corrupt=report``: one row per damaged place instead of the messages."""


class RecordingReadError(Exception):
    """A recording cannot be read as it is: a damaged frame or a checksum mismatch (names file and position)."""


class Recording(NamedTuple):
    """What reading one recording needs from its catalog entry."""

    recording_id: int
    session_id: int
    stream_id: int
    start_position: int
    end_position: int  # the stop position, or what a live recording had reached at planning
    initial_term_id: int
    term_length: int
    segment_length: int


class SegmentSlice(NamedTuple):
    """Positions [low, high) of one recording's frames in one segment file: a Spark partition."""

    archive_dir: str
    recording: Recording
    segment_index: int
    low: int
    high: int
    index: np.ndarray | None  # (position, time_ns) of the sidecar index entries around [low, high), or None
    checksummed: bool  # the recording has a checksum sidecar

    @property
    def file(self) -> str:
        return str(segment_path(self.archive_dir, self.recording.recording_id, self.segment_index))


@dataclass
class Bounds:
    """What the pushed-down filters allow: recording ids (None: any), message start positions, times (ns)."""

    recording_ids: set[int] | None = None
    recording_low: int = 0
    recording_high: int = INT64_MAX  # exclusive
    position_low: int = 0
    position_high: int = INT64_MAX  # exclusive
    time_low: int | None = None
    time_high: int | None = None  # inclusive
    empty: bool = False

    def only_recordings(self, ids: Iterable[int]) -> None:
        ids = set(ids)
        self.recording_ids = ids if self.recording_ids is None else self.recording_ids & ids

    def only_recordings_between(self, low: int = 0, high: int = INT64_MAX) -> None:
        self.recording_low = max(self.recording_low, low)
        self.recording_high = min(self.recording_high, high)

    def positions(self, low: int = 0, high: int = INT64_MAX) -> None:
        self.position_low = max(self.position_low, low)
        self.position_high = min(self.position_high, high)

    def times(self, low: int | None = None, high: int | None = None) -> None:
        if low is not None:
            self.time_low = low if self.time_low is None else max(self.time_low, low)
        if high is not None:
            self.time_high = high if self.time_high is None else min(self.time_high, high)


@dataclass
class Plan:
    slices: list[SegmentSlice] = field(default_factory=list)
    recordings: list[Recording] = field(default_factory=list)


def dataset_recordings(archive_dir: Path, dataset: str) -> set[int]:
    """The recording ids of a service data set, by id or name (its manifest, read as JSON)."""
    folder = archive_dir / DATASETS_DIR
    manifests = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            manifests.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    found = [m for m in manifests if dataset in (m.get("id"), m.get("name"))]
    if not found:
        raise FileNotFoundError(f"no data set {dataset!r} in {folder}")
    return {int(r["recording_id"]) for m in found for r in m.get("recordings", [])}


def recorded_end(archive_dir: Path, d: Any, index: np.ndarray | None) -> int:
    """How far a recording without a stop position had been written: what its sidecars vouch for (written
    after the segment bytes), else the recovery scan's end."""
    if d.stop_position >= 0:
        return int(d.stop_position)
    end = -1
    sums = read_checksums(archive_dir, d.recording_id)
    if sums is not None and len(sums):
        last = sums[-1]
        end = int(last["position"]) + ((int(last["length"]) + FRAME_ALIGNMENT - 1) & -FRAME_ALIGNMENT)
    if index is not None and len(index):
        end = max(end, int(index["position"][-1]))
    if end < 0:
        end = recover_stop_position(
            archive_dir, d.recording_id, d.start_position, d.term_buffer_length, d.segment_file_length
        )
    return max(end, int(d.start_position))


def _time_positions(index: np.ndarray, low: int | None, high: int | None) -> tuple[int, int]:
    """Positions [a, b) outside which no message's interpolated time is within [low, high]."""
    positions = np.asarray(index["position"], np.int64)
    times = np.maximum.accumulate(np.asarray(index["time_ns"], np.int64))
    a, b = 0, int(positions[-1])  # past the last entry no message has a time
    if low is not None:
        k = int(np.searchsorted(times, low, side="left"))
        if k >= len(times):
            return 0, 0
        a = int(positions[max(k - 1, 0)])
    if high is not None:
        j = int(np.searchsorted(times, high, side="right"))
        if j < len(times):
            b = min(b, int(positions[j]))
    return a, b + 1 if b == int(positions[-1]) else b


def plan(archive_dir: str | os.PathLike[str], bounds: Bounds | None = None) -> Plan:
    """The slices of the valid recordings of ``archive_dir`` that ``bounds`` let through, in id and position
    order. Opens the catalog and the sidecars of the recordings kept, read-only."""
    bounds = bounds or Bounds()
    archive = Path(archive_dir)
    if not (archive / CATALOG_FILE_NAME).is_file():
        raise FileNotFoundError(f"no {CATALOG_FILE_NAME} in {archive}: not an archive directory")
    result = Plan()
    if bounds.empty:
        return result
    with Catalog(archive, read_only=True) as catalog:
        entries = []
        for recording_id in range(catalog.count_entries):
            if not bounds.recording_low <= recording_id < bounds.recording_high or (
                bounds.recording_ids is not None and recording_id not in bounds.recording_ids
            ):
                continue
            try:
                entry = catalog.entry(recording_id)
            except CatalogError as e:
                raise RecordingReadError(f"{catalog.path}: {e}") from e
            if entry is not None and entry.valid:
                entries.append(entry.descriptor)
    for d in entries:
        index = read_index(archive, d.recording_id)
        end = recorded_end(archive, d, index)
        recording = Recording(
            d.recording_id, d.session_id, d.stream_id, d.start_position, end, d.initial_term_id,
            d.term_buffer_length, d.segment_file_length,
        )  # fmt: skip
        result.recordings.append(recording)
        timed = index is not None and len(index) > 0 and int(index["time_ns"][0]) != NULL_TIME
        low, high = max(d.start_position, bounds.position_low), min(end, bounds.position_high)
        if bounds.time_low is not None or bounds.time_high is not None:
            if not timed:
                continue  # no message has a time: none passes a time filter
            a, b = _time_positions(index, bounds.time_low, bounds.time_high)
            low, high = max(low, a), min(high, b)
        if low >= high:
            continue
        first = segment_position(d.start_position, low, d.term_buffer_length, d.segment_file_length).index
        last = segment_position(d.start_position, high - 1, d.term_buffer_length, d.segment_file_length).index
        checksummed = checksum_path(archive, d.recording_id).is_file()
        for k in range(first, last + 1):
            base = segment_base_position(d.start_position, k, d.term_buffer_length, d.segment_file_length)
            s_low, s_high = max(low, base), min(high, base + d.segment_file_length)
            result.slices.append(
                SegmentSlice(
                    str(archive), recording, k, s_low, s_high,
                    _index_around(index, s_low, s_high) if timed else None, checksummed,
                )
            )  # fmt: skip
    return result


def _index_around(index: Any, low: int, high: int) -> np.ndarray:
    """(position, time_ns) of the entries enclosing [low, high): what interpolating there needs."""
    positions = np.asarray(index["position"])
    a = max(int(np.searchsorted(positions, low, side="right")) - 1, 0)
    b = min(int(np.searchsorted(positions, high, side="left")) + 1, len(positions))
    out = np.empty((b - a, 2), np.int64)
    out[:, 0] = positions[a:b]
    out[:, 1] = np.maximum.accumulate(np.asarray(index["time_ns"][a:b], np.int64))
    return out


def interpolate_times(index: np.ndarray | None, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(time ns, valid) of messages at ``positions``: linear between the enclosing index entries (after an idle
    gap's pair of entries at one position, from the later one); not valid outside the entries."""
    if index is None or len(index) == 0 or len(positions) == 0:
        return np.zeros(len(positions), np.int64), np.zeros(len(positions), bool)
    xp, tp = index[:, 0], index[:, 1]
    k = np.searchsorted(xp, positions, side="right") - 1
    valid = (k >= 0) & (positions <= xp[-1])
    k = np.clip(k, 0, len(xp) - 1)
    k1 = np.minimum(k + 1, len(xp) - 1)
    span = xp[k1] - xp[k]
    fraction = np.where(span > 0, (positions - xp[k]) / np.where(span > 0, span, 1), 0.0)
    times = tp[k] + np.round(fraction * (tp[k1] - tp[k])).astype(np.int64)
    return times, valid


# --- reading ------------------------------------------------------------------------------------------------


class _Frames(NamedTuple):
    position: np.ndarray  # int64
    offset: np.ndarray  # int64 file offsets
    length: np.ndarray  # int64
    types: np.ndarray  # frame types
    flags: np.ndarray  # frame flags


class _Segment:
    """One segment file mapped read-only."""

    def __init__(self, path: str) -> None:
        self.path = path
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            size = os.fstat(fd).st_size
            self.map: Any = mmap.mmap(fd, size, access=mmap.ACCESS_READ) if size else b""
        finally:
            os.close(fd)
        self.size = size

    def close(self) -> None:
        if isinstance(self.map, mmap.mmap):
            self.map.close()


@dataclass
class _Problem:
    position: int
    reason: str


MAX_FRAME = 64 * 1024  # no frame is longer (the mtu's limit)


def _walk(
    segment: _Segment, s: SegmentSlice, low: int, high: int, sums: np.ndarray | None
) -> tuple[_Frames, _Problem | None]:
    """The well-formed frames of ``segment`` that start in [low, high) and the first problem that ended the walk
    early (``low`` is a frame's start; ``high`` need not be)."""
    r = s.recording
    base = segment_base_position(r.start_position, s.segment_index, r.term_length, r.segment_length)
    offset = low - base
    window_end = min(base + r.segment_length, r.end_position, high + MAX_FRAME)
    length = min(window_end - low, segment.size - offset)
    if length < min(high, window_end) - low:
        return _empty_frames(), _Problem(base + max(segment.size, offset), "segment file ends early")
    walked = frame_checksums(segment.map, low, offset, length)
    positions = walked["position"].astype(np.int64)
    lengths = walked["length"].astype(np.int64)
    end = int(positions[-1] + _aligned(lengths[-1:])[0]) if len(positions) else low
    inside = int(np.searchsorted(positions, high))
    walked, positions, lengths = walked[:inside], positions[:inside], lengths[:inside]
    offsets = positions - base
    # Header fields as words of the mapping, one gather each (frames are 32-byte aligned).
    words = np.frombuffer(segment.map, "<i4", count=segment.size // 4)
    at = offsets >> 2
    version_flags_type = words[at + 1]
    types = version_flags_type >> 16 & 0xFFFF
    problem: _Problem | None = None
    if end < min(high, window_end):
        problem = _Problem(end, "no whole frame where the recording has one")
    term_mask = r.term_length - 1
    term_offsets = positions & term_mask
    shift = r.term_length.bit_length() - 1
    is_data = types == HDR_TYPE_DATA
    bad = (types != HDR_TYPE_DATA) & (types != HDR_TYPE_PAD)
    bad |= term_offsets + _aligned(lengths) > r.term_length
    bad |= words[at + 2] != term_offsets
    term_ids = (r.initial_term_id + (positions >> shift) + (1 << 31)) % (1 << 32) - (1 << 31)  # int32 wrap
    bad |= words[at + 5] != term_ids
    bad |= is_data & ((words[at + 3] != r.session_id) | (words[at + 4] != r.stream_id))
    bad |= is_data & (lengths < HEADER_LENGTH)
    reasons = {}
    if sums is not None and len(sums) and len(positions):
        # Each checksum covers a run of whole frames (a recorded block, or one frame in a version 1 file): the
        # runs that hold walked frames are checked whole against the segment; a bad run's frames are dropped.
        span_end = int(positions[-1] + _aligned(lengths[-1:])[0])
        sum_ends = sums["position"] + _aligned(sums["length"])
        runs = sums[
            int(np.searchsorted(sum_ends, int(positions[0]), side="right")) : int(
                np.searchsorted(sums["position"], span_end, side="left")
            )
        ]
        failed = first_mismatch(segment.map, base, runs)
        if failed < len(runs):
            run = runs[failed]
            first = int(np.searchsorted(positions, int(run["position"]), side="left"))
            mismatch = np.zeros(len(positions), bool)
            mismatch[first:] = True
            reasons[first] = (
                f"checksum mismatch (a run of {int(run['length'])} bytes at {int(run['position'])})"
            )
            bad |= mismatch
    if bad.any():
        first = int(np.argmax(bad))
        header = _headers(segment.map, offsets[first : first + 1])[0]
        reason = reasons.get(first) or _describe(header, int(positions[first]), r)
        problem = _Problem(int(positions[first]), reason)
        keep = slice(0, first)
    else:
        keep = slice(0, len(positions))
    flags = version_flags_type >> 8 & 0xFF
    return _Frames(positions[keep], offsets[keep], lengths[keep], types[keep], flags[keep]), problem


def _headers(data: Any, offsets: np.ndarray) -> np.ndarray:
    blocks = np.frombuffer(data, HEADER, count=len(data) // HEADER_LENGTH)
    return blocks[offsets // FRAME_ALIGNMENT]


def _reserved(data: Any, offsets: np.ndarray) -> np.ndarray:
    """The reserved values of the frames at ``offsets``."""
    return np.frombuffer(data, "<i8", count=len(data) // 8)[(offsets >> 3) + 3]


def _aligned(lengths: np.ndarray) -> np.ndarray:
    return (lengths + FRAME_ALIGNMENT - 1) & -FRAME_ALIGNMENT


def _empty_frames() -> _Frames:
    empty = np.zeros(0, np.int64)
    return _Frames(empty, empty, empty, np.zeros(0, np.int64), np.zeros(0, np.int64))


def _describe(header: Any, position: int, r: Recording) -> str:
    frame_type, length = int(header["type"]), int(header["length"])
    if frame_type not in (HDR_TYPE_DATA, HDR_TYPE_PAD):
        return f"frame of unknown type {frame_type}"
    if (position & (r.term_length - 1)) + length > r.term_length:
        return f"frame of {length} bytes crosses the term's end"
    if int(header["term_offset"]) != position & (r.term_length - 1):
        return f"term offset {int(header['term_offset'])} does not match the position"
    if int(header["session_id"]) != r.session_id or int(header["stream_id"]) != r.stream_id:
        return f"session {int(header['session_id'])} stream {int(header['stream_id'])} is not the recording's"
    if length < HEADER_LENGTH:
        return f"data frame of {length} bytes"
    return f"term id {int(header['term_id'])} does not match the position"


def checksums_between(archive_dir: str, recording_id: int, low: int) -> np.ndarray | None:
    """The checksum entries of the runs ending after ``low`` (the sidecar mapped, found by binary search)."""
    path = checksum_path(archive_dir, recording_id)
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            header = f.read(CHECKSUM_HEADER.size)
        magic, version, entry_length, _ = CHECKSUM_HEADER.unpack(header)
    except (OSError, ValueError):
        return None
    if magic != CHECKSUM_MAGIC or version not in READABLE_VERSIONS or entry_length != CHECKSUM_DTYPE.itemsize:
        return None
    entries = (size - CHECKSUM_HEADER.size) // CHECKSUM_DTYPE.itemsize
    if entries <= 0:
        return np.zeros(0, CHECKSUM_DTYPE)
    mapped = np.memmap(path, CHECKSUM_DTYPE, "r", CHECKSUM_HEADER.size, (entries,))
    ends = mapped["position"] + _aligned(mapped["length"])
    return mapped[int(np.searchsorted(ends, low, side="right")) :]


class SliceReader:
    """Reads one slice: ``batches()`` yields record batches of ``SCHEMA``; ``problems`` holds what was skipped
    (with ``on_corrupt="skip"``); ``files_opened`` counts the segment files mapped."""

    def __init__(self, s: SegmentSlice, on_corrupt: str = "fail", batch_bytes: int = BATCH_BYTES) -> None:
        if on_corrupt not in ("fail", "skip"):
            raise ValueError(f"corrupt must be fail, skip or report, not {on_corrupt!r}")
        self.s = s
        self.on_corrupt = on_corrupt
        self.batch_bytes = batch_bytes
        self.problems: list[_Problem] = []
        self.files_opened = 0
        self._sums = (
            checksums_between(s.archive_dir, s.recording.recording_id, s.low) if s.checksummed else None
        )

    def _open(self, path: str) -> _Segment | None:
        try:
            segment = _Segment(path)
        except FileNotFoundError:
            return None
        self.files_opened += 1
        return segment

    def _problem(self, problem: _Problem, file: str) -> None:
        if self.on_corrupt == "fail":
            raise RecordingReadError(
                f"recording {self.s.recording.recording_id}: {file}: position {problem.position}: {problem.reason}"
            )
        self.problems.append(problem)

    def frames(self, segment: _Segment) -> Iterator[_Frames]:
        """The slice's good frames, in runs (a damaged stretch, when skipped, ends a run)."""
        s = self.s
        low = s.low
        while low < s.high:
            frames, problem = _walk(segment, s, low, s.high, self._sums)
            if len(frames.position):
                yield frames
            if problem is None:
                return
            self._problem(problem, segment.path)
            low = self._resume(problem.position)

    def _resume(self, position: int) -> int:
        """Where reading goes on after a damaged frame: the next frame its checksums name, else the next term."""
        s = self.s
        if self._sums is not None:
            later = self._sums["position"][self._sums["position"] > position]
            if len(later):
                return min(int(later[0]), s.high)
        return min(position - (position & (s.recording.term_length - 1)) + s.recording.term_length, s.high)

    def batches(self) -> Iterator[pa.RecordBatch]:
        s = self.s
        segment = self._open(s.file)
        if segment is None:
            self._problem(_Problem(s.low, "segment file missing"), s.file)
            return
        try:
            for frames in self.frames(segment):
                yield from self._messages(segment, frames)
        finally:
            segment.close()

    def _messages(self, segment: _Segment, f: _Frames) -> Iterator[pa.RecordBatch]:
        position, offset, length, flags = f.position, f.offset, f.length, f.flags
        data = f.types == HDR_TYPE_DATA
        if not data.all():  # padding at term ends
            position, offset, length, flags = position[data], offset[data], length[data], flags[data]
        begins = (flags & BEGIN_FLAG) != 0
        ends = (flags & END_FLAG) != 0
        message = np.cumsum(begins)  # 0: fragments that finish a message begun before this run
        last_of = np.r_[message[1:] != message[:-1], True]
        # A message is whole when its last frame carries END (and its first BEGIN, by construction).
        complete_ids = message[last_of & ends]
        whole = np.zeros(int(message[-1]) + 1 if len(message) else 1, bool)
        whole[complete_ids] = True
        whole[0] = False
        tail_open = bool(len(message)) and message[-1] > 0 and not whole[message[-1]]
        keep = whole[message]
        tail = None
        if tail_open:
            tail_start = int(np.argmax(message == message[-1]))
            tail = (position[tail_start:], offset[tail_start:], length[tail_start:])
        kept = np.flatnonzero(keep)
        if len(kept) and kept[-1] - kept[0] + 1 == len(kept):  # one run (the usual case): views, not copies
            keep = slice(int(kept[0]), int(kept[-1]) + 1)
        position, offset, length, begins = position[keep], offset[keep], length[keep], begins[keep]
        firsts = np.flatnonzero(begins)
        if len(firsts):
            yield from self._batches(segment, position, offset, length, firsts)
        if tail is not None:
            batch = self._spanning(segment, *tail)
            if batch is not None:
                yield batch

    def _batches(
        self,
        segment: _Segment,
        position: np.ndarray,
        offset: np.ndarray,
        length: np.ndarray,
        firsts: np.ndarray,
    ) -> Iterator[pa.RecordBatch]:
        """Messages (each from ``firsts[i]`` to the next first) in batches of about ``batch_bytes``."""
        s = self.s
        starts = position[firsts]
        wanted = (starts >= s.low) & (starts < s.high)
        edges = np.r_[firsts, len(position)]
        begin = 0
        count = len(firsts)
        while begin < count:
            stop = int(np.searchsorted(offset[firsts], offset[firsts[begin]] + self.batch_bytes, side="left"))
            stop = max(stop, begin + 1)
            f0, f1 = int(edges[begin]), int(edges[stop])
            payload = gather_payloads(segment.map, offset[f0:f1], length[f0:f1])
            sizes = np.add.reduceat(length[f0:f1] - HEADER_LENGTH, edges[begin:stop] - f0)
            keep = wanted[begin:stop]
            firsts_here = firsts[begin:stop]
            value_offsets = np.zeros(len(sizes) + 1, np.int32)
            np.cumsum(sizes, out=value_offsets[1:])
            payloads = pa.BinaryArray.from_buffers(
                pa.binary(), len(sizes), [None, pa.py_buffer(value_offsets), pa.py_buffer(payload)]
            )
            batch = self._batch(position[firsts_here], _reserved(segment.map, offset[firsts_here]), payloads)
            yield batch if keep.all() else batch.filter(pa.array(keep))
            begin = stop

    def _batch(self, positions: np.ndarray, reserved: np.ndarray, payloads: pa.Array) -> pa.RecordBatch:
        r = self.s.recording
        count = len(positions)
        times, valid = interpolate_times(self.s.index, positions)
        return pa.RecordBatch.from_arrays(
            [
                pa.array(np.full(count, r.recording_id, np.int64)),
                pa.array(np.full(count, r.session_id, np.int32)),
                pa.array(np.full(count, r.stream_id, np.int32)),
                pa.array(positions.astype(np.int64)),
                pa.array(times // 1000, pa.int64(), mask=None if valid.all() else ~valid).cast(TIMESTAMP),
                pa.array(reserved.astype(np.int64, copy=False)),
                payloads,
            ],
            schema=SCHEMA,
        )

    def _spanning(
        self, segment: _Segment, positions: np.ndarray, offsets: np.ndarray, lengths: np.ndarray
    ) -> pa.RecordBatch | None:
        """The message begun at the end of this slice, finished from the next segment file (None when the
        recording ends first: a message the recording never finished)."""
        s, r = self.s, self.s.recording
        start = int(positions[0])
        if not s.low <= start < s.high:
            return None
        parts = [
            bytes(segment.map[o + HEADER_LENGTH : o + n])
            for o, n in zip(offsets.tolist(), lengths.tolist(), strict=True)
        ]
        position = int(positions[-1] + _aligned(lengths[-1:])[0])
        while position < r.end_position:
            index = segment_position(r.start_position, position, r.term_length, r.segment_length).index
            path = str(segment_path(s.archive_dir, r.recording_id, index))
            following = segment if index == s.segment_index else self._open(path)
            if following is None:
                return None
            try:
                after = s._replace(segment_index=index, low=position, high=r.end_position, index=None)
                frames, problem = _walk(following, after, position, min(r.end_position, position + r.term_length),
                                        self._sums)  # fmt: skip
                for p, o, n, frame_type, flags in zip(
                    frames.position.tolist(),
                    frames.offset.tolist(),
                    frames.length.tolist(),
                    frames.types.tolist(),
                    frames.flags.tolist(),
                    strict=True,
                ):
                    if frame_type != HDR_TYPE_DATA:
                        continue
                    if flags & BEGIN_FLAG:
                        return None  # a new message before this one ended
                    parts.append(bytes(following.map[o + HEADER_LENGTH : o + n]))
                    if flags & END_FLAG:
                        return self._batch(
                            np.array([start], np.int64),
                            _reserved(segment.map, offsets[:1]),
                            pa.array([b"".join(parts)]),
                        )
                    position = p + ((n + FRAME_ALIGNMENT - 1) & -FRAME_ALIGNMENT)
                if problem is not None:
                    self._problem(problem, path)
                    return None
                if len(frames.position):
                    last = frames.position[-1] + _aligned(frames.length[-1:])[0]
                    position = int(last)
            finally:
                if following is not segment:
                    following.close()
        return None

    def corrupt_rows(self) -> Iterator[pa.RecordBatch]:
        """``corrupt=report``: the damaged places of this slice."""
        self.on_corrupt = "skip"
        segment = self._open(self.s.file)
        if segment is None:
            self.problems.append(_Problem(self.s.low, "segment file missing"))
        else:
            try:
                for _ in self.frames(segment):
                    pass
            finally:
                segment.close()
        if self.problems:
            yield pa.RecordBatch.from_pylist(
                [
                    {
                        "recording_id": self.s.recording.recording_id,
                        "file": self.s.file,
                        "position": p.position,
                        "reason": p.reason,
                    }
                    for p in self.problems
                ],
                schema=CORRUPT_SCHEMA,
            )


def read_slice(s: SegmentSlice, on_corrupt: str = "fail") -> Iterator[pa.RecordBatch]:
    """The messages of one slice (``on_corrupt``: fail, skip) or, with "report", its damaged places."""
    if on_corrupt == "report":
        return SliceReader(s).corrupt_rows()
    return SliceReader(s, on_corrupt).batches()
