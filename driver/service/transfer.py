"""Export and import of data sets (docs/service.md section 6).

Export streams the recordings' stored bytes from the segment files (export_format.py). Import stores the upload
in a temporary directory under ``datasets/``, unpacks and checks all of it there, and only then re-creates each
recording: an exclusive IPC publication placed at the original start position (init-term-id, term-id,
term-offset, the original term length) is recorded while the stored frames are appended to it whole
(``offer_block``), so the new recording holds the same frames at the same positions; its index is then replaced by
the exported one, which keeps the recorded timing. The data set appears (its manifest is written) last; any
failure removes the temporary directory and empties the recordings made so far.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
import time
from pathlib import Path
from typing import Literal

from fastapi import FastAPI, Query, Request
from fastapi.responses import StreamingResponse
from starlette.requests import ClientDisconnect

from driver.archive.client import NULL_POSITION, NULL_RECORDING_ID, ArchiveError
from driver.archive.codecs import SourceLocation
from driver.archive.recording_index import index_path
from driver.client import CLOSED, MAX_POSITION_EXCEEDED
from driver.service.export_format import (
    CHUNK,
    FORMAT,
    MEDIA_TYPES,
    SUFFIXES,
    VERSION,
    ImportError_,
    Member,
    detect_compression,
    export_stream,
    file_chunks,
    manifest_member,
    recording_chunks,
)
from driver.service.forwarding import close_quietly
from driver.service.models import API, ERRORS, DataSet
from driver.service.service import RecordReplayService, ServiceError
from driver.service.upload import ExportEntry, Manifest, part, unpack
from driver.util.files import free_bytes

log = logging.getLogger(__name__)

MAX_IMPORT_BYTES = 64 << 30
IMPORT_CHANNEL = "aeron:ipc"
STEP_TIMEOUT_S = 30.0


# -- export ----------------------------------------------------------------------------------------------------


async def export_members(service: RecordReplayService, dataset: DataSet) -> list[Member]:
    entries = []
    members: list[Member] = []
    for n, rec in enumerate(dataset.recordings):
        descriptor = await service.call_archive(service.archive.list_recording_async, rec.recording_id)
        if descriptor is None:
            raise ServiceError(
                409, f"recording {rec.recording_id} of data set {dataset.id} is not in the archive"
            )
        entry = {
            "recording_id": rec.recording_id,
            "frames": f"recordings/{n}.frames",
            "start_position": rec.start_position,
            "stop_position": rec.stop_position,
            "term_buffer_length": descriptor.term_buffer_length,
            "initial_term_id": descriptor.initial_term_id,
            "segment_file_length": descriptor.segment_file_length,
            "mtu_length": descriptor.mtu_length,
        }
        members.append(
            Member(
                entry["frames"],
                rec.stop_position - rec.start_position,
                recording_chunks(
                    service.archive_dir,
                    rec.recording_id,
                    rec.start_position,
                    rec.stop_position,
                    descriptor.term_buffer_length,
                    descriptor.segment_file_length,
                ),
            )
        )
        idx = index_path(service.archive_dir, rec.recording_id)
        if idx.is_file():
            entry["index"] = f"recordings/{n}.idx"
            entry["index_length"] = idx.stat().st_size
            members.append(Member(entry["index"], entry["index_length"], file_chunks(idx)))
        entries.append(entry)
    manifest = {"format": FORMAT, "version": VERSION, "dataset": dataset.model_dump(), "recordings": entries}
    return [manifest_member(manifest), *members]


# -- import ----------------------------------------------------------------------------------------------------


async def _recreate(
    service: RecordReplayService, directory: Path, entry: ExportEntry, made: list[tuple[int, int]]
) -> int:
    """One recording back into the archive, frames at their original positions; its new recording id."""
    archive = service.archive
    start, stop = entry.start_position, entry.stop_position
    term_length, initial_term_id = entry.term_buffer_length, entry.initial_term_id
    term_id = initial_term_id + start // term_length
    channel = (
        f"{IMPORT_CHANNEL}?term-length={term_length}|init-term-id={initial_term_id}|term-id={term_id}"
        f"|term-offset={start % term_length}"
    )
    stream_id = service.next_stream_id()
    await service.call_archive(archive.start_recording_async, IMPORT_CHANNEL, stream_id, SourceLocation.LOCAL)
    publication = None
    try:
        publication = await service.aeron.add_exclusive_publication_async(channel, stream_id)
        deadline = time.monotonic() + STEP_TIMEOUT_S
        recording_id = NULL_RECORDING_ID
        while recording_id == NULL_RECORDING_ID:
            recording_id = await service.call_archive(
                archive.find_last_matching_recording_async,
                0,
                IMPORT_CHANNEL,
                stream_id,
                publication.session_id,
            )
            if time.monotonic() > deadline:
                raise TimeoutError("the archive did not start recording the import")
            if recording_id == NULL_RECORDING_ID:
                await asyncio.sleep(0.002)
        made.append((recording_id, start))
        block = bytearray()
        with open(part(directory, entry.frames), "rb") as frames:
            eof = False
            while True:
                # A padding frame may run to the term's end: the block holds at least the whole first frame.
                first = 32
                if len(block) >= 4:
                    frame_length = int.from_bytes(block[:4], "little", signed=True)
                    if frame_length <= 0:
                        raise ImportError_(f"{entry.frames} holds a frame of length {frame_length}")
                    first = (frame_length + 31) & ~31
                need = max(CHUNK, first)
                while len(block) < need and not eof:
                    chunk = await asyncio.to_thread(frames.read, need - len(block))
                    eof = not chunk
                    block += chunk
                if not block:
                    break
                if len(block) < first:
                    if eof:
                        raise ImportError_(f"{entry.frames} ends inside a frame")
                    continue
                before = publication.position
                result = publication.offer_block(block, len(block), len(block))
                if result in (CLOSED, MAX_POSITION_EXCEEDED):
                    raise RuntimeError("the import publication closed")
                if result > before:
                    del block[: result - before]
                    deadline = time.monotonic() + STEP_TIMEOUT_S
                else:
                    if time.monotonic() > deadline:
                        raise TimeoutError("the archive stopped taking the import")
                    await asyncio.sleep(0.0005)
        if publication.position != stop:
            raise ImportError_(f"{entry.frames} holds frames up to {publication.position}, not {stop}")
        while await service.call_archive(archive.get_recording_position_async, recording_id) < stop:
            if time.monotonic() > deadline:
                raise TimeoutError("the archive did not record the whole import")
            await asyncio.sleep(0.002)
    finally:
        with contextlib.suppress(ArchiveError):
            await service.call_archive(archive.stop_recording_async, IMPORT_CHANNEL, stream_id)
        if publication is not None:
            await close_quietly(publication)
    # The index goes in once the recording has stopped (its writer closed).
    deadline = time.monotonic() + STEP_TIMEOUT_S
    while True:
        descriptor = await service.call_archive(archive.list_recording_async, recording_id)
        if descriptor is not None and descriptor.stop_position != NULL_POSITION:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"recording {recording_id} did not stop")
        await asyncio.sleep(0.005)
    if entry.index is not None:
        target = index_path(service.archive_dir, recording_id)
        tmp = target.with_suffix(".idx.import")
        source = part(directory, entry.index)
        await asyncio.to_thread(_copy, source, tmp, service.store.create)
        tmp.replace(target)
    return recording_id


def _copy(source: Path, target: Path, create) -> None:
    with open(source, "rb") as src, create(target) as out:
        shutil.copyfileobj(src, out, CHUNK)


def _room_for(service: RecordReplayService, manifest: Manifest, max_bytes: int) -> None:
    """The parts are unpacked and then recorded: twice what the manifest declares must fit on the disk."""
    if manifest.declared_bytes > max_bytes:
        raise ServiceError(413, f"the data set is larger than {max_bytes} bytes")
    needed = 2 * manifest.declared_bytes
    free = free_bytes(service.store.dir)
    if free is not None and needed > free:
        raise ServiceError(
            507,
            f"the data set needs {needed} bytes (unpacked and recorded), the archive's disk has {free} free",
        )


async def import_dataset(
    service: RecordReplayService, request: Request, filename: str | None, on_conflict: str, max_bytes: int
) -> DataSet:
    work = Path(tempfile.mkdtemp(prefix=".import-", dir=service.store.dir))
    made: list[tuple[int, int]] = []
    try:
        upload = work / "upload"
        total = 0
        head = b""
        with service.store.create(upload) as out:
            async for chunk in request.stream():
                total += len(chunk)
                if total > max_bytes:
                    raise ServiceError(413, f"the upload is larger than {max_bytes} bytes")
                if len(head) < 8:
                    head += chunk[:8]
                await asyncio.to_thread(out.write, chunk)
        if total == 0:
            raise ImportError_("the upload is empty")
        compression = detect_compression(request.headers.get("content-encoding"), filename, head)
        unpacked = work / "unpacked"
        unpacked.mkdir()
        manifest = await asyncio.to_thread(
            unpack,
            upload,
            compression,
            unpacked,
            service.store.create,
            lambda m: _room_for(service, m, max_bytes),
        )
        upload.unlink()
        original, entries = manifest.dataset, manifest.entries
        async with service.transfer_lock:
            recordings = []
            for entry, rec in zip(entries, original.recordings, strict=True):
                recording_id = await _recreate(service, unpacked, entry, made)
                recordings.append(rec.model_copy(update={"recording_id": recording_id}))
            replaced = service.store.by_name(original.name) if on_conflict == "replace" else []
            dataset = original.model_copy(
                update={
                    "id": service.store.new_id(),
                    "recordings": recordings,
                    "created": service.now_iso(),
                    "imported_from": original.id,
                }
            )
            service.store.save(dataset)
            made.clear()
        for old in replaced:
            with contextlib.suppress(ServiceError):
                await service.delete_dataset(old.id)
        return dataset
    except ImportError_ as e:
        raise ServiceError(400, str(e)) from None
    except ClientDisconnect:
        # The client went (or the connection bounds closed a stalled upload with 408): nobody reads this answer,
        # but an answer rather than the exception keeps a traceback out of the service's log.
        raise ServiceError(400, "the client went away before the upload ended") from None
    finally:
        await asyncio.to_thread(shutil.rmtree, work, True)
        for recording_id, start in made:  # a failed import leaves no recording with data behind
            with contextlib.suppress(ArchiveError):
                await service.call_archive(service.archive.truncate_recording_async, recording_id, start)


# -- routes ----------------------------------------------------------------------------------------------------


def add_transfer_routes(
    app: FastAPI, service: RecordReplayService, max_import_bytes: int = MAX_IMPORT_BYTES
) -> None:
    @app.get(
        f"{API}/datasets/{{dataset_id}}/export",
        responses={**ERRORS, 200: {"content": {t: {} for t in MEDIA_TYPES.values()}}},
        response_class=StreamingResponse,
    )
    async def export(
        dataset_id: str, compression: Literal["NONE", "ZIP", "GZIP"] = "NONE"
    ) -> StreamingResponse:
        """The data set as a file (tar, tar.gz or zip), streamed from the segment files."""
        dataset = service.get_dataset(dataset_id)
        members = await export_members(service, dataset)
        filename = f"{dataset.name}-{dataset.id}{SUFFIXES[compression]}".replace('"', "").replace("/", "_")
        return StreamingResponse(
            export_stream(compression, members),
            media_type=MEDIA_TYPES[compression],
            headers={"Content-Disposition": f'attachment; filename="{filename}"'},
        )

    @app.post(
        f"{API}/datasets/import",
        response_model=DataSet,
        status_code=201,
        responses=ERRORS,
        openapi_extra={
            "requestBody": {
                "required": True,
                "description": "an export file (tar, tar.gz or zip) as the raw body, any Content-Type",
                "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
            }
        },
    )
    async def import_(
        request: Request,
        filename: str | None = Query(
            default=None, max_length=255, description="tells the compression by suffix"
        ),
        on_conflict: Literal["keep", "replace"] = Query(
            default="keep",
            description="keep: a data set of the same name stays; replace: it is deleted after",
        ),
    ) -> DataSet:
        """The body is an export file (raw, not a form); compression from Content-Encoding, else ``filename``,
        else the first bytes. The data set gets a new id."""
        return await import_dataset(service, request, filename, on_conflict, max_import_bytes)
