"""``mediadriver archive list|describe|verify|segments``: an archive directory read offline (docs/archive.md
sections 7, 10 and 12), ours or one 1.15.1 wrote.

Everything here opens the catalog and the segment files **read-only**: unlike 1.15.1's ``CatalogTool verify``,
which rewrites the catalog (marks entries invalid, fills in stop positions), ``verify`` only reports. The mark
file is not needed, so a directory 1.15.1 wrote (mark-file version 0, where its own ``describe`` waits forever)
reads as well as ours.

Segment layout (docs/archive.md section 7): segment k of a recording holds the positions
[termBase(start) + k·L, termBase(start) + (k+1)·L); ``segment_position`` is where 1.15.1's writer puts a position.
"""

from __future__ import annotations

import csv
import io
import json
import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from driver.archive.catalog import NULL_POSITION, NULL_TIMESTAMP, Catalog, CatalogEntry, CatalogError
from driver.archive.codecs.messages import RecordingDescriptor
from driver.archive.segment_file import (
    MAX_SEGMENT_LENGTH,
    MIN_SEGMENT_LENGTH,
    parse_segment_file_name,
    recover_stop_position,
    scan_stop_offset,
    segment_base_position,
    segment_file_name,
    segment_position,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    DATA_HEADER,
    FRAME_ALIGNMENT,
    HDR_TYPE_DATA,
    HDR_TYPE_PAD,
    HEADER_LENGTH,
)
from driver.util.bit_util import align, is_power_of_two
from driver.util.files import permission_denied
from driver.util.text import printable

DEFAULT_ARCHIVE_DIR = "aeron-archive"  # aeron.archive.dir, relative to the archive's working directory
ARCHIVE_DIR_PROPERTY = "aeron.archive.dir"
CATALOG_FILE = "archive.catalog"
FORMATS = ("table", "csv", "json")
LIST_COLUMNS = (
    "id",
    "valid",
    "stream",
    "session",
    "start_position",
    "stop_position",
    "start_time",
    "stop_time",
    "bytes",
    "segments",
    "channel",
)


class ArchiveDirError(Exception):
    """The directory or its catalog cannot be read; the message names the path and what to do."""


def iso_time(epoch_ms: int) -> str:
    """Local ISO 8601 with milliseconds and offset; empty for NULL_TIMESTAMP (-1)."""
    if epoch_ms == NULL_TIMESTAMP:
        return ""
    try:
        return datetime.fromtimestamp(epoch_ms / 1000).astimezone().isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return f"<invalid {epoch_ms}>"


# --- opening -----------------------------------------------------------------------------------------------------


def resolve_archive_dir(explicit: str | None, properties: dict[str, str]) -> Path:
    return Path(explicit or properties.get(ARCHIVE_DIR_PROPERTY) or DEFAULT_ARCHIVE_DIR)


def open_catalog(archive_dir: Path) -> Catalog:
    """The catalog mapped read-only; ArchiveDirError saying what is wrong and what to do."""
    hint = (
        f"pass --dir with the archive's directory (-D{ARCHIVE_DIR_PROPERTY}, default {DEFAULT_ARCHIVE_DIR})"
    )
    try:
        exists = archive_dir.exists() and (archive_dir / CATALOG_FILE).exists()
    except PermissionError as e:
        raise ArchiveDirError(permission_denied(e.filename or archive_dir)) from None
    if not archive_dir.exists():
        raise ArchiveDirError(f"no archive directory {archive_dir}: {hint}")
    if not archive_dir.is_dir():
        raise ArchiveDirError(f"{archive_dir} is not a directory: {hint}")
    path = archive_dir / CATALOG_FILE
    if not exists:
        raise ArchiveDirError(
            f"no catalog {path}: {archive_dir} is not an archive directory (an archive creates "
            f"{CATALOG_FILE} when it first starts); {hint}"
        )
    try:
        return Catalog(archive_dir, read_only=True)
    except CatalogError as e:
        raise ArchiveDirError(f"cannot read {path}: {e}") from None
    except PermissionError:
        raise ArchiveDirError(permission_denied(path)) from None
    except OSError as e:
        raise ArchiveDirError(f"cannot read {path}: {e.strerror or e}") from None


@dataclass(frozen=True)
class Row:
    """One catalog entry as read: the entry, or why it could not be decoded."""

    recording_id: int
    entry: CatalogEntry | None
    error: str | None = None


def read_rows(catalog: Catalog) -> Iterator[Row]:
    for recording_id in range(catalog.count_entries):
        try:
            entry = catalog.entry(recording_id)
        except CatalogError as e:
            yield Row(recording_id, None, str(e))
        else:
            yield Row(recording_id, entry)


def read_entry(catalog: Catalog, recording_id: int) -> CatalogEntry:
    if not 0 <= recording_id < catalog.count_entries:
        raise ArchiveDirError(
            f"no recording {recording_id} in {catalog.path} (it holds ids 0..{catalog.count_entries - 1})"
            if catalog.count_entries
            else f"no recording {recording_id}: {catalog.path} holds no recordings"
        )
    try:
        entry = catalog.entry(recording_id)
    except CatalogError as e:
        raise ArchiveDirError(f"recording {recording_id} in {catalog.path} is corrupt: {e}") from None
    assert entry is not None
    return entry


# --- segments ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SegmentInfo:
    """One segment file of a recording: where it is, which stream positions it holds, whether it is there."""

    index: int
    path: Path
    base_position: int  # the stream position at file offset 0
    first_position: int  # first position of the recording in it: max(base, start)
    end_position: (
        int | None
    )  # just past the recording's last position in it; None while the recording is open
    size: int | None  # None when the file is missing
    expected: bool  # the catalog's positions fall in it

    @property
    def exists(self) -> bool:
        return self.size is not None


def _layout_ok(d: RecordingDescriptor) -> bool:
    return (
        is_power_of_two(d.term_buffer_length)
        and is_power_of_two(d.segment_file_length)
        and d.segment_file_length >= d.term_buffer_length
    )


def _present_indexes(archive_dir: Path, recording_id: int) -> dict[int, int]:
    """index -> size of the recording's segment files in the directory."""
    found: dict[int, int] = {}
    try:
        names = os.listdir(archive_dir)
    except OSError:
        return found
    for name in names:
        parsed = parse_segment_file_name(name)
        if parsed is not None and parsed[0] == recording_id:
            try:
                found[parsed[1]] = (archive_dir / name).stat().st_size
            except OSError:
                continue
    return found


def segments(archive_dir: Path, d: RecordingDescriptor) -> list[SegmentInfo]:
    """Every segment the catalog's positions need, plus any other file of the recording present, by index."""
    present = _present_indexes(archive_dir, d.recording_id)
    if not _layout_ok(d):
        return [
            SegmentInfo(i, archive_dir / segment_file_name(d.recording_id, i), 0, 0, None, size, False)
            for i, size in sorted(present.items())
        ]
    term, length = d.term_buffer_length, d.segment_file_length
    stopped = d.stop_position != NULL_POSITION
    expected: range
    if stopped and d.stop_position > d.start_position:
        expected = range(segment_position(d.start_position, d.stop_position - 1, term, length).index + 1)
    elif stopped:
        expected = range(0)
    else:  # open: up to the highest file written so far
        expected = range(max([0, *present]) + 1)
    result = []
    for index in sorted(set(expected) | set(present)):
        base = segment_base_position(d.start_position, index, term, length)
        end = min(base + length, d.stop_position) if stopped else None
        result.append(
            SegmentInfo(
                index,
                archive_dir / segment_file_name(d.recording_id, index),
                base,
                max(base, d.start_position),
                end,
                present.get(index),
                index in expected,
            )
        )
    return result


# --- verify ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verification:
    recording_id: int
    problems: list[str]
    notes: list[str]
    data_end: int | None  # where the well-formed frames end (or the walk stopped)

    @property
    def ok(self) -> bool:
        return not self.problems


def _walk_frames(archive_dir: Path, d: RecordingDescriptor, limit: int, problems: list[str]) -> int:
    """Reads frame headers from the start position while below ``limit``; returns where the walk stopped and adds
    a problem for the first malformed frame (wrong term offset/id, session, stream, type, or a zero length)."""
    term, length = d.term_buffer_length, d.segment_file_length
    term_shift = term.bit_length() - 1
    position = d.start_position
    open_index, mapping = -1, None
    try:
        while position < limit:
            index, offset = segment_position(d.start_position, position, term, length)
            if index != open_index:
                if mapping is not None:
                    mapping.close()
                    mapping = None
                open_index = index
                path = archive_dir / segment_file_name(d.recording_id, index)
                try:
                    with open(path, "rb") as f:
                        size = os.fstat(f.fileno()).st_size
                        mapping = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) if size else None
                except OSError:
                    return position  # reported as a missing segment
            if mapping is None or offset + HEADER_LENGTH > len(mapping):
                problems.append(
                    f"data ends at {position}: {segment_file_name(d.recording_id, index)} is short"
                )
                return position
            frame_length, _, _, frame_type, term_offset, session_id, stream_id, term_id, _ = (
                DATA_HEADER.unpack_from(mapping, offset)
            )
            where = f"frame at {position} ({segment_file_name(d.recording_id, index)} offset {offset})"
            expected_term_id = d.initial_term_id + (position >> term_shift)
            expected_term_offset = position & (term - 1)
            if frame_length == 0:
                problems.append(f"data ends at {position}, before the stop position {limit}")
                return position
            if (
                frame_length < HEADER_LENGTH
                or expected_term_offset + align(frame_length, FRAME_ALIGNMENT) > term
            ):
                problems.append(f"{where}: bad frame length {frame_length}")
                return position
            if frame_type not in (HDR_TYPE_DATA, HDR_TYPE_PAD):
                problems.append(f"{where}: frame type {frame_type} is neither DATA nor PAD")
                return position
            if (term_offset, term_id) != (expected_term_offset, _i32(expected_term_id)):
                problems.append(
                    f"{where}: term id/offset {term_id}/{term_offset}, expected "
                    f"{_i32(expected_term_id)}/{expected_term_offset}"
                )
                return position
            if (session_id, stream_id) != (d.session_id, d.stream_id):
                problems.append(
                    f"{where}: session/stream {session_id}/{stream_id}, the recording's are "
                    f"{d.session_id}/{d.stream_id}"
                )
                return position
            position += align(frame_length, FRAME_ALIGNMENT)
        if position != limit:
            problems.append(f"the last frame ends at {position}, beyond the stop position {limit}")
        return position
    finally:
        if mapping is not None:
            mapping.close()


def _i32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def verify_entry(archive_dir: Path, entry: CatalogEntry) -> Verification:
    """Read-only checks of one recording: descriptor, segment files, frames up to the stop, nothing beyond it."""
    d = entry.descriptor
    problems: list[str] = []
    notes: list[str] = []
    if not entry.valid:
        notes.append("marked invalid in the catalog: not checked")
        return Verification(entry.recording_id, problems, notes, None)
    if d.recording_id != entry.recording_id:
        problems.append(
            f"descriptor says recording id {d.recording_id}, its catalog slot is {entry.recording_id}"
        )
    if not is_power_of_two(d.term_buffer_length):
        problems.append(f"term length {d.term_buffer_length} is not a power of 2")
    if not is_power_of_two(d.segment_file_length) or not (
        MIN_SEGMENT_LENGTH <= d.segment_file_length <= MAX_SEGMENT_LENGTH
    ):
        problems.append(f"segment file length {d.segment_file_length} is not a power of 2 in [64 KiB, 1 GiB]")
    elif d.segment_file_length < d.term_buffer_length:
        problems.append(
            f"segment file length {d.segment_file_length} is shorter than the term length {d.term_buffer_length}"
        )
    if d.start_position < 0 or d.start_position % FRAME_ALIGNMENT:
        problems.append(
            f"start position {d.start_position} is not a non-negative multiple of {FRAME_ALIGNMENT}"
        )
    stopped = d.stop_position != NULL_POSITION
    if stopped and (d.stop_position < d.start_position or d.stop_position % FRAME_ALIGNMENT):
        problems.append(
            f"stop position {d.stop_position} is below the start {d.start_position} or not a multiple of "
            f"{FRAME_ALIGNMENT}"
        )
    if problems:
        return Verification(entry.recording_id, problems, notes, None)

    infos = segments(archive_dir, d)
    for s in infos:
        name = s.path.name
        span = f"positions {s.first_position}..{'' if s.end_position is None else s.end_position}"
        if s.expected and not s.exists:
            problems.append(f"segment file {name} is missing ({span})")
        elif s.exists and s.size != d.segment_file_length:
            problems.append(f"segment file {name} is {s.size} bytes, expected {d.segment_file_length}")
        if s.exists and not s.expected:
            # The writer may have opened the next segment when the stop fell exactly on a segment end.
            last = max((i.index for i in infos if i.expected), default=-1)
            if s.index != last + 1:
                problems.append(f"segment file {name} lies outside the recorded positions")
    if not stopped:
        recovered = recover_stop_position(
            archive_dir, d.recording_id, d.start_position, d.term_buffer_length, d.segment_file_length
        )
        notes.append(
            f"no stop position (recording, or the archive did not stop cleanly); the data reaches {recovered}"
        )
        limit = recovered
    else:
        limit = d.stop_position
    data_end = _walk_frames(archive_dir, d, limit, problems)
    if stopped and data_end == limit and not any("missing" in p for p in problems):
        index, offset = segment_position(d.start_position, limit, d.term_buffer_length, d.segment_file_length)
        path = archive_dir / segment_file_name(d.recording_id, index)
        if path.exists() and offset + HEADER_LENGTH <= min(path.stat().st_size, d.segment_file_length):
            with open(path, "rb") as f:
                frame_length = int.from_bytes(os.pread(f.fileno(), 4, offset), "little", signed=True)
            if frame_length > 0:
                # The recovery scan tells how far; its page rule may drop the last frame, so count at least one.
                reach = max(
                    scan_stop_offset(path, offset, d.segment_file_length),
                    offset + align(frame_length, FRAME_ALIGNMENT),
                )
                problems.append(
                    f"frames continue past the stop position {limit} up to at least {limit + reach - offset}"
                )
    return Verification(entry.recording_id, problems, notes, data_end)


# --- rendering ---------------------------------------------------------------------------------------------------


def list_record(archive_dir: Path, row: Row) -> dict[str, object]:
    """The fields of ``list`` for one entry (raw numbers; the renderers format them)."""
    if row.entry is None:
        return {"id": row.recording_id, "valid": False, "error": row.error}
    d = row.entry.descriptor
    infos = segments(archive_dir, d)
    stopped = d.stop_position != NULL_POSITION
    return {
        "id": row.recording_id,
        "valid": row.entry.valid,
        "stream": d.stream_id,
        "session": d.session_id,
        "start_position": d.start_position,
        "stop_position": d.stop_position,
        "start_time": iso_time(d.start_timestamp),
        "stop_time": iso_time(d.stop_timestamp),
        "bytes": d.stop_position - d.start_position if stopped else None,
        "segments": sum(1 for s in infos if s.exists),
        "channel": d.original_channel,
    }


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    return printable(str(value))


def render_list(archive_dir: Path, catalog: Catalog, fmt: str = "table") -> str:
    records = [list_record(archive_dir, row) for row in read_rows(catalog)]
    if fmt == "json":
        return json.dumps({"archive_dir": str(archive_dir), "recordings": records}, indent=2)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(LIST_COLUMNS)
        for r in records:
            writer.writerow(
                [
                    _cell(r.get(c)) if c != "channel" or "error" not in r else _cell(r["error"])
                    for c in LIST_COLUMNS
                ]
            )
        return out.getvalue().rstrip("\n")
    headers = [c.upper().replace("_POSITION", "").replace("_TIME", " TIME") for c in LIST_COLUMNS]
    rows = []
    for r in records:
        if "error" in r:
            rows.append([str(r["id"]), "corrupt", *[""] * 8, _cell(r["error"])])
        else:
            rows.append([_cell(r[c]) for c in LIST_COLUMNS])
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(headers)]
    numeric = {0, 2, 3, 4, 5, 8, 9}

    def line(cells: list[str]) -> str:
        parts = [
            cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i])
            for i, cell in enumerate(cells[:-1])
        ]
        return "  ".join([*parts, cells[-1]]).rstrip()

    title = (
        f"archive {printable(str(archive_dir))}: {catalog.count_entries} recording(s), "
        f"catalog room for {catalog.max_entries}"
    )
    return "\n".join([title, line(headers), *(line(row) for row in rows)])


def render_segments(archive_dir: Path, d: RecordingDescriptor) -> list[str]:
    infos = segments(archive_dir, d)
    headers = ["INDEX", "FILE", "FIRST", "END", "SIZE", "STATUS"]
    rows = []
    for s in infos:
        if s.exists and s.expected:
            status = "ok" if s.size == d.segment_file_length else f"size {s.size} != {d.segment_file_length}"
        elif s.expected:
            status = "MISSING"
        else:
            status = "beyond the recorded positions"
        rows.append(
            [
                str(s.index),
                s.path.name,
                str(s.first_position),
                "open" if s.end_position is None else str(s.end_position),
                "" if s.size is None else str(s.size),
                status,
            ]
        )
    if not rows:
        return ["no segment files (nothing recorded)"]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    return [
        "  ".join(
            c.rjust(widths[i]) if i in (0, 2, 3, 4) else c.ljust(widths[i]) for i, c in enumerate(r)
        ).rstrip()
        for r in [headers, *rows]
    ]


def render_describe(archive_dir: Path, entry: CatalogEntry) -> str:
    d = entry.descriptor
    fields: list[tuple[str, str]] = [("recordingId", str(entry.recording_id)), ("valid", _cell(entry.valid))]
    for name, value in d._asdict().items():
        camel = name.split("_")[0] + "".join(p.title() for p in name.split("_")[1:])
        text = printable(value) if isinstance(value, str) else str(value)
        if name in ("start_timestamp", "stop_timestamp") and value != NULL_TIMESTAMP:
            text += f" ({iso_time(value)})"
        fields.append((camel, text))
    if d.stop_position != NULL_POSITION:
        fields.append(("length", f"{d.stop_position - d.start_position} bytes"))
    width = max(len(k) for k, _ in fields)
    lines = [f"{k:<{width}}  {v}" for k, v in fields]
    return "\n".join(
        [*lines, "", f"segment files in {printable(str(archive_dir))}:", *render_segments(archive_dir, d)]
    )


def render_verification(v: Verification) -> list[str]:
    head = f"recording {v.recording_id}: " + ("OK" if v.ok else f"{len(v.problems)} problem(s)")
    if v.ok and v.data_end is not None:
        head += f", frames well formed up to {v.data_end}"
    return [head, *(f"  - {printable(p)}" for p in v.problems), *(f"  note: {printable(n)}" for n in v.notes)]
