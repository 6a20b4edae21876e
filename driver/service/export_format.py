"""The export file (docs/service.md section 6): ``manifest.json`` first, then for each recording ``recordings/<n>.frames``
(its bytes from start to stop position as the archive stored them: frames with their headers, padding included)
and ``recordings/<n>.idx`` (its sidecar index, docs/archive.md section 18). NONE is a POSIX tar, GZIP the same tar
gzipped, ZIP a zip archive (deflated). Written as a stream: each chunk is yielded as soon as it is made, so
memory stays bounded whatever the size."""

from __future__ import annotations

import io
import json
import tarfile
import time
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from driver.archive.segment_file import segment_path, segment_position

FORMAT = "aio-media-driver-dataset"
VERSION = 1
MANIFEST = "manifest.json"
CHUNK = 1 << 20
MEDIA_TYPES = {"NONE": "application/x-tar", "GZIP": "application/gzip", "ZIP": "application/zip"}
SUFFIXES = {"NONE": ".tar", "GZIP": ".tar.gz", "ZIP": ".zip"}


@dataclass
class Member:
    name: str
    size: int
    chunks: Iterable[bytes]


def recording_chunks(
    archive_dir: Path, recording_id: int, start: int, stop: int, term_length: int, segment_length: int
) -> Iterator[bytes]:
    """The recording's stored bytes [start, stop), read segment by segment (docs/archive.md section 7)."""
    position = start
    while position < stop:
        index, offset = segment_position(start, position, term_length, segment_length)
        length = min(stop - position, segment_length - offset, CHUNK)
        with open(segment_path(archive_dir, recording_id, index), "rb") as f:
            f.seek(offset)
            data = f.read(length)
        if len(data) < length:  # a hole at the end of a sparse segment reads as zeros
            data += bytes(length - len(data))
        yield data
        position += length


def file_chunks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            yield chunk


def manifest_member(manifest: dict) -> Member:
    data = json.dumps(manifest, indent=2).encode()
    return Member(MANIFEST, len(data), [data])


def tar_stream(members: Iterable[Member]) -> Iterator[bytes]:
    now = int(time.time())
    for member in members:
        info = tarfile.TarInfo(member.name)
        info.size, info.mtime, info.mode = member.size, now, 0o644
        yield info.tobuf(format=tarfile.PAX_FORMAT)
        written = 0
        for chunk in member.chunks:
            written += len(chunk)
            yield chunk
        if written != member.size:
            raise ValueError(f"{member.name}: {written} bytes, {member.size} announced")
        if member.size % tarfile.BLOCKSIZE:
            yield bytes(tarfile.BLOCKSIZE - member.size % tarfile.BLOCKSIZE)
    yield bytes(2 * tarfile.BLOCKSIZE)


def gzip_stream(chunks: Iterable[bytes]) -> Iterator[bytes]:
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)  # wbits 31: the gzip container
    for chunk in chunks:
        if out := compressor.compress(chunk):
            yield out
    yield compressor.flush()


class _Sink(io.RawIOBase):
    """A write-only, unseekable file for zipfile: it then writes data descriptors after each entry."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        data = b"".join(self.parts)
        self.parts.clear()
        return data


def zip_stream(members: Iterable[Member]) -> Iterator[bytes]:
    sink = _Sink()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        for member in members:
            info = zipfile.ZipInfo(member.name, time.localtime()[:6])
            info.compress_type = zipfile.ZIP_DEFLATED
            with zf.open(info, "w", force_zip64=True) as entry:
                for chunk in member.chunks:
                    entry.write(chunk)
                    if sum(len(p) for p in sink.parts) >= CHUNK:
                        yield sink.take()
            yield sink.take()
    yield sink.take()


def export_stream(compression: str, members: Iterable[Member]) -> Iterator[bytes]:
    if compression == "ZIP":
        return zip_stream(members)
    tar = tar_stream(members)
    return gzip_stream(tar) if compression == "GZIP" else tar


class ImportError_(ValueError):
    """An upload the service refuses; the message says why (an HTTP 400)."""


def detect_compression(content_encoding: str | None, filename: str | None, head: bytes) -> str:
    """From Content-Encoding, else the file name, else the first bytes."""
    encoding = (content_encoding or "").strip().lower()
    if encoding in ("gzip", "x-gzip"):
        return "GZIP"
    if encoding == "zip":
        return "ZIP"
    if encoding not in ("", "identity"):
        raise ImportError_(f"Content-Encoding {content_encoding!r} is not one of gzip, zip, identity")
    name = (filename or "").lower()
    if name.endswith((".tar.gz", ".tgz", ".gz")):
        return "GZIP"
    if name.endswith(".zip"):
        return "ZIP"
    if name.endswith(".tar"):
        return "NONE"
    if head.startswith(b"PK\x03\x04"):
        return "ZIP"
    if head.startswith(b"\x1f\x8b"):
        return "GZIP"
    return "NONE"
