"""Subscription: the images of every publisher session that matches a channel and stream id."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from driver.client.aio import batches as async_batches
from driver.client.aio import fragment_batches as async_fragment_batches
from driver.client.aio import messages as async_messages
from driver.client.fragment_assembler import FragmentAssembler
from driver.client.image import ControlledFragmentHandler, FragmentBatch, Image
from driver.client.message import Message, message_of
from driver.concurrent.logbuffer.header import Header
from driver.concurrent.logbuffer.term_reader import FragmentHandler

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from driver.client.aeron import Aeron

ImageHandler = Callable[[Image], None]
_NO_FRAGMENTS = FragmentBatch(None, 1)


class Subscription:
    def __init__(
        self,
        conductor: Aeron,
        channel: str,
        stream_id: int,
        registration_id: int,
        on_available_image: ImageHandler | None = None,
        on_unavailable_image: ImageHandler | None = None,
    ) -> None:
        self._conductor = conductor
        self.channel = channel
        self.stream_id = stream_id
        self.registration_id = registration_id
        self.on_available_image = on_available_image
        self.on_unavailable_image = on_unavailable_image
        # Replaced, never mutated: the client thread swaps it while the user's thread polls.
        self._images: tuple[Image, ...] = ()
        self._round_robin_index = 0
        self._last_batch: FragmentBatch | None = None
        # poll_messages' reassembly, kept across calls (a message's fragments may span polls).
        self._message_assembler: FragmentAssembler | None = None
        self._message_out: list[Message] | None = None
        self.channel_status_id = -1
        self.is_closed = False

    def __repr__(self) -> str:
        return (
            f"Subscription(channel={self.channel!r}, stream_id={self.stream_id}, "
            f"registration_id={self.registration_id}, images={len(self._images)})"
        )

    @property
    def images(self) -> tuple[Image, ...]:
        return self._images

    @property
    def is_connected(self) -> bool:
        return any(not image.is_closed for image in self._images)

    def add_destination(self, endpoint_channel: str) -> None:
        """MDS (``control-mode=manual``): also receive on ``aeron:udp?endpoint=host:port``."""
        self._conductor.subscription_destination(self, endpoint_channel, add=True)

    def remove_destination(self, endpoint_channel: str) -> None:
        self._conductor.subscription_destination(self, endpoint_channel, add=False)

    def image_by_session_id(self, session_id: int) -> Image | None:
        return next((image for image in self._images if image.session_id == session_id), None)

    def poll(self, handler: FragmentHandler, fragment_limit: int) -> int:
        """Deliver up to ``fragment_limit`` fragments from the images in turn (fair across sessions)."""
        images = self._images
        count = len(images)
        if count == 0:
            return 0
        start = self._round_robin_index = (self._round_robin_index + 1) % count
        fragments = 0
        for i in range(count):
            if fragments >= fragment_limit:
                break
            fragments += images[(start + i) % count].poll(handler, fragment_limit - fragments)
        return fragments

    def poll_messages(
        self, out: list[Message], fragment_limit: int, spare: list[Message] | None = None
    ) -> int:
        """Whole messages (fragments reassembled, bytes copied) appended to ``out`` as ``Message`` tuples, from
        the images in turn; fragments read. On the fast path an unfragmented message costs no Python call.
        ``spare``: messages of earlier polls the caller has let go, which the fast path may rewrite as new
        ones where nothing else holds them (Image.poll_messages)."""
        images = self._images
        count = len(images)
        if count == 0:
            return 0
        assembler = self._assembler_for(out)
        start = self._round_robin_index = (self._round_robin_index + 1) % count
        fragments = 0
        for i in range(count):
            if fragments >= fragment_limit:
                break
            fragments += images[(start + i) % count].poll_messages(
                out, fragment_limit - fragments, assembler, spare
            )
        return fragments

    def _assembler_for(self, out: list[Message]) -> FragmentAssembler:
        """poll_messages' reassembly, its messages appended to ``out`` (also asked by the C message stream)."""
        assembler = self._message_assembler
        if assembler is None:
            assembler = self._message_assembler = FragmentAssembler(self._append_message)
        self._message_out = out
        return assembler

    def _append_message(self, buffer: Any, offset: int, length: int, header: Header) -> None:
        out = self._message_out
        assert out is not None
        out.append(message_of(buffer, offset, length, header))

    def poll_batch(self, fragment_limit: int) -> FragmentBatch:
        """The next image's (in turn) ``Image.poll_batch``: up to ``fragment_limit`` fragments of one session
        as numpy arrays over the term, zero-copy. The previous batch this returned is released first; an
        empty batch when no image has anything."""
        last = self._last_batch
        if last is not None:
            last.release()
        images = self._images
        count = len(images)
        if count == 0:
            return _NO_FRAGMENTS
        start = self._round_robin_index = (self._round_robin_index + 1) % count
        batch = _NO_FRAGMENTS
        for i in range(count):
            batch = images[(start + i) % count].poll_batch(fragment_limit)
            if len(batch):
                break
        self._last_batch = batch
        return batch

    def controlled_poll(self, handler: ControlledFragmentHandler, fragment_limit: int) -> int:
        images = self._images
        count = len(images)
        if count == 0:
            return 0
        start = self._round_robin_index = (self._round_robin_index + 1) % count
        fragments = 0
        for i in range(count):
            if fragments >= fragment_limit:
                break
            fragments += images[(start + i) % count].controlled_poll(handler, fragment_limit - fragments)
        return fragments

    def messages(self, fragment_limit: int = 64) -> AsyncIterator[Message]:
        """``async for message in subscription.messages()``: whole messages, until the subscription closes."""
        return async_messages(self, fragment_limit)

    def batches(self, fragment_limit: int = 256) -> AsyncIterator[list[Message]]:
        """``async for batch in subscription.batches()``: a poll's worth of whole messages per await."""
        return async_batches(self, fragment_limit)

    def fragment_batches(self, fragment_limit: int = 4096) -> AsyncIterator[FragmentBatch]:
        """``async for batch in subscription.fragment_batches()``: ``poll_batch`` per await, zero-copy views
        valid until the next step."""
        return async_fragment_batches(self, fragment_limit)

    # --- driven by the client conductor ----------------------------------------------------------

    def _add_image(self, image: Image) -> None:
        self._images = (*self._images, image)
        self._bind_poll()

    def _remove_image(self, correlation_id: int) -> Image | None:
        image = next((i for i in self._images if i.correlation_id == correlation_id), None)
        if image is not None:
            self._images = tuple(i for i in self._images if i is not image)
            self._bind_poll()
            image.close()
        return image

    def _bind_poll(self) -> None:
        """With one image whose poll is C (the fast path), ``poll`` is that C call itself: no Python frame per
        poll. Otherwise the round robin over the images (the class's ``poll``)."""
        images = self._images
        fast = images[0].__dict__.get("poll") if len(images) == 1 else None
        if fast is not None:
            self.poll = fast  # type: ignore[method-assign]
        else:
            self.__dict__.pop("poll", None)

    def close(self) -> None:
        """Remove the subscription from the driver (REMOVE_SUBSCRIPTION); idempotent."""
        if not self.is_closed:
            self.is_closed = True
            self._conductor.release_subscription(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
