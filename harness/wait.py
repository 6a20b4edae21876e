"""Waiting with a deadline for something another thread, process or socket does (never for a protocol timer:
drive those with a ManualClock)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    predicate: Callable[[], T], timeout_s: float = 10.0, what: str = "condition", interval: float = 0.001
) -> T:
    """Poll ``predicate`` until it returns something truthy (returned); AssertionError naming ``what`` after
    ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not (result := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(interval)
    return result


async def wait_until(
    predicate: Callable[[], T], timeout_s: float = 2.0, what: str = "condition", interval: float = 0.001
) -> T:
    """``wait_for`` for coroutines: yields to the event loop between polls."""
    deadline = time.monotonic() + timeout_s
    while not (result := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await asyncio.sleep(interval)
    return result
