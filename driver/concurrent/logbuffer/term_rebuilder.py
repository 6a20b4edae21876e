"""TermRebuilder.insert: a datagram from the network copied into a term at the offset its header names.

docs/logbuffer.md section 7, Aeron 1.15.1, with two differences that only ever drop or keep bytes Aeron
would have handled worse, never change what a healthy stream rebuilds to:

- The datagram is checked first (every frame: version 0, DATA or PAD, the first frame's session, stream and
  term id, a term_offset equal to where it sits, whole inside the datagram and the term; PAD only last). A
  datagram that fails is not written at all: the result says so and the receiver counts it as invalid.
- Aeron copies the whole datagram only if its first frame is absent. Here each absent frame goes in (body,
  then header words at +24, +16, +8, then the first 8 bytes with a release store), so a retransmission that
  overlaps data already received still fills the frames that were missing.

A heartbeat (32 bytes, frame length 0) writes nothing. One native call.

:class:`RebuildBatch` is the receiver's hot path: one native call per received batch inserts every plain
DATA datagram of the images in its table (flow control window checked as ``PublicationImage.insert_packet``
does) and leaves the rest (SETUP, RTTM, heartbeats, unknown sessions, anything odd) to Python by index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from driver._native import ffi, lib
from driver.concurrent.atomic_buffer import TERM_REBUILD_MALFORMED, TERM_REBUILD_OUT_OF_TERM, AtomicBuffer

OUT_OF_TERM: int = TERM_REBUILD_OUT_OF_TERM
"""The datagram does not fit the term at ``term_offset`` (or the offset is negative or not 32-aligned)."""
MALFORMED: int = TERM_REBUILD_MALFORMED
"""A frame header of the datagram is inconsistent: nothing was written."""


class DatagramBatch(Protocol):
    """What :meth:`RebuildBatch.rebuild` reads of a received batch (``driver.media.udp_batch.ReceiveBatch``;
    the log buffer code sits below the I/O code and does not import it): datagrams in one buffer, where
    each starts in a native ``int64_t`` array and their lengths in a native ``int32_t`` array."""

    @property
    def slot_buffer(self) -> AtomicBuffer: ...
    @property
    def offsets_pointer(self) -> Any: ...
    @property
    def lengths_pointer(self) -> Any: ...
    @property
    def count(self) -> int: ...


def insert(
    term_buffer: AtomicBuffer, term_offset: int, packet: Any, length: int, packet_offset: int = 0
) -> int:
    """Insert ``packet[packet_offset : packet_offset + length]`` at ``term_offset``.

    Returns the number of frames written (0: all were duplicates, or a heartbeat), or ``OUT_OF_TERM`` /
    ``MALFORMED`` (< 0) when the datagram was rejected and nothing written."""
    return term_buffer.term_rebuild_insert(term_offset, packet, packet_offset, length)


class RebuildBatch:
    """A table of up to ``capacity`` images and one native call that rebuilds a :class:`DatagramBatch` into them
    (``amd_term_rebuild_batch``; native/README.md "Receiver rebuild").

    A datagram goes in when its first frame is DATA (not a heartbeat) with a sound header, its session and
    stream are an entry's, the entry is accepting, and it fits the entry's term; then it is an under-run
    (starts below ``last_sm_position``), an over-run (ends above ``window_limit``), rejected by the insert
    (invalid), or inserted (the entry's high-water mark proposal rises to its end position). Every other
    datagram is left, in order, to the caller (:meth:`unhandled`).

    The table keeps raw pointers to the images' terms: call :meth:`set_images` again (or :meth:`clear`)
    before any of those buffers is closed.
    """

    __slots__ = (
        "_bytes",
        "_images",
        "_unhandled",
        "_unhandled_capacity",
        "_unhandled_view",
        "capacity",
        "count",
    )

    def __init__(self, capacity: int = 16) -> None:
        if capacity < 1:
            raise ValueError(f"capacity={capacity}: expected at least 1")
        self.capacity = capacity
        self.count = 0
        self._images = ffi.new("amd_rebuild_image[]", capacity)
        self._unhandled_capacity = 0
        self._ensure_unhandled(64)
        self._bytes = ffi.new("int64_t[1]")

    def set_images(self, images: Sequence[tuple[int, int, int, int, Sequence[AtomicBuffer]]]) -> int:
        """The table: (session id, stream id, initial term id, position bits to shift, the 3 term buffers)
        per image. Returns how many were kept (the first ``capacity``; the rest stay with the caller)."""
        self.clear()
        count = min(len(images), self.capacity)
        for i in range(count):
            session_id, stream_id, initial_term_id, bits, terms = images[i]
            entry = self._images[i]
            entry.session_id = session_id
            entry.stream_id = stream_id
            entry.initial_term_id = initial_term_id
            entry.position_bits_to_shift = bits
            entry.term_length = len(terms[0])
            for index in range(3):
                if len(terms[index]) != entry.term_length:
                    raise ValueError("the three term buffers of an image must have the same length")
                entry.terms[index] = terms[index].address(0)
        self.count = count
        return count

    def clear(self) -> None:
        """Forget every entry (and its term pointers)."""
        size = ffi.sizeof(self._images)
        ffi.memmove(self._images, bytes(size), size)
        self.count = 0

    def prepare(self, i: int, last_sm_position: int, window_limit: int, is_accepting: bool) -> None:
        """Entry ``i``'s flow control window for the next :meth:`rebuild`, its results zeroed."""
        entry = self._images[i]
        entry.last_sm_position = last_sm_position
        entry.window_limit = window_limit
        entry.is_accepting = 1 if is_accepting else 0
        entry.hwm_position = 0
        entry.inserted = 0
        entry.under_runs = 0
        entry.over_runs = 0
        entry.invalid = 0

    def native_images(self) -> tuple[Any, int]:
        """The table's native entries and how many are set, for the driver's native steady-state cycle
        (driver/fast_cycle.py), which rebuilds into them between :meth:`prepare` calls."""
        return self._images, self.count

    def _ensure_unhandled(self, count: int) -> None:
        if count > self._unhandled_capacity:
            self._unhandled_capacity = count
            self._unhandled = ffi.new("int32_t[]", count)
            self._unhandled_view = memoryview(ffi.buffer(self._unhandled)).cast("i")

    def native_unhandled(self, count: int) -> Any:
        """Room for ``count`` indexes left to the caller, for a native step that rebuilds into this table (read
        them with :meth:`unhandled`)."""
        if count > self._unhandled_capacity:
            self._ensure_unhandled(count)
        return self._unhandled

    def rebuild(self, batch: DatagramBatch) -> int:
        """Insert what the table takes of ``batch``'s datagrams; returns how many are left to the caller."""
        if batch.count > self._unhandled_capacity:
            self._ensure_unhandled(batch.count)
        self._bytes[0] = 0
        return lib.amd_term_rebuild_batch_at(
            batch.slot_buffer.address(0),
            batch.offsets_pointer,
            batch.lengths_pointer,
            batch.count,
            self._images,
            self.count,
            self._unhandled,
            self._bytes,
        )

    def unhandled(self, count: int) -> list[int]:
        """The batch indices (ascending) of the ``count`` datagrams :meth:`rebuild` left to the caller."""
        return self._unhandled_view[0:count].tolist()

    @property
    def bytes_received(self) -> int:
        """Bytes of the datagrams the last :meth:`rebuild` took (inserted or not)."""
        return self._bytes[0]

    def result(self, i: int) -> tuple[int, int, int, int, int]:
        """Entry ``i`` after :meth:`rebuild`: (inserted, high-water mark proposal (0: none), under-runs,
        over-runs, invalid)."""
        entry = self._images[i]
        return entry.inserted, entry.hwm_position, entry.under_runs, entry.over_runs, entry.invalid
