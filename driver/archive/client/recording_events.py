"""RecordingEventsAdapter: the archive's recording events (RecordingStarted, RecordingProgress,
RecordingStopped; docs/archive.md sections 3 and 6) dispatched to callbacks, or iterated with ``async for``."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any

from driver.archive.client.context import ArchiveClientContext
from driver.archive.client.message_stream import FRAGMENT_LIMIT, MessageStream
from driver.archive.codecs import (
    RecordingProgress,
    RecordingStarted,
    RecordingStopped,
)
from driver.client import Aeron, Subscription

RecordingEvent = RecordingStarted | RecordingProgress | RecordingStopped
IDLE_MAX_S = 0.001


class RecordingEventsAdapter(MessageStream):
    """Polls an events subscription; each event goes to its callback (``on_start``, ``on_progress``,
    ``on_stop``), or to ``on_event`` for all three. ``events()`` is the async-iterator form.

    ``subscribe(aeron, ...)`` makes the subscription too (and ``close()`` then removes it).
    """

    stream_name = "recording events stream"

    def __init__(
        self,
        subscription: Subscription,
        *,
        on_start: Callable[[RecordingStarted], None] | None = None,
        on_progress: Callable[[RecordingProgress], None] | None = None,
        on_stop: Callable[[RecordingStopped], None] | None = None,
        on_event: Callable[[RecordingEvent], None] | None = None,
        fragment_limit: int = FRAGMENT_LIMIT,
        owns_subscription: bool = False,
    ) -> None:
        super().__init__(subscription, fragment_limit)
        self._handlers: dict[type, Callable[[Any], None] | None] = {
            RecordingStarted: on_start,
            RecordingProgress: on_progress,
            RecordingStopped: on_stop,
        }
        self._on_event = on_event
        self._owns_subscription = owns_subscription
        self._queue: deque[RecordingEvent] | None = None

    @classmethod
    def subscribe(
        cls,
        aeron: Aeron,
        context: ArchiveClientContext | None = None,
        *,
        channel: str | None = None,
        stream_id: int | None = None,
        **handlers: Any,
    ) -> RecordingEventsAdapter:
        """Subscribe to the events channel and stream (the context's, default
        ``aeron:udp?endpoint=localhost:8030`` / 30) and adapt it."""
        context = context or ArchiveClientContext.from_sources()
        subscription = aeron.add_subscription(
            channel or context.recording_events_channel,
            context.recording_events_stream_id if stream_id is None else stream_id,
        )
        return cls(subscription, owns_subscription=True, **handlers)

    def on_decoded(self, event: Any) -> None:
        if type(event) not in self._handlers:
            return
        if self._queue is not None:
            self._queue.append(event)
        handler = self._handlers[type(event)]
        if handler is not None:
            handler(event)
        if self._on_event is not None:
            self._on_event(event)

    async def events(self, idle_s: float = IDLE_MAX_S) -> AsyncIterator[RecordingEvent]:
        """``async for event in adapter.events()``: every event (callbacks still run), until the
        subscription closes. Polls without blocking the loop."""
        self._queue = queue = deque[RecordingEvent]()
        delay = 0.0
        try:
            while self.subscription is not None and not self.subscription.is_closed:
                if self.poll() == 0:
                    delay = min(idle_s, delay * 2 or idle_s / 8)
                    await asyncio.sleep(delay)
                    continue
                delay = 0.0
                while queue:
                    yield queue.popleft()
        finally:
            self._queue = None

    def close(self) -> None:
        if self._owns_subscription and self.subscription is not None:
            self.subscription.close()

    def __enter__(self) -> RecordingEventsAdapter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
