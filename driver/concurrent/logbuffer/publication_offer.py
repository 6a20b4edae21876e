"""A publication's offer as ONE native call (native/src/amd_publication.c): shared (NativeOffer) or exclusive
(NativeExclusiveOffer).

The Python publisher's throughput is bounded by how many Python-to-C crossings an offer makes; doing
the limit check, the append and the rotation in one call keeps an offer to about one crossing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from driver._native import ffi, lib
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer import fastpath
from driver.concurrent.logbuffer.log_buffers import LogBuffers

MESSAGE_TOO_LONG = lib.AMD_OFFER_MESSAGE_TOO_LONG
TERM_ID_MISMATCH = lib.AMD_OFFER_TERM_ID_MISMATCH


class NativeOffer:
    """Holds the per-publication constants of the native offer; ``offer`` is the hot path."""

    __slots__ = ("_closed", "_struct", "_terms")

    _STRUCT = "amd_publication_t *"
    _EXCLUSIVE = False

    def __init__(
        self,
        log_buffers: LogBuffers,
        limit_values: AtomicBuffer,
        limit_offset: int,
        header_template: bytes,
        position_bits_to_shift: int,
        initial_term_id: int,
        max_payload_length: int,
        max_message_length: int,
        max_possible_position: int,
    ) -> None:
        self._struct = ffi.new(self._STRUCT)
        self._terms = tuple(log_buffers.term_buffers)
        s = self._struct.constants if self._EXCLUSIVE else self._struct
        s.log = log_buffers.term_buffers[0].address()
        s.meta = log_buffers.meta_data_buffer.address()
        s.limit = limit_values.address(limit_offset)
        s.term_length = log_buffers.term_length
        s.position_bits_to_shift = position_bits_to_shift
        s.initial_term_id = initial_term_id
        s.max_payload_length = max_payload_length
        s.max_message_length = max_message_length
        s.max_possible_position = max_possible_position
        s.header_template = header_template
        # Read by the fast path's offers before they touch the log: set once the publication is closed.
        self._closed = ffi.new("int32_t *")

    def close(self) -> None:
        """From now on the fast path's offers return CLOSED (even one bound before the close)."""
        self._closed[0] = 1

    def fast_offers(
        self, on_error: Callable[[int, Any], int], wait: Callable[..., Awaitable[int]]
    ) -> tuple[Callable[..., Any], ...] | None:
        """``(offer(data, reserved_value=0), offer_many(messages), offer_async(data, **kwargs),
        try_claim(length, buffer_claim))`` as single C calls (driver/concurrent/logbuffer/fastpath.py), or None
        when the fast path is off or not built. ``on_error(code, data)`` gets MESSAGE_TOO_LONG and
        TERM_ID_MISMATCH (data None for a claim); what it returns is returned. ``wait(data, **kwargs)`` is the
        coroutine ``offer_async`` returns when its offer did not go at once."""
        address = int(ffi.cast("uintptr_t", self._struct))
        closed = int(ffi.cast("uintptr_t", self._closed))
        return fastpath.bind_offers(
            self, address, closed, on_error, wait, self._terms, exclusive=self._EXCLUSIVE
        )

    def offer(self, src: Any, reserved_value: int = 0) -> int:
        """New position, or a negative code (Publication's, MESSAGE_TOO_LONG or TERM_ID_MISMATCH)."""
        if type(src) is not bytes:
            src = ffi.from_buffer("uint8_t[]", src)
        return lib.amd_publication_offer(self._struct, src, len(src), reserved_value)


class NativeExclusiveOffer(NativeOffer):
    """An exclusive publication's offer; its struct also holds where the publication is (term id, term offset,
    partition, term begin position), which ``state`` exposes for the publication's other appends."""

    __slots__ = ()

    _STRUCT = "amd_exclusive_publication_t *"
    _EXCLUSIVE = True

    @property
    def state(self) -> Any:
        """The struct's fields ``term_begin_position``, ``term_id``, ``term_offset`` and
        ``active_partition_index``, read and written in place (cffi)."""
        return self._struct

    def offer(self, src: Any, reserved_value: int = 0) -> int:
        if type(src) is not bytes:
            src = ffi.from_buffer("uint8_t[]", src)
        return lib.amd_exclusive_publication_offer(self._struct, src, len(src), reserved_value)
