"""asyncio helpers over the polling client: await an offer through back pressure, iterate messages.

The client itself is synchronous (its calls take microseconds); these helpers only decide when to try
again, yielding to the loop in between, so one event loop can serve many publications and subscriptions.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from driver.client.fragment_assembler import FragmentAssembler
from driver.client.publication import (
    ADMIN_ACTION,
    BACK_PRESSURED,
    CLOSED,
    MAX_POSITION_EXCEEDED,
    NOT_CONNECTED,
    OFFER_RESULT_NAMES,
)
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer.header import Header

if TYPE_CHECKING:
    from driver.client.publication import ExclusivePublication, Publication
    from driver.client.subscription import Subscription

IDLE_S = 0.0002


class PublicationClosedError(RuntimeError):
    """The publication was closed (or reached its maximum position) while a message waited to go."""


@dataclass(frozen=True, slots=True)
class Message:
    """A whole message (fragments reassembled) with the header fields of its last fragment."""

    data: bytes
    session_id: int
    stream_id: int
    position: int
    reserved_value: int


async def offer(
    publication: Publication | ExclusivePublication,
    data: Any,
    *,
    timeout_s: float | None = None,
    wait_for_connection: bool = True,
) -> int:
    """Offer ``data``, waiting out back pressure and log rotation; the new stream position.

    NOT_CONNECTED is waited out too unless ``wait_for_connection`` is False (then it is returned).
    Raises PublicationClosedError on CLOSED / MAX_POSITION_EXCEEDED and TimeoutError after ``timeout_s``.
    """
    loop = asyncio.get_running_loop()
    deadline = None if timeout_s is None else loop.time() + timeout_s
    delay = 0.0
    while True:
        result = publication.offer(data)
        if result > 0:
            return result
        if result in (CLOSED, MAX_POSITION_EXCEEDED):
            raise PublicationClosedError(f"offer failed: {OFFER_RESULT_NAMES[result]} ({publication!r})")
        if result == NOT_CONNECTED and not wait_for_connection:
            return result
        if deadline is not None and loop.time() >= deadline:
            raise TimeoutError(
                f"offer still {OFFER_RESULT_NAMES[result]} after {timeout_s} s ({publication!r})"
            )
        if result == ADMIN_ACTION:
            await asyncio.sleep(0)
            continue
        assert result in (BACK_PRESSURED, NOT_CONNECTED)
        # Back off from a yield to ~1 ms: subscribers catch up in microseconds, connections take longer.
        delay = min(0.001, delay * 2 or IDLE_S / 4)
        await asyncio.sleep(delay)


async def messages(
    subscription: Subscription, fragment_limit: int = 64, idle_s: float = IDLE_S
) -> AsyncIterator[Message]:
    """``async for message in messages(subscription)``: whole messages, until the subscription closes."""
    pending: deque[Message] = deque()
    append = pending.append
    take = pending.popleft

    def on_message(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        append(
            Message(
                buffer.view[offset : offset + length].tobytes(),
                header.session_id,
                header.stream_id,
                header.position,
                header.reserved_value,
            )
        )

    assembler = FragmentAssembler(on_message)
    delay = 0.0
    while not subscription.is_closed:
        if subscription.poll(assembler, fragment_limit) == 0:
            delay = min(0.001, delay * 2 or idle_s / 4)
            await asyncio.sleep(delay)
            continue
        delay = 0.0
        while pending:
            yield take()
        await asyncio.sleep(0)
