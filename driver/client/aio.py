"""asyncio helpers over the polling client: await an offer through back pressure, iterate messages (one at a
time or a poll's worth per await), run a program on uvloop.

The client itself is synchronous (its calls take microseconds); these helpers only decide when to try
again, yielding to the loop in between, so one event loop can serve many publications and subscriptions.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import uvloop

from driver.client.message import Message
from driver.client.offer_result import (
    ADMIN_ACTION,
    BACK_PRESSURED,
    CLOSED,
    MAX_POSITION_EXCEEDED,
    NOT_CONNECTED,
    OFFER_RESULT_NAMES,
)
from driver.concurrent.logbuffer import fastpath

if TYPE_CHECKING:
    from driver.client.image import FragmentBatch
    from driver.client.publication import ExclusivePublication, Publication
    from driver.client.subscription import Subscription

IDLE_S = 0.0002
T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on uvloop, the loop the driver itself runs on (about a third less per wake-up)."""
    return uvloop.run(main)


class PublicationClosedError(RuntimeError):
    """The publication was closed (or reached its maximum position) while a message waited to go."""


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


def messages(
    subscription: Subscription, fragment_limit: int = 64, idle_s: float = IDLE_S
) -> AsyncIterator[Message]:
    """``async for message in messages(subscription)``: whole messages, until the subscription closes.

    Each poll takes up to ``fragment_limit`` fragments at once (``Subscription.poll_messages``: on the fast path
    the messages are made in C) and the loop is yielded to once per ``fragment_limit`` messages handed over (a
    full poll's worth; a consumer that keeps up, polling a few at a time, does not pay a loop turn per poll) and
    whenever nothing has come; on the fast path the messages of a poll are then handed over from C too (driver/concurrent/logbuffer/fastpath.py). Messages
    already polled when the iteration is left are dropped with it."""
    pending: list[Message] = []
    spare: list[Message] = []  # the last poll's messages: rewritten by the next where the loop kept none
    poll = subscription.poll_messages
    stream_type = fastpath.message_stream_type()

    async def refill() -> Message:
        if stream.handed >= fragment_limit:
            stream.handed = 0
            await asyncio.sleep(0)  # the other tasks run between polls, once per fragment_limit messages
        delay = 0.0
        while not subscription.is_closed:
            if pending:
                spare[:] = pending
                pending.clear()
            poll(pending, fragment_limit, spare)
            if pending:
                stream.handed += len(pending)
                stream.next = 1
                return pending[0]
            delay = min(0.001, delay * 2 or idle_s / 4)
            await asyncio.sleep(delay)
        raise StopAsyncIteration

    def poll_now() -> int:
        """The poll ``refill`` would make, without a coroutine: how many messages came (0: await ``refill``)."""
        if stream.handed >= fragment_limit or subscription.is_closed:
            return 0
        if pending:
            spare[:] = pending
            pending.clear()
        poll(pending, fragment_limit, spare)
        count = len(pending)
        stream.handed += count
        return count

    stream: Any
    if stream_type is None:
        stream = _MessageStream(pending, refill, poll_now)
    else:
        stream = stream_type(pending, refill, poll_now)
        # A subscription with one image polls it from C, without poll_now's and poll_messages' frames.
        stream.direct(subscription, spare, fragment_limit)
    return stream


def messages_of(batches: AsyncIterator[list[Message]]) -> AsyncIterator[Message]:
    """The messages of ``batches`` (an async iterator of lists) one per step: a batch's messages are handed over
    without a coroutine each (on the fast path from C), the next batch awaited when they are used up.
    ``aclose()`` closes ``batches`` (an async generator's ``finally`` runs then)."""
    pending: list[Message] = []
    stream_type = _ClosableCStream if fastpath.message_stream_type() is not None else _ClosableStream

    async def refill() -> Message:
        batch = await batches.__anext__()  # StopAsyncIteration ends the iteration
        while not batch:
            batch = await batches.__anext__()
        pending[:] = batch
        stream.next = 1
        return batch[0]

    stream = stream_type(pending, refill)
    stream.batches = batches
    return stream


class _MessageStream:
    """The iterator of ``messages`` when the fast path is off: the same steps as its C MessageStream."""

    __slots__ = ("handed", "items", "next", "poll", "refill")

    def __init__(
        self,
        items: list[Message],
        refill: Callable[[], Awaitable[Message]],
        poll: Callable[[], int] | None = None,
    ) -> None:
        self.items = items
        self.next = len(items)
        self.refill = refill
        self.poll = poll
        self.handed = 0  # messages handed over since the loop last ran other tasks (``messages``)

    def __aiter__(self) -> _MessageStream:
        return self

    async def __anext__(self) -> Message:
        items = self.items
        if self.next >= len(items) and self.poll is not None and self.poll() > 0:
            self.next = 0
        if self.next < len(items):
            self.next += 1
            return items[self.next - 1]
        return await self.refill()


async def offer_many(publication: Publication | ExclusivePublication, messages: Sequence[Any]) -> int:
    """Offer all of ``messages`` (``offer_many``, as many per call as go), waiting out back pressure as
    ``offer`` does; the number offered. Raises PublicationClosedError on a closed publication."""
    offer_many_now = publication.offer_many
    sent = 0
    total = len(messages)
    while sent < total:
        went = offer_many_now(messages if sent == 0 else messages[sent:])
        if went > 0:
            sent += went
            continue
        await offer(publication, messages[sent])  # waits until one more goes (or raises), then the rest
        sent += 1
    return sent


def _polls(
    subscription: Subscription, poll: Callable[[], Any], limit: int, idle_s: float
) -> AsyncIterator[Any]:
    """An async iterator that hands over one poll per step (``poll()``, empty when falsy), waiting with a backoff
    while nothing comes and yielding to the loop once per ``limit`` fragments or messages handed over (a full
    poll's worth); ends when the subscription closes. A poll that brings something is handed over without a
    coroutine (the message stream's plain step, from C on the fast path); only an empty poll or the loop's turn
    awaits one. A plain object, not an async generator: a consumer that breaks out leaves nothing to finalize."""
    items: list[Any] = []

    def poll_now() -> int:
        if stream.handed >= limit or subscription.is_closed:
            return 0
        batch = poll()
        if not batch:
            return 0
        stream.handed += len(batch)
        items[:] = (batch,)
        return 1

    async def refill() -> Any:
        if stream.handed >= limit:
            stream.handed = 0
            await asyncio.sleep(0)  # the other tasks run between polls, once per ``limit`` handed over
        delay = 0.0
        while not subscription.is_closed:
            batch = poll()
            if batch:
                stream.handed += len(batch)
                items[:] = (batch,)
                stream.next = 1
                return batch
            delay = min(0.001, delay * 2 or idle_s / 4)
            await asyncio.sleep(delay)
        raise StopAsyncIteration

    stream_type = fastpath.message_stream_type() or _MessageStream
    stream = stream_type(items, refill, poll_now)
    return stream


def batches(
    subscription: Subscription, fragment_limit: int = 256, idle_s: float = IDLE_S
) -> AsyncIterator[list[Message]]:
    """``async for batch in batches(subscription)``: a poll's worth of whole messages per step (a list the
    caller keeps), so a consumer pays one await per poll rather than one per message."""
    poll_messages = subscription.poll_messages

    def poll() -> list[Message]:
        batch: list[Message] = []
        poll_messages(batch, fragment_limit)
        return batch

    return _polls(subscription, poll, fragment_limit, idle_s)


def fragment_batches(
    subscription: Subscription, fragment_limit: int = 4096, idle_s: float = IDLE_S
) -> AsyncIterator[FragmentBatch]:
    """``async for batch in fragment_batches(subscription)``: ``Subscription.poll_batch`` per step, the
    fragments as zero-copy views over the term (``FragmentBatch``), valid until the next step."""
    poll_batch = subscription.poll_batch
    return _polls(subscription, lambda: poll_batch(fragment_limit), fragment_limit, idle_s)


class _ClosableStream(_MessageStream):
    """``messages_of``'s iterator off the fast path: ``aclose()`` closes its batches."""

    __slots__ = ("batches",)
    batches: Any

    async def aclose(self) -> None:
        close = getattr(self.batches, "aclose", None)
        if close is not None:
            await close()


_C_STREAM: Any = fastpath.message_stream_base()
if _C_STREAM is not None:

    class _ClosableCStream(_C_STREAM):
        """``messages_of``'s iterator on the fast path: the C MessageStream's steps, and ``aclose()``."""

        __slots__ = ("batches",)

        aclose = _ClosableStream.aclose

else:
    _ClosableCStream = _ClosableStream  # type: ignore[misc, assignment]
