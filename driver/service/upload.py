"""An uploaded export file, checked before anything of it reaches the archive (docs/service.md section 6).

The manifest comes first (the first entry of a tar, read by name from a zip) and is checked alone: its format,
its data set, and for each recording the names of its parts, which must be the export's own plain relative names
(``recordings/<n>.frames``, ``recordings/<n>.idx``): no absolute path, no ``..``, nothing outside the upload. It
declares every part's size (the frames: stop - start position; the index: ``index_length``, else a bound from
the frames' length), so unpacking then takes only the declared entries, each up to its declared size, and stops
at their total plus a small margin: a compressed bomb is refused after at most what its manifest admits to.
After unpacking, each named part must be a regular file of the unpacked directory with one link.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from driver.archive.recording_index import ENTRY as INDEX_ENTRY
from driver.archive.recording_index import HEADER as INDEX_HEADER
from driver.concurrent.logbuffer.frame_descriptor import (
    FRAME_ALIGNMENT,
    FRAME_LENGTH_OFFSET,
    HDR_TYPE_DATA,
    HDR_TYPE_PAD,
    TERM_ID_OFFSET,
    TERM_OFFSET_OFFSET,
    TYPE_OFFSET,
)
from driver.service.export_format import CHUNK, FORMAT, MANIFEST, VERSION, ImportError_
from driver.service.models import DataSet

MAX_MANIFEST_BYTES = 16 << 20
MARGIN_BYTES = 1 << 20
"""Unpacking stops this far past the sizes the manifest declares (only the manifest itself is not declared)."""
MIN_TERM_LENGTH = 64 * 1024
MAX_TERM_LENGTH = 1 << 30
FRAMES_NAME = re.compile(r"^recordings/\d{1,6}\.frames$")
INDEX_NAME = re.compile(r"^recordings/\d{1,6}\.idx$")


class ExportEntry(BaseModel):
    """One recording of the manifest (as export_members writes it)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    recording_id: int
    frames: str
    index: str | None = None
    index_length: int | None = Field(default=None, ge=0)
    start_position: int = Field(ge=0)
    stop_position: int = Field(ge=0)
    term_buffer_length: int = Field(ge=MIN_TERM_LENGTH, le=MAX_TERM_LENGTH)
    initial_term_id: int = Field(ge=-(2**31), lt=2**31)
    segment_file_length: int = Field(gt=0)
    mtu_length: int = Field(gt=0)


@dataclass
class Manifest:
    dataset: DataSet
    entries: list[ExportEntry]
    sizes: dict[str, int]
    """Every part the upload must hold, with its size (the frames' exactly, the index's at most)."""
    exact: set[str]

    @property
    def declared_bytes(self) -> int:
        return sum(self.sizes.values())

    def frames_of(self, name: str) -> ExportEntry | None:
        return next((e for e in self.entries if e.frames == name), None)


def _frame_checks(entry: ExportEntry) -> Callable[[int, bytes], None]:
    """Checks the frame at the recording's start and at each term's start as the frames stream past (``offset``
    in the frames file, a multiple of CHUNK): a header that is not a frame of that term (zeros, say) ends the
    import there, so a manifest that declares a large recording cannot make the service unpack a run of
    filler. Only those headers are read: the cost does not grow with the number of messages."""
    start, term_length = entry.start_position, entry.term_buffer_length

    def check_at(chunk: bytes, at: int, position: int) -> None:
        term_offset = position % term_length
        frame_length = int.from_bytes(chunk[at + FRAME_LENGTH_OFFSET : at + 4], "little", signed=True)
        frame_type = int.from_bytes(chunk[at + TYPE_OFFSET : at + TYPE_OFFSET + 2], "little")
        offset = int.from_bytes(
            chunk[at + TERM_OFFSET_OFFSET : at + TERM_OFFSET_OFFSET + 4], "little", signed=True
        )
        term_id = int.from_bytes(chunk[at + TERM_ID_OFFSET : at + TERM_ID_OFFSET + 4], "little", signed=True)
        expected_term = (entry.initial_term_id + position // term_length + 2**31) % 2**32 - 2**31
        if (
            frame_length <= 0
            or frame_length > term_length - term_offset
            or frame_type not in (HDR_TYPE_DATA, HDR_TYPE_PAD)
            or offset != term_offset
            or term_id != expected_term
        ):
            raise ImportError_(
                f"{entry.frames} holds no frame of term {expected_term} at position {position}: not a recording"
            )

    def check(offset: int, chunk: bytes) -> None:
        first = start + offset
        if offset == 0 and chunk:
            check_at(chunk, 0, first)
        boundary = (first + term_length - 1) // term_length * term_length
        while boundary < first + len(chunk) and boundary - first + 32 <= len(chunk):
            if boundary != start:
                check_at(chunk, boundary - first, boundary)
            boundary += term_length

    return check


def index_bound(frames_length: int) -> int:
    """The largest index a recording of this length can have: one entry per frame at most, plus the stop's."""
    return INDEX_HEADER.size + INDEX_ENTRY.size * (frames_length // FRAME_ALIGNMENT + 2)


def _name(value: str, pattern: re.Pattern[str], what: str, n: int) -> str:
    if not pattern.match(value):
        kind = pattern.pattern[1:-1].replace(r"\d{1,6}", "<n>").replace("\\", "")
        raise ImportError_(
            f"{MANIFEST}: recording {n}'s {what} {value!r} is not a plain name inside the upload ({kind})"
        )
    return value


def check_manifest(data: bytes) -> Manifest:
    """The manifest's content checked alone, before any other entry is unpacked."""
    try:
        manifest = json.loads(data)
    except (UnicodeDecodeError, ValueError) as e:
        raise ImportError_(f"{MANIFEST} is not JSON: {e}") from None
    if (
        not isinstance(manifest, dict)
        or manifest.get("format") != FORMAT
        or manifest.get("version") != VERSION
    ):
        raise ImportError_(f"{MANIFEST} is not a {FORMAT} version {VERSION} manifest")
    try:
        dataset = DataSet.model_validate(manifest.get("dataset"))
        raw = manifest.get("recordings")
        if not isinstance(raw, list) or len(raw) != len(dataset.recordings):
            raise ImportError_(f"{MANIFEST}: recordings do not match the data set")
        entries = [ExportEntry.model_validate(e) for e in raw]
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise ImportError_(f"{MANIFEST} is not valid: {where}: {first.get('msg', '')}") from None
    sizes: dict[str, int] = {}
    exact: set[str] = set()
    for n, entry in enumerate(entries):
        length = entry.stop_position - entry.start_position
        term_length = entry.term_buffer_length
        if length < 0 or term_length & (term_length - 1):
            raise ImportError_(f"{MANIFEST}: recording {n} has bad positions or term length")
        frames = _name(entry.frames, FRAMES_NAME, "frames", n)
        parts = [(frames, length, True)]
        if entry.index is not None:
            index = _name(entry.index, INDEX_NAME, "index", n)
            bound = index_bound(length)
            if entry.index_length is not None and entry.index_length > bound:
                raise ImportError_(f"{MANIFEST}: recording {n}'s index_length is over {bound} bytes")
            parts.append(
                (
                    index,
                    entry.index_length if entry.index_length is not None else bound,
                    entry.index_length is not None,
                )
            )
        for name, size, is_exact in parts:
            if name in sizes:
                raise ImportError_(f"{MANIFEST}: {name!r} is named twice")
            sizes[name] = size
            if is_exact:
                exact.add(name)
    return Manifest(dataset, entries, sizes, exact)


def check_entry_name(name: str) -> str:
    """The entry's name if it is one the format has; names that would land outside the data set are refused."""
    parts = name.replace("\\", "/").split("/")
    if name.startswith("/") or ".." in parts or ":" in name:
        raise ImportError_(f"entry {name!r} points outside the data set")
    if name != MANIFEST and not (FRAMES_NAME.match(name) or INDEX_NAME.match(name)):
        raise ImportError_(
            f"entry {name!r} is not part of the export format ({MANIFEST}, recordings/<n>.frames|idx)"
        )
    return name


def _read_manifest(source: IO[bytes], size: int) -> bytes:
    if size > MAX_MANIFEST_BYTES:
        raise ImportError_(f"{MANIFEST} is over {MAX_MANIFEST_BYTES} bytes")
    data = source.read(MAX_MANIFEST_BYTES + 1)
    if len(data) > MAX_MANIFEST_BYTES:
        raise ImportError_(f"{MANIFEST} is over {MAX_MANIFEST_BYTES} bytes")
    return data


def _read_full(source: IO[bytes], n: int) -> bytes:
    """``n`` bytes, fewer only at the end: chunks then start at multiples of CHUNK, so a frame header (32 bytes,
    32-aligned) never straddles two."""
    data = source.read(n)
    while 0 < len(data) < n and (more := source.read(n - len(data))):
        data += more
    return data


def unpack(
    upload: Path,
    compression: str,
    target: Path,
    create: Callable[[Path], BinaryIO],
    admit: Callable[[Manifest], None] = lambda _m: None,
) -> Manifest:
    """The manifest, then the parts it declares, from ``upload`` into ``target`` (a fresh directory, files made
    by ``create``); ``admit`` may refuse the manifest (e.g. for the disk's room) before any part is written.
    Every entry is checked by name and size and read to the end, so a corrupt, truncated or oversized upload
    fails here, before anything reaches the archive."""
    written = 0
    manifest: Manifest | None = None

    def take_manifest(data: bytes) -> Manifest:
        nonlocal written
        found = check_manifest(data)
        admit(found)
        with create(target / MANIFEST) as out:
            out.write(data)
        written += len(data)
        return found

    def copy(source: IO[bytes], name: str, announced: int | None) -> None:
        nonlocal written
        assert manifest is not None
        check_entry_name(name)
        size = manifest.sizes.get(name)
        if size is None or name == MANIFEST:
            raise ImportError_(f"entry {name!r} is not named by {MANIFEST}")
        path = target / name
        if path.exists():
            raise ImportError_(f"entry {name!r} appears twice")
        if announced is not None and (announced > size or (name in manifest.exact and announced != size)):
            raise ImportError_(f"entry {name!r} is {announced} bytes where {MANIFEST} declares {size}")
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = manifest.frames_of(name)
        check = _frame_checks(entry) if entry is not None else lambda _o, _c: None
        copied = 0
        with create(path) as out:
            while chunk := _read_full(source, min(CHUNK, size + 1 - copied)):
                check(copied, chunk)
                copied += len(chunk)
                written += len(chunk)
                if copied > size or written > manifest.declared_bytes + MARGIN_BYTES:
                    raise ImportError_(f"entry {name!r} holds more than the {size} bytes {MANIFEST} declares")
                out.write(chunk)
        if name in manifest.exact and copied != size:
            raise ImportError_(f"{name} is {copied} bytes, not {size}: the upload is truncated")

    try:
        if compression == "ZIP":
            with zipfile.ZipFile(upload) as zf:
                infos = zf.infolist()
                for info in infos:
                    check_entry_name(info.filename)
                first = next((i for i in infos if i.filename == MANIFEST), None)
                if first is None:
                    raise ImportError_(f"the upload has no {MANIFEST}")
                with zf.open(first) as source:
                    manifest = take_manifest(_read_manifest(source, first.file_size))
                for info in infos:
                    if info is first:
                        continue
                    if info.is_dir() or stat.S_ISLNK(info.external_attr >> 16):
                        raise ImportError_(f"entry {info.filename!r} is not a regular file")
                    with zf.open(info) as source:
                        copy(source, info.filename, info.file_size)
        else:
            mode = "r|gz" if compression == "GZIP" else "r|"
            with tarfile.open(upload, mode) as tar:
                for info in tar:
                    check_entry_name(info.name)
                    if not info.isfile():
                        raise ImportError_(f"entry {info.name!r} is not a regular file")
                    source = tar.extractfile(info)
                    assert source is not None
                    if manifest is None:
                        if info.name != MANIFEST:
                            raise ImportError_(f"the upload's first entry is {info.name!r}, not {MANIFEST}")
                        manifest = take_manifest(_read_manifest(source, info.size))
                    else:
                        copy(source, info.name, info.size)
    except ImportError_:
        raise
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, OSError) as e:
        raise ImportError_(f"the upload is corrupt or truncated ({compression}): {e}") from None
    if manifest is None:
        raise ImportError_(f"the upload has no {MANIFEST}")
    for name in manifest.sizes:
        if not (target / name).exists():
            raise ImportError_(f"{name} is missing: the upload is truncated")
    return manifest


def part(directory: Path, name: str) -> Path:
    """The unpacked part ``name``: a regular file with one link, inside ``directory`` (checked again on disk,
    right before it is read)."""
    path = directory / name
    try:
        info = os.lstat(path)
    except OSError:
        raise ImportError_(f"{name} is missing from the upload") from None
    inside = path.resolve().is_relative_to(directory.resolve())
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1 or not inside:
        raise ImportError_(f"{name} is not a plain file of the upload")
    return path
