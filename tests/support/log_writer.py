"""LogWriter: messages into a publication log the way a client's ``Publication.offer`` writes them.

Built on the package's real concurrent offer path (``NativeOffer``: reserve with one get-and-add, write the
frames, pad and rotate at the end of a term), with its own publication limit, so tests that need a log with
messages in it (a network publication to send, a reference stream to cut into datagrams) write exactly what a
publisher would. ``offer`` returns what ``Publication.offer`` would; ``append`` retries the ADMIN_ACTION of a
rotation and returns the new position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from driver._native import lib

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.concurrent.logbuffer.frame_descriptor import HEADER_LENGTH
from driver.concurrent.logbuffer.publication_offer import NativeOffer
from driver.util.bit_util import INT64_MAX

ADMIN_ACTION = lib.AMD_OFFER_ADMIN_ACTION
"""Publication.ADMIN_ACTION: the offer rotated the log (or saw another publisher rotating it); offer again."""


@dataclass(frozen=True)
class _Log:
    """What NativeOffer reads of a LogBuffers: the three terms (contiguous, partition 0 first) and metadata."""

    term_buffers: Sequence[AtomicBuffer]
    meta_data_buffer: AtomicBuffer
    term_length: int


class LogWriter:
    """Offers to the log made of ``term_buffers`` (three contiguous terms) and ``meta`` (initialised
    publication metadata: initial term id, mtu, default header). ``limit`` is the publication limit position
    (default: none)."""

    def __init__(
        self, term_buffers: Sequence[AtomicBuffer], meta: AtomicBuffer, limit: int = INT64_MAX
    ) -> None:
        term_length = term_buffers[0].capacity
        if any(
            b.address() != term_buffers[0].address() + i * term_length for i, b in enumerate(term_buffers)
        ):
            raise ValueError("LogWriter needs the three terms contiguous in memory, partition 0 first")
        self.meta = meta
        self.term_length = term_length
        self.initial_term_id = lbd.initial_term_id(meta)
        self.position_bits_to_shift = lbd.position_bits_to_shift(term_length)
        self.max_payload_length = lbd.mtu_length(meta) - HEADER_LENGTH
        self.header_template = lbd.default_frame_header(meta)
        self._limit = AtomicBuffer(bytearray(8))
        self._limit.put_int64(0, limit)
        self._offer = NativeOffer(
            _Log(tuple(term_buffers), meta, term_length),  # type: ignore[arg-type]
            self._limit,
            0,
            self.header_template,
            self.position_bits_to_shift,
            self.initial_term_id,
            self.max_payload_length,
            lbd.compute_max_message_length(term_length),
            term_length * (1 << 31),
        ).offer

    def set_limit(self, limit: int) -> None:
        self._limit.put_int64(0, limit)

    def offer(self, data: Any, reserved_value: int = 0) -> int:
        """``Publication.offer``: the new position, or a negative code (ADMIN_ACTION after a rotation)."""
        return self._offer(data, reserved_value)

    def append(self, data: Any, reserved_value: int = 0) -> int:
        """Offer until written (through a rotation's ADMIN_ACTION); the new position. Any other code (back
        pressure at the limit, max position) is an error of the test."""
        while True:
            result = self._offer(data, reserved_value)
            if result > 0:
                return result
            if result != ADMIN_ACTION:
                raise AssertionError(f"offer of {len(data)} bytes failed with {result}")
