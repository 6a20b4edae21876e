"""Decode whole loss-report.dat files into Arrow record batches, a column per field (the Spark job's mapInArrow).

The entries' offsets form a chain (each entry's length depends on its two strings). numpy reads every 64-byte
block of a file as if an entry started there (``BLOCK``, a structured dtype over the layout constants of
``decode``) and follows the chain from block 0 by pointer doubling, so no Python step is taken per entry; then it
gathers the fixed fields of the entries and their channel and source bytes straight into the buffers of Arrow
arrays. Files that are not well formed go to an exact walk with the checks of ``decode.decode_entries`` (same
errors, same offsets), which stays the reference decoder. Many files' entries travel in one record batch.

Imports numpy and pyarrow (the 'analysis' extra, which Spark's Arrow exchange needs anyway) but nothing of this
package except ``decode``; the job ships both modules to executors by value.
"""

from __future__ import annotations

import itertools
import mmap
import os
import struct
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa

from driver.analysis.decode import (
    CHANNEL_LENGTH_OFFSET,
    CHANNEL_OFFSET,
    ENTRY_ALIGNMENT,
    FIRST_OBSERVATION_OFFSET,
    FIXED_LENGTH,
    LAST_OBSERVATION_OFFSET,
    OBSERVATION_COUNT_OFFSET,
    SESSION_ID_OFFSET,
    STREAM_ID_OFFSET,
    TOTAL_BYTES_LOST_OFFSET,
    LossFileError,
    host_of,
)

ASCII_LIMIT = 0x80
BATCH_ENTRIES = 1 << 15  # entries per record batch sent to Spark: a few MB, many files' worth

# A 64-byte block read as the start of an entry: its fixed fields (the source length follows the channel).
BLOCK = np.dtype(
    {
        "names": [
            "observation_count",
            "total_bytes_lost",
            "first_observation_ms",
            "last_observation_ms",
            "session_id",
            "stream_id",
            "channel_length",
        ],
        "formats": ["<i8", "<i8", "<i8", "<i8", "<i4", "<i4", "<i4"],
        "offsets": [
            OBSERVATION_COUNT_OFFSET,
            TOTAL_BYTES_LOST_OFFSET,
            FIRST_OBSERVATION_OFFSET,
            LAST_OBSERVATION_OFFSET,
            SESSION_ID_OFFSET,
            STREAM_ID_OFFSET,
            CHANNEL_LENGTH_OFFSET,
        ],
        "itemsize": ENTRY_ALIGNMENT,
    }
)

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
NUMBER_FIELDS = SCHEMA.names[4:]  # straight from BLOCK, in SCHEMA's order


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
    """The entries of a well-formed file without a Python step per entry, or None for the exact walk to judge.

    Entries start on 64-byte blocks, so numpy computes for every block, as if an entry started there, whether
    that entry would be valid and which block follows it. The chain from block 0 is then found by pointer
    doubling: the path known so far, jumped ahead by its own length, is the next stretch of it (log2 of the
    entries numpy steps, not one per entry). The blocks are looked at in growing chunks from the start, so a
    sparse 1 MiB file costs about its written part. Anything but a clean end (a zero count) gives None."""
    # The int32 starting at every byte: the source lengths sit at any offset.
    int32_at = np.ndarray((length - 3,), "<i4", data, strides=(1,))
    chunk = min(length, 1 << 16)
    while True:
        blocks = chunk // ENTRY_ALIGNMENT
        fixed = np.frombuffer(data, BLOCK, count=blocks)
        counts = fixed["observation_count"]
        channel_lengths = fixed["channel_length"].astype(np.int64)
        source_at = np.arange(0, blocks * ENTRY_ALIGNMENT, ENTRY_ALIGNMENT) + CHANNEL_OFFSET + channel_lengths
        inside = (channel_lengths >= 0) & (source_at + 4 <= chunk)
        source_lengths = int32_at[np.where(inside, source_at, 0)].astype(np.int64)
        ok = (counts > 0) & inside & (source_lengths >= 0) & (source_at + 4 + source_lengths <= chunk)
        steps = (FIXED_LENGTH + channel_lengths + source_lengths + ENTRY_ALIGNMENT - 1) // ENTRY_ALIGNMENT
        # jump[b]: the block after an entry at b; ``blocks`` (itself) once off the chain or past the chunk.
        jump = np.empty(blocks + 1, np.int64)
        np.minimum(np.where(ok, np.arange(blocks) + steps, blocks), blocks, out=jump[:-1])
        jump[-1] = blocks
        path = np.zeros(1, np.int64)
        while True:
            ahead = jump[path]  # strictly increasing, then ``blocks`` once the chain has left
            if ahead[-1] != blocks:
                path = np.concatenate((path, ahead))
                jump = jump[jump]
                continue
            path = np.concatenate((path, ahead[: np.searchsorted(ahead, blocks)]))
            break
        last = int(path[-1])
        if ok[last]:  # the chain runs past the chunk
            if chunk < length:
                chunk = min(length, chunk * 4)
                continue
            if (last + int(steps[last])) * ENTRY_ALIGNMENT < length:
                return None  # a tail shorter than a block: the exact walk says what it holds
        elif counts[last] == 0:  # a clean end
            path = path[:-1]
        elif chunk < length:  # an entry that may run past the chunk: look further
            chunk = min(length, chunk * 4)
            continue
        else:
            return None
        return path * ENTRY_ALIGNMENT, channel_lengths[path], source_lengths[path]


class FilePart(NamedTuple):
    """One file's entries, gathered out of its bytes (so the file can be unmapped)."""

    path: str
    fixed: np.ndarray  # BLOCK records, one per entry
    channels: np.ndarray  # the channels' bytes, one after another
    channel_lengths: np.ndarray
    sources: np.ndarray
    source_lengths: np.ndarray


def _gather(raw: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``raw[start:start + length]`` for each entry, concatenated."""
    ends = np.cumsum(lengths)
    total = int(ends[-1]) if len(ends) else 0
    return raw[np.repeat(starts - (ends - lengths), lengths) + np.arange(total)]


def file_part(path: str, data: bytes | bytearray | memoryview) -> FilePart:
    """One file's entries (raises ``LossFileError``)."""
    length = len(data)
    walked = _block_walk(data, length) if length >= ENTRY_ALIGNMENT else None
    if walked is None:  # not well formed (or tiny): the exact walk says where, or finds the entries
        offsets, channels, sources = entry_offsets(data)
        walked = (
            np.asarray(offsets, np.int64),
            np.asarray(channels, np.int64),
            np.asarray(sources, np.int64),
        )
    at, channel_lengths, source_lengths = walked
    raw = np.frombuffer(data, np.uint8)
    blocks = np.frombuffer(data, BLOCK, count=length // ENTRY_ALIGNMENT)
    index = at // ENTRY_ALIGNMENT
    if len(index) and index[-1] >= len(blocks):  # an entry in a last, partial block: pad a copy to whole ones
        blocks = np.frombuffer(bytes(data) + bytes(-length % ENTRY_ALIGNMENT), BLOCK)
    channel_starts = at + CHANNEL_OFFSET
    return FilePart(
        path,
        blocks[index],
        _gather(raw, channel_starts, channel_lengths),
        channel_lengths,
        _gather(raw, channel_starts + channel_lengths + 4, source_lengths),
        source_lengths,
    )


def _strings(chars: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """An Arrow string array over concatenated bytes (ASCII, as decode_entries reads them: others replaced)."""
    value_offsets = np.zeros(len(lengths) + 1, np.int32)
    np.cumsum(lengths, out=value_offsets[1:])
    if (chars >= ASCII_LIMIT).any():
        return pa.array(
            [
                chars[a:b].tobytes().decode("ascii", "replace")
                for a, b in itertools.pairwise(value_offsets.tolist())
            ],
            pa.string(),
        )
    return pa.StringArray.from_buffers(len(lengths), pa.py_buffer(value_offsets), pa.py_buffer(chars))


def _repeated(values: list[str], counts: list[int]) -> pa.Array:
    """Each value ``count`` times, as one Arrow string array."""
    encoded = [v.encode() for v in values]
    lengths = np.repeat(np.fromiter(map(len, encoded), np.int64, len(encoded)), counts)
    chars = np.frombuffer(b"".join(e * n for e, n in zip(encoded, counts, strict=True)), np.uint8)
    return _strings(chars, lengths)


def record_batch(parts: Sequence[FilePart]) -> pa.RecordBatch:
    """The entries of ``parts`` as one record batch of ``SCHEMA``."""
    counts = [len(p.fixed) for p in parts]
    if not sum(counts):
        return pa.RecordBatch.from_pylist([], SCHEMA)
    fixed = np.concatenate([p.fixed for p in parts])
    paths = [p.path for p in parts]
    return pa.RecordBatch.from_arrays(
        [
            _repeated(paths, counts),
            _repeated([host_of(p) for p in paths], counts),
            _strings(
                np.concatenate([p.channels for p in parts]),
                np.concatenate([p.channel_lengths for p in parts]),
            ),
            _strings(
                np.concatenate([p.sources for p in parts]), np.concatenate([p.source_lengths for p in parts])
            ),
            *(
                pa.Array.from_buffers(
                    kind, len(fixed), [None, pa.py_buffer(np.ascontiguousarray(fixed[name]))]
                )
                for name, kind in zip(NUMBER_FIELDS, SCHEMA.types[4:], strict=True)
            ),
        ],
        schema=SCHEMA,
    )


def file_batch(path: str, data: bytes | bytearray | memoryview) -> pa.RecordBatch:
    """One file's entries as one record batch of ``SCHEMA`` (raises ``LossFileError``)."""
    return record_batch([file_part(path, data)])


def map_file(path: str) -> Any:
    """The file's bytes, mapped: a sparse loss file's untouched pages cost nothing."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return b""
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)  # unmapped when the last view goes


def local_path(uri: str) -> str:
    """The local file a ``file:`` URI (as Spark lists it) names."""
    return unquote(urlparse(uri).path)


def decode_batches(
    batches: Iterator[pa.RecordBatch],
    skipped: Any = None,
    files: Any = None,
    entries: Any = None,
    paths: Sequence[str] | None = None,
    batch_entries: int = BATCH_ENTRIES,
) -> Iterator[pa.RecordBatch]:
    """mapInArrow over a listing of files: ``id`` into ``paths`` (local files), or ``path`` (and ``content`` for
    files not on a local file system). Yields record batches of about ``batch_entries`` entries; a truncated or
    corrupt file adds ``(path, reason)`` to ``skipped`` and yields nothing."""
    pending: list[FilePart] = []
    waiting = 0
    for batch in batches:
        if paths is not None:
            names = [paths[i] for i in batch.column("id").to_pylist()]
        else:
            names = batch.column("path").to_pylist()
        contents = batch.column("content") if "content" in batch.schema.names else None
        for n, path in enumerate(names):
            data = map_file(local_path(path)) if contents is None else contents[n].as_buffer()
            try:
                part = file_part(path, data)
            except LossFileError as e:
                if skipped is not None:
                    skipped.add({(path, str(e))})
                continue
            if files is not None:
                files.add(1)
            if len(part.fixed):
                pending.append(part)
                waiting += len(part.fixed)
            if waiting >= batch_entries:
                yield _flush(pending, entries)
                pending, waiting = [], 0
    if pending:
        yield _flush(pending, entries)


def _flush(parts: list[FilePart], entries: Any) -> pa.RecordBatch:
    batch = record_batch(parts)
    if entries is not None:
        entries.add(batch.num_rows)
    return batch
