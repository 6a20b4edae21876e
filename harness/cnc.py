"""A small reader of a driver's cnc.dat (pread only), independent of driver/ so that it checks either driver:
readiness, the header, the counters and the to-driver ring's positions (docs/cnc.md)."""

from __future__ import annotations

import os
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.children import wait_ready
from harness.errors import PeerError

CNC_FILE = "cnc.dat"
CNC_VERSION = 15
HEADER = struct.Struct("<6i3q")  # version, 5 buffer lengths, client liveness ns, start ms, pid
END_OF_METADATA_OFFSET = (
    128  # the header padded to 128; then the to-driver ring, the to-clients buffer, counters
)
RING_TRAILER_LENGTH = 768
RING_TAIL_OFFSET = 128  # trailer fields relative to the ring's capacity
RING_HEAD_OFFSET = RING_TAIL_OFFSET + 256
RING_CONSUMER_HEARTBEAT_OFFSET = RING_HEAD_OFFSET + 256
METADATA_LENGTH = 512  # one counter's metadata record: state, type id, ..., key, label
KEY_OFFSET = 16
KEY_SESSION_STREAM_OFFSET = (
    KEY_OFFSET + 8
)  # a stream position counter's key: registration id, session, stream
LABEL_LENGTH_OFFSET = 128
LABEL_OFFSET = LABEL_LENGTH_OFFSET + 4
MAX_LABEL_LENGTH = METADATA_LENGTH - LABEL_OFFSET
COUNTER_LENGTH = 128  # one counter's value record
RECORD_UNUSED, RECORD_ALLOCATED, RECORD_RECLAIMED = 0, 1, -1
SYSTEM_COUNTER_TYPE_ID = 0


@dataclass(frozen=True)
class CncHeader:
    version: int
    to_driver_length: int
    to_clients_length: int
    counters_metadata_length: int
    counters_values_length: int
    error_log_length: int
    client_liveness_timeout_ns: int
    start_timestamp_ms: int
    pid: int
    file_length: int

    @property
    def metadata_offset(self) -> int:
        return END_OF_METADATA_OFFSET + self.to_driver_length + self.to_clients_length

    @property
    def values_offset(self) -> int:
        return self.metadata_offset + self.counters_metadata_length

    @property
    def ring_trailer_offset(self) -> int:
        return END_OF_METADATA_OFFSET + self.to_driver_length - RING_TRAILER_LENGTH

    @property
    def consumer_heartbeat_offset(self) -> int:
        return self.ring_trailer_offset + RING_CONSUMER_HEARTBEAT_OFFSET


@dataclass(frozen=True)
class CncCounter:
    id: int
    state: int
    type_id: int
    key: bytes  # all MAX_KEY_LENGTH (112) bytes
    label: str
    value: int


def read_cnc_header(aeron_dir: Path | str) -> CncHeader | None:
    """The cnc.dat header, or None while the file is missing or shorter than the header."""
    try:
        with open(Path(aeron_dir) / CNC_FILE, "rb", buffering=0) as f:
            raw = os.pread(f.fileno(), HEADER.size, 0)
            size = os.fstat(f.fileno()).st_size
    except (FileNotFoundError, NotADirectoryError):
        return None
    if len(raw) < HEADER.size:
        return None
    return CncHeader(*HEADER.unpack_from(raw, 0), file_length=size)


def read_consumer_heartbeat(aeron_dir: Path | str, header: CncHeader) -> int:
    with open(Path(aeron_dir) / CNC_FILE, "rb", buffering=0) as f:
        raw = os.pread(f.fileno(), 8, header.consumer_heartbeat_offset)
    return struct.unpack("<q", raw)[0] if len(raw) == 8 else 0


def cnc_ready(aeron_dir: Path | str) -> bool:
    """Version 15 at offset 0 (written last) and a nonzero to-driver consumer heartbeat (docs/cnc.md)."""
    header = read_cnc_header(aeron_dir)
    if header is None or header.version != CNC_VERSION or header.to_driver_length <= RING_TRAILER_LENGTH:
        return False
    if header.file_length < header.consumer_heartbeat_offset + 8:
        return False
    return read_consumer_heartbeat(aeron_dir, header) != 0


def wait_for_cnc(popen: subprocess.Popen[Any], aeron_dir: Path | str, timeout: float) -> None:
    """Until ``cnc_ready``: ChildExited if the driver exits first, NotReady after ``timeout`` seconds."""
    wait_ready(popen, lambda: cnc_ready(aeron_dir), timeout)


def read_to_driver_positions(aeron_dir: Path | str) -> tuple[int, int]:
    """(head, tail) of the to-driver ring: equal once the driver has consumed every command written so far."""
    header = read_cnc_header(aeron_dir)
    if header is None:
        raise RuntimeError(f"no cnc.dat in {aeron_dir}")
    with open(Path(aeron_dir) / CNC_FILE, "rb", buffering=0) as f:
        (tail,) = struct.unpack("<q", os.pread(f.fileno(), 8, header.ring_trailer_offset + RING_TAIL_OFFSET))
        (head,) = struct.unpack("<q", os.pread(f.fileno(), 8, header.ring_trailer_offset + RING_HEAD_OFFSET))
    return head, tail


def to_driver_ring_drained(aeron_dir: Path | str) -> bool:
    head, tail = read_to_driver_positions(aeron_dir)
    return head == tail


def _label(record: bytes) -> str:
    (length,) = struct.unpack_from("<i", record, LABEL_LENGTH_OFFSET)
    return record[LABEL_OFFSET : LABEL_OFFSET + max(0, min(length, MAX_LABEL_LENGTH))].decode(
        "ascii", "replace"
    )


def read_cnc_counters(aeron_dir: Path | str, *, allocated_only: bool = True) -> dict[int, CncCounter]:
    """Counters in cnc.dat, walking metadata records until the first UNUSED one (Agrona CountersReader.forEach)."""
    header = read_cnc_header(aeron_dir)
    if header is None or header.version != CNC_VERSION:
        raise RuntimeError(f"no ready cnc.dat in {aeron_dir}: {header}")
    counters: dict[int, CncCounter] = {}
    with open(Path(aeron_dir) / CNC_FILE, "rb", buffering=0) as f:
        fd = f.fileno()
        for cid in range(header.counters_values_length // COUNTER_LENGTH):
            rec = os.pread(fd, METADATA_LENGTH, header.metadata_offset + cid * METADATA_LENGTH)
            state, type_id = struct.unpack_from("<ii", rec, 0)
            if state == RECORD_UNUSED:
                break
            if allocated_only and state != RECORD_ALLOCATED:
                continue
            (value,) = struct.unpack("<q", os.pread(fd, 8, header.values_offset + cid * COUNTER_LENGTH))
            counters[cid] = CncCounter(
                cid, state, type_id, bytes(rec[KEY_OFFSET:LABEL_LENGTH_OFFSET]), _label(rec), value
            )
    return counters


class Counters:
    """The counters of one driver's cnc.dat, kept open: find by type and label/key, read values by id (cheap
    enough to poll while a benchmark measures)."""

    def __init__(self, aeron_dir: Path) -> None:
        self._file = open(Path(aeron_dir) / CNC_FILE, "rb", buffering=0)  # noqa: SIM115 - closed in close()
        header = HEADER.unpack(os.pread(self._file.fileno(), HEADER.size, 0))
        _, to_driver, to_clients, metadata_length, values_length = header[:5]
        self._metadata = END_OF_METADATA_OFFSET + to_driver + to_clients
        self._values = self._metadata + metadata_length
        self._capacity = values_length // COUNTER_LENGTH

    def close(self) -> None:
        self._file.close()

    def find(
        self, type_id: int, label: str | None = None, session_id: int | None = None, stream_id: int = 0
    ) -> int | None:
        """Id of the first allocated counter of ``type_id`` with that label (system counters) or session id and
        stream id (a stream's position counters)."""
        fd = self._file.fileno()
        for cid in range(self._capacity):
            record = os.pread(fd, METADATA_LENGTH, self._metadata + cid * METADATA_LENGTH)
            state, record_type = struct.unpack_from("<ii", record, 0)
            if state == RECORD_UNUSED:
                return None
            if state != RECORD_ALLOCATED or record_type != type_id:
                continue
            key = struct.unpack_from("<ii", record, KEY_SESSION_STREAM_OFFSET)
            if session_id is not None and key != (session_id, stream_id):
                continue
            if label is not None and _label(record) != label:
                continue
            return cid
        return None

    def value(self, cid: int) -> int:
        return struct.unpack("<q", os.pread(self._file.fileno(), 8, self._values + cid * COUNTER_LENGTH))[0]

    def system(self, label: str) -> int:
        """A system counter's value by label; PeerError when the driver has no such counter."""
        cid = self.find(SYSTEM_COUNTER_TYPE_ID, label=label)
        if cid is None:
            raise PeerError(f"no system counter {label!r}")
        return self.value(cid)
