"""MessageStream: whole schema-101 messages from one subscription, as a 1.15.1 client reads them: fragments
reassembled, unknown template ids ignored, another schema an ``ArchiveProtocolError`` (docs/archive.md
section 12). The control response poller and the recording events adapter are both one."""

from __future__ import annotations

from typing import Any

from driver.archive.client.exceptions import ArchiveProtocolError
from driver.archive.codecs import CodecError, SchemaMismatchError, UnknownTemplateError, decode
from driver.client import FragmentAssembler, Subscription
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer.header import Header

FRAGMENT_LIMIT = 10


class MessageStream:
    """Subclasses name their stream (for errors) and handle each decoded message in ``on_decoded``."""

    stream_name = "archive stream"

    def __init__(self, subscription: Subscription | None, fragment_limit: int = FRAGMENT_LIMIT) -> None:
        self.subscription = subscription
        self.fragment_limit = fragment_limit
        self._assembler = FragmentAssembler(self._on_fragment)
        self._failure: ArchiveProtocolError | None = None

    def poll(self) -> int:
        """Poll up to ``fragment_limit`` fragments; raises ``ArchiveProtocolError`` on another schema."""
        assert self.subscription is not None
        count = self.subscription.poll(self._assembler, self.fragment_limit)
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure
        return count

    def _on_fragment(self, buffer: AtomicBuffer, offset: int, length: int, _header: Header) -> None:
        try:
            self.on_message(buffer.view, offset, length)
        except ArchiveProtocolError as exc:
            # Raised from poll(), after the term reader has moved past the fragment.
            self._failure = self._failure or exc

    def on_message(self, buffer: Any, offset: int, length: int) -> None:
        """One whole message (sans-IO: any bytes-like buffer)."""
        try:
            message = decode(buffer, offset, length)
        except UnknownTemplateError:
            return
        except SchemaMismatchError as exc:
            raise ArchiveProtocolError(f"{self.stream_name}: {exc.reason}") from exc
        except CodecError as exc:
            raise ArchiveProtocolError(f"{self.stream_name}: undecodable message: {exc}") from exc
        self.on_decoded(message)

    def on_decoded(self, message: Any) -> None:
        raise NotImplementedError
