"""What record and replay jobs share: a limit on how many messages are taken, the replay's batched forwarding
from an image to a publication, and closing off the loop."""

from __future__ import annotations

import asyncio
import contextlib
import time

from driver.client import (
    CLOSED,
    MAX_POSITION_EXCEEDED,
    NOT_CONNECTED,
    ExclusivePublication,
    Image,
)
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer.frame_descriptor import DATA_HEADER_LENGTH, FRAME_ALIGNMENT

FRAME_OVERHEAD = DATA_HEADER_LENGTH + FRAME_ALIGNMENT - 1
"""A fragment of n payload bytes takes (n + FRAME_OVERHEAD) & -FRAME_ALIGNMENT bytes of frames."""


def frame_bytes(term: AtomicBuffer, offset: int, length: int) -> int:
    """The bytes of a block's frames, headers and alignment included, a padding frame's not: what record and
    replay statuses both count as ``bytes`` (docs/service.md section 2). One native scan per block."""
    available, padding = term.scan_for_availability(offset, length)
    return available - DATA_HEADER_LENGTH if padding else available


FORWARD_LIMIT = 4096
"""Fragments per batch a replay forwards in one turn (at most a term's worth are ever ready)."""
IDLE_S = 0.0005
OFFER_TIMEOUT_S = 5.0


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


WHOLE = 0xC0  # BEGIN | END: a message in one fragment
BEGIN = 0x80
END = 0x40


class Forwarder:
    """Moves whole messages from an image to a publication a batch at a time (docs/service.md section 5): a
    ``poll_batch`` of the image, the messages as views of its term, one ``offer_many``; what back pressure
    leaves is copied and offered first on the next turn, so nothing is lost or reordered. A message in
    fragments is put together here and offered whole (the target fragments it to its own MTU). ``messages``
    and ``bytes`` count what the publication took; with ``drop_unconnected`` what finds no subscriber is
    dropped, not counted. ``forward`` never waits: a cancel between turns stops the flow at once."""

    def __init__(
        self, target: ExclusivePublication, *, drop_unconnected: bool, fragment_limit: int = FORWARD_LIMIT
    ) -> None:
        self.target = target
        self.drop_unconnected = drop_unconnected
        self.fragment_limit = fragment_limit
        self.messages = 0
        self.bytes = 0
        self._pending: list[bytes] = []
        self._pending_lengths: list[int] = []
        self._partial: bytearray | None = None
        self._partial_frames = 0
        self._blocked_since: float | None = None

    @property
    def pending(self) -> bool:
        """Messages polled but not offered yet."""
        return bool(self._pending)

    def forward(self, image: Image) -> int:
        """One turn; the fragments polled and messages offered (0: nothing to do)."""
        work = 0
        if self._pending:
            work = self._offer(self._pending, self._pending_lengths)
            if self._pending:
                return work
        batch = image.poll_batch(self.fragment_limit)
        count = len(batch)
        if count == 0:
            return work
        try:
            view = batch.buffer
            offsets, lengths = batch.offsets.tolist(), batch.lengths.tolist()
            if self._partial is None and bool((batch.flags == WHOLE).all()):
                messages = [view[o : o + n] for o, n in zip(offsets, lengths, strict=True)]
                lengths = ((batch.lengths + FRAME_OVERHEAD) & -FRAME_ALIGNMENT).tolist()
            else:
                messages, lengths = self._assemble(view, offsets, lengths, batch.flags.tolist())
            if messages:
                self._offer(messages, lengths)
                if messages:
                    # The batch's views go when it is released: keep copies of the rest, in order.
                    self._pending = [bytes(m) for m in messages]
                    self._pending_lengths = lengths
        finally:
            batch.release()
        return work + count

    def _assemble(
        self, view: memoryview, offsets: list[int], lengths: list[int], flags: list[int]
    ) -> tuple[list, list[int]]:
        """Whole messages in order, fragmented ones put together (a FragmentAssembler's rules: a message
        starts at BEGIN, ends at END; fragments without a begun message are skipped)."""
        messages: list = []
        sizes: list[int] = []
        partial, partial_frames = self._partial, self._partial_frames
        for offset, length, flag in zip(offsets, lengths, flags, strict=True):
            frame = (length + FRAME_OVERHEAD) & -FRAME_ALIGNMENT
            if flag & WHOLE == WHOLE:
                partial = None
                messages.append(view[offset : offset + length])
                sizes.append(frame)
            elif flag & BEGIN:
                partial, partial_frames = bytearray(view[offset : offset + length]), frame
            elif partial is not None:
                partial += view[offset : offset + length]
                partial_frames += frame
                if flag & END:
                    messages.append(bytes(partial))
                    sizes.append(partial_frames)
                    partial = None
        self._partial, self._partial_frames = partial, partial_frames
        return messages, sizes

    def _offer(self, messages: list, lengths: list[int]) -> int:
        """Offer ``messages`` (removing those that went or were dropped from the front); how many went."""
        target = self.target
        result = target.offer_many(messages)
        if result > 0:
            self.messages += result
            self.bytes += sum(lengths[:result])
            self._blocked_since = None
            if result < len(messages):
                del messages[:result]
                del lengths[:result]
            else:
                messages.clear()
                lengths.clear()
            return result
        if result in (CLOSED, MAX_POSITION_EXCEEDED):
            raise OfferFailed(f"publication {target.channel} {target.stream_id} closed")
        if result == NOT_CONNECTED and self.drop_unconnected:
            messages.clear()
            lengths.clear()
            return 0
        now = time.monotonic()
        if self._blocked_since is None:
            self._blocked_since = now
        elif now - self._blocked_since > OFFER_TIMEOUT_S:
            raise OfferFailed(
                f"publication {target.channel} {target.stream_id} back pressured for {OFFER_TIMEOUT_S} s"
            )
        return 0


async def close_quietly(resource) -> None:
    """Close a publication or subscription off the loop: the client waits for the driver's answer, and the
    driver may run on this very loop."""
    with contextlib.suppress(Exception):
        await asyncio.to_thread(resource.close)
