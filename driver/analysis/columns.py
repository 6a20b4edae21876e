"""Decode whole loss-report.dat files into Arrow record batches, a column per field (the Spark job's mapInArrow).

The entries' offsets form a chain (each entry's length depends on its two strings), so one loop walks it with one
struct call for the count and channel length and one for the source length per entry. Everything else is
vectorised: numpy gathers the fixed fields at those offsets and the channel and source bytes straight into the
buffers of Arrow string arrays, so no Python object is made per entry. The walk's checks are those of
``decode.decode_entries`` (same errors, same offsets), which stays the reference decoder.

Imports numpy and pyarrow (the 'analysis' extra, which Spark's Arrow exchange needs anyway) but nothing of this
package except ``decode``; the job ships both modules to executors by value.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa

from driver.analysis.decode import (
    ENTRY_ALIGNMENT,
    FIXED_LENGTH,
    LossFileError,
    host_of,
)

CHANNEL_OFFSET = 44  # after the four int64 and the session, stream and channel length int32 fields
ASCII_LIMIT = 0x80

SCHEMA = pa.schema(
    [
        ("file", pa.string()),
        ("host", pa.string()),
        ("channel", pa.string()),
        ("source", pa.string()),
        ("stream_id", pa.int32()),
        ("session_id", pa.int32()),
        ("observation_count", pa.int64()),
        ("total_bytes_lost", pa.int64()),
        ("first_observation_ms", pa.int64()),
        ("last_observation_ms", pa.int64()),
    ]
)


def entry_offsets(data: bytes | bytearray | memoryview) -> tuple[list[int], list[int], list[int]]:
    """Offsets, channel lengths and source lengths of the entries, in file order (raises ``LossFileError``)."""
    length = len(data)
    offsets: list[int] = []
    channels: list[int] = []
    sources: list[int] = []
    head = struct.Struct("<q32xi").unpack_from  # observation count at 0, channel length at 40
    i32 = struct.Struct("<i").unpack_from
    i64 = struct.Struct("<q").unpack_from
    align = ENTRY_ALIGNMENT - 1
    offset = 0
    while offset < length:
        if offset + FIXED_LENGTH > length:
            if offset + 8 > length:
                raise LossFileError(offset, "observation count runs past the end", length)
            if i64(data, offset)[0] == 0:
                break
            raise LossFileError(offset, "fixed fields run past the end", length)
        count, channel_length = head(data, offset)
        if count <= 0:
            if count == 0:
                break
            raise LossFileError(offset, f"negative observation count {count}", length)
        at = offset + CHANNEL_OFFSET
        if channel_length < 0 or at + channel_length + 4 > length:
            raise LossFileError(offset, f"channel length {channel_length} runs past the end", length)
        at += channel_length
        source_length = i32(data, at)[0]
        if source_length < 0 or at + 4 + source_length > length:
            raise LossFileError(offset, f"source length {source_length} runs past the end", length)
        offsets.append(offset)
        channels.append(channel_length)
        sources.append(source_length)
        offset += (FIXED_LENGTH + channel_length + source_length + align) & ~align
    return offsets, channels, sources


def _block_walk(data: Any, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The entries of a well-formed file without a struct call per entry, or None for the exact walk to judge.

    Entries start on 64-byte blocks, so numpy computes for every block, as if an entry started there, whether
    that entry would be valid and how many blocks it spans; the Python loop then only follows those steps from
    block 0 (a list lookup per entry). The blocks are looked at in growing chunks from the start, so a sparse
    1 MiB file costs about its written part. Anything but a clean end (a zero count) gives None."""
    raw = np.frombuffer(data, np.uint8, count=length)
    chunk = min(length, 1 << 16)
    visited: list[int] = []
    block = 0
    while True:
        blocks = chunk // ENTRY_ALIGNMENT
        starts = np.arange(blocks, dtype=np.int64) * ENTRY_ALIGNMENT
        counts = np.frombuffer(data, "<i8", count=blocks * ENTRY_ALIGNMENT // 8)[:: ENTRY_ALIGNMENT // 8]
        channel_lengths = np.frombuffer(data, "<i4", count=blocks * ENTRY_ALIGNMENT // 4)[
            CHANNEL_OFFSET // 4 - 1 :: ENTRY_ALIGNMENT // 4
        ].astype(np.int64)
        source_at = starts + CHANNEL_OFFSET + channel_lengths
        inside = (channel_lengths >= 0) & (source_at + 4 <= chunk)
        gathered = np.where(inside, source_at, 0)
        source_lengths = raw[gathered[:, None] + np.arange(4)].copy().view("<i4").ravel().astype(np.int64)
        ends = source_at + 4 + source_lengths
        ok = (counts > 0) & inside & (source_lengths >= 0) & (ends <= chunk)
        steps = (
            (FIXED_LENGTH + channel_lengths + source_lengths + ENTRY_ALIGNMENT - 1) // ENTRY_ALIGNMENT
        ).tolist()
        oks = ok.tolist()
        while block < blocks and oks[block]:
            visited.append(block)
            block += steps[block]
        if chunk < length and (block >= blocks or not oks[block]):
            if block < blocks and counts[block] == 0:
                break  # a clean end inside the chunk
            chunk = min(length, chunk * 4)  # the entry (or the walk) runs past the chunk: look further
            continue
        if block < blocks and counts[block] == 0:
            break
        if block * ENTRY_ALIGNMENT >= length:
            break
        return None
    index = np.asarray(visited, np.int64)
    return index * ENTRY_ALIGNMENT, channel_lengths[index], source_lengths[index]


def _strings(raw: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """An Arrow string array of ``raw[start:start + length]`` for each entry, built from gathered buffers."""
    ends = np.cumsum(lengths)
    value_offsets = np.zeros(len(lengths) + 1, np.int32)
    value_offsets[1:] = ends
    index = np.repeat(starts - value_offsets[:-1], lengths) + np.arange(int(ends[-1]) if len(ends) else 0)
    chars = raw[index]
    if (chars >= ASCII_LIMIT).any():  # as decode_entries: ASCII, anything else replaced
        return pa.array(
            [
                chars[a:b].tobytes().decode("ascii", "replace")
                for a, b in zip(value_offsets[:-1], ends, strict=True)
            ],
            pa.string(),
        )
    return pa.StringArray.from_buffers(len(lengths), pa.py_buffer(value_offsets), pa.py_buffer(chars))


def _numbers(kind: pa.DataType, values: np.ndarray) -> pa.Array:
    """A numpy array as an Arrow one over the same buffer (pa.array would look at each value first)."""
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])


def _repeated(value: str, count: int) -> pa.Array:
    encoded = value.encode()
    value_offsets = np.arange(count + 1, dtype=np.int32) * len(encoded)
    return pa.StringArray.from_buffers(count, pa.py_buffer(value_offsets), pa.py_buffer(encoded * count))


def file_batch(path: str, data: bytes | bytearray | memoryview) -> pa.RecordBatch:
    """One file's entries as one record batch of ``SCHEMA`` (raises ``LossFileError``)."""
    length = len(data)
    walked = _block_walk(data, length) if length >= ENTRY_ALIGNMENT else None
    if walked is None:  # not well formed (or tiny): the exact walk says where, or finds the entries
        offsets, channels, sources = entry_offsets(data)
        walked = (
            np.asarray(offsets, np.int64),
            np.asarray(channels, np.int64),
            np.asarray(sources, np.int64),
        )
    at, channel_lengths_np, source_lengths_np = walked
    count = len(at)
    if count == 0:
        return pa.RecordBatch.from_pylist([], SCHEMA)
    raw = np.frombuffer(data, np.uint8)
    words = np.frombuffer(
        data, "<i8", count=len(raw) // 8
    )  # entries are 64-byte aligned: so are their int64s
    ints = np.frombuffer(data, "<i4", count=len(raw) // 4)
    q, i = at >> 3, at >> 2
    channel_starts = at + CHANNEL_OFFSET
    return pa.RecordBatch.from_arrays(
        [
            _repeated(path, count),
            _repeated(host_of(path), count),
            _strings(raw, channel_starts, channel_lengths_np),
            _strings(raw, channel_starts + channel_lengths_np + 4, source_lengths_np),
            _numbers(pa.int32(), ints[i + 9]),  # stream id at 36
            _numbers(pa.int32(), ints[i + 8]),  # session id at 32
            _numbers(pa.int64(), words[q]),
            _numbers(pa.int64(), words[q + 1]),
            _numbers(pa.int64(), words[q + 2]),
            _numbers(pa.int64(), words[q + 3]),
        ],
        schema=SCHEMA,
    )


def _map(path: str) -> Any:
    """The file's bytes, mapped: a sparse loss file's untouched pages cost nothing."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return b""
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)  # unmapped when the last view goes


def local_path(uri: str) -> str:
    """The local file a ``file:`` URI (as Spark lists it) names."""
    return unquote(urlparse(uri).path)


def decode_batches(
    batches: Iterator[pa.RecordBatch], skipped: Any = None, files: Any = None, entries: Any = None
) -> Iterator[pa.RecordBatch]:
    """mapInArrow over a listing of ``path`` (and ``content`` for files not on a local file system): one record
    batch per file; a truncated or corrupt file adds ``(path, reason)`` to ``skipped`` and yields nothing."""
    for batch in batches:
        paths = batch.column("path").to_pylist()
        contents = batch.column("content") if "content" in batch.schema.names else None
        for n, path in enumerate(paths):
            data = _map(local_path(path)) if contents is None else contents[n].as_buffer()
            try:
                decoded = file_batch(path, data)
            except LossFileError as e:
                if skipped is not None:
                    skipped.add({(path, str(e))})
                continue
            if files is not None:
                files.add(1)
            if decoded.num_rows:
                if entries is not None:
                    entries.add(decoded.num_rows)
                yield decoded
