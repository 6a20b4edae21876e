"""Message: a whole message (fragments reassembled) as ``Subscription.poll_messages`` and the asyncio iterator
(driver/client/aio.py) hand it over, with the header fields of its last fragment."""

from __future__ import annotations

from typing import Any, NamedTuple


class Message(NamedTuple):
    """A tuple so that the fast path (driver/concurrent/logbuffer/fastpath.py) fills it in C as ``tuple.__new__``
    would: one allocation per message and no Python call."""

    data: bytes
    session_id: int
    stream_id: int
    position: int
    reserved_value: int


def message_of(buffer: Any, offset: int, length: int, header: Any) -> Message:
    """The Message of a (reassembled) fragment handed to a fragment handler: its bytes copied."""
    return Message(
        bytes(buffer.view[offset : offset + length]),
        header.session_id,
        header.stream_id,
        header.position,
        header.reserved_value,
    )
