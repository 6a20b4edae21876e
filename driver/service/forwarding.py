"""What record and replay jobs share: whole messages from an image into a list, and offers that wait out back
pressure on the loop."""

from __future__ import annotations

import asyncio
import contextlib
import time

from driver.client import (
    CLOSED,
    MAX_POSITION_EXCEEDED,
    NOT_CONNECTED,
    ExclusivePublication,
    FragmentAssembler,
)

FRAGMENT_LIMIT = 256
IDLE_S = 0.0005
OFFER_TIMEOUT_S = 5.0


class Collector:
    """A FragmentAssembler whose whole messages go to ``pending``; ``limit`` (None: none) caps how many are
    taken, across every collector sharing one ``Budget``."""

    def __init__(self, budget: Budget) -> None:
        self.pending: list[bytes] = []
        self.messages = 0
        self.bytes = 0
        self.budget = budget
        self.assembler = FragmentAssembler(self._on_message)

    def _on_message(self, buffer, offset: int, length: int, _header) -> None:
        if not self.budget.take():
            return
        self.pending.append(buffer.get_bytes(offset, length))
        self.messages += 1
        self.bytes += length


class Budget:
    def __init__(self, limit: int | None) -> None:
        self.remaining = limit

    def take(self) -> bool:
        if self.remaining is None:
            return True
        if self.remaining <= 0:
            return False
        self.remaining -= 1
        return True

    @property
    def exhausted(self) -> bool:
        return self.remaining is not None and self.remaining <= 0


class OfferFailed(RuntimeError):
    pass


async def offer_all(
    publication: ExclusivePublication, messages: list[bytes], *, drop_unconnected: bool
) -> int:
    """Offer each message in order, waiting out back pressure; returns how many went (all of them, or fewer when
    ``drop_unconnected`` and the publication has no subscriber)."""
    sent = 0
    for data in messages:
        deadline = None
        while True:
            result = publication.offer(data)
            if result > 0:
                sent += 1
                break
            if result in (CLOSED, MAX_POSITION_EXCEEDED):
                raise OfferFailed(f"publication {publication.channel} {publication.stream_id} closed")
            if result == NOT_CONNECTED and drop_unconnected:
                break
            now = time.monotonic()
            if deadline is None:
                deadline = now + OFFER_TIMEOUT_S
            elif now > deadline:
                raise OfferFailed(
                    f"publication {publication.channel} {publication.stream_id} back pressured for "
                    f"{OFFER_TIMEOUT_S} s"
                )
            await asyncio.sleep(IDLE_S / 4)
    messages.clear()
    return sent


async def close_quietly(resource) -> None:
    """Close a publication or subscription off the loop: the client waits for the driver's answer, and the
    driver may run on this very loop."""
    with contextlib.suppress(Exception):
        await asyncio.to_thread(resource.close)
