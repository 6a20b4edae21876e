"""Errors the Python client raises; each says what to do next."""

from __future__ import annotations


class AeronError(RuntimeError):
    pass


class DriverTimeoutError(AeronError):
    """No driver, or the driver stopped heartbeating / answering."""


class CncVersionError(AeronError):
    """cnc.dat was written by another Aeron version."""


class RegistrationError(AeronError):
    """The driver refused a command (ON_ERROR)."""

    def __init__(self, correlation_id: int, code: int, message: str) -> None:
        super().__init__(f"driver refused command {correlation_id} (error code {code}): {message}")
        self.correlation_id = correlation_id
        self.code = code
        self.driver_message = message


class ClientTimeoutError(AeronError):
    """The driver timed this client out (it stopped sending keepalives for too long)."""


class ClientClosedError(AeronError):
    """The client is closed."""
