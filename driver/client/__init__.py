"""Python Aeron client (Aeron 1.15.1 protocol)."""

from driver.client.aeron import Aeron
from driver.client.counter import Counter
from driver.client.exceptions import (
    AeronError,
    ClientClosedError,
    ClientTimeoutError,
    CncVersionError,
    DriverTimeoutError,
    RegistrationError,
)

__all__ = [
    "Aeron",
    "AeronError",
    "ClientClosedError",
    "ClientTimeoutError",
    "CncVersionError",
    "Counter",
    "DriverTimeoutError",
    "RegistrationError",
]
