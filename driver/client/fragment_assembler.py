"""FragmentAssembler: turns the fragments of messages longer than one frame back into whole messages."""

from __future__ import annotations

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer.header import Header
from driver.concurrent.logbuffer.term_reader import FragmentHandler
from driver.protocol.frames import BEGIN_FLAG, END_FLAG, UNFRAGMENTED


class FragmentAssembler:
    """Wrap a handler: whole messages go straight through; fragments are gathered per session first.

    The handler receives (buffer, offset, length, header) with the whole message; for an assembled one
    the buffer is a scratch AtomicBuffer, valid until the handler returns.
    """

    def __init__(self, delegate: FragmentHandler, initial_buffer_length: int = 4096) -> None:
        self._delegate = delegate
        self._initial_buffer_length = initial_buffer_length
        self._builders: dict[int, bytearray] = {}

    def __call__(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        flags = header.flags
        if flags & UNFRAGMENTED == UNFRAGMENTED:
            self._delegate(buffer, offset, length, header)
            return
        session_id = header.session_id
        if flags & BEGIN_FLAG:
            builder = self._builders.get(session_id)
            if builder is None:
                builder = self._builders[session_id] = bytearray()
            builder[:] = buffer.view[offset : offset + length]
            return
        builder = self._builders.get(session_id)
        if builder is None or not builder:
            return  # a middle or end without its beginning (joined mid-message): drop it
        builder += buffer.view[offset : offset + length]
        if flags & END_FLAG:
            assembled = AtomicBuffer(builder)
            try:
                self._delegate(assembled, 0, len(builder), header)
            finally:
                assembled.close()
                builder.clear()

    def free_session_buffer(self, session_id: int) -> None:
        self._builders.pop(session_id, None)
