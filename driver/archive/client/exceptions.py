"""The one error type of the archive client, with the archive's error codes (docs/archive.md section 3)."""

from __future__ import annotations

from driver.archive.codecs import ArchiveErrorCode

NULL_CORRELATION_ID = -1


def error_code(value: int) -> ArchiveErrorCode | int:
    """The code as an ``ArchiveErrorCode`` when it is one, else the plain int (a later archive's code)."""
    try:
        return ArchiveErrorCode(value)
    except ValueError:
        return value


class ArchiveError(RuntimeError):
    """An archive request failed.

    ``code`` is the archive's error code (``ArchiveErrorCode``; GENERIC for failures of the client itself),
    ``error_message`` the archive's own text (or the client's reason), ``correlation_id`` the request's
    correlation id (-1 when there is none) and ``request`` the operation, e.g. ``"start_recording"``.
    """

    def __init__(
        self,
        error_message: str,
        code: ArchiveErrorCode | int = ArchiveErrorCode.GENERIC,
        correlation_id: int = NULL_CORRELATION_ID,
        request: str | None = None,
    ) -> None:
        self.error_message = error_message
        self.code = error_code(int(code))
        self.correlation_id = correlation_id
        self.request = request
        name = self.code.name if isinstance(self.code, ArchiveErrorCode) else "code"
        where = f"{request}: " if request else ""
        super().__init__(f"{where}{error_message} ({name} {int(self.code)}, correlationId={correlation_id})")


class ArchiveTimeoutError(ArchiveError, TimeoutError):
    """No answer (or no chance to send) within the message timeout; names the request."""


class ArchiveProtocolError(ArchiveError):
    """Something that is not schema 101 (or cannot be decoded) arrived on the control response stream."""
