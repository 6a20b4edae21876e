"""ArchiveProxy: encodes control requests and offers them on the client's exclusive request publication
(docs/archive.md section 2). One offer per call; the caller decides how long to keep trying."""

from __future__ import annotations

from typing import Any

from driver.archive.client.exceptions import ArchiveError
from driver.archive.codecs import HEADER_LENGTH, codec
from driver.client import CLOSED, MAX_POSITION_EXCEEDED, ExclusivePublication

INITIAL_BUFFER_LENGTH = 1024


class ArchiveProxy:
    def __init__(self, publication: ExclusivePublication) -> None:
        self.publication = publication
        self._buffer = bytearray(INITIAL_BUFFER_LENGTH)

    def encode(self, request: tuple[Any, ...]) -> memoryview:
        message_codec = codec(type(request))
        length = HEADER_LENGTH + message_codec.body_length(request)
        if length > len(self._buffer):
            self._buffer = bytearray(length)
        message_codec.encode_into(self._buffer, 0, request)
        return memoryview(self._buffer)[:length]

    def try_offer(self, request: tuple[Any, ...], correlation_id: int, what: str) -> bool:
        """Offer once: True when sent, False when the archive is not connected or pushes back.

        Raises ArchiveError when the publication is closed or full for good (nothing would ever be sent)."""
        result = self.publication.offer(self.encode(request))
        if result > 0:
            return True
        if result == CLOSED:
            raise ArchiveError(
                "connection to the archive has been closed", correlation_id=correlation_id, request=what
            )
        if result == MAX_POSITION_EXCEEDED:
            raise ArchiveError(
                "offer failed due to max position being reached", correlation_id=correlation_id, request=what
            )
        return False
