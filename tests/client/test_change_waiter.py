"""The client thread's idle wait (driver/concurrent/logbuffer/fastpath.py ChangeWaiter): it sleeps without the
GIL until the driver's event tail moves, and still sees every driver event promptly."""

from __future__ import annotations

import ctypes
import threading
import time

import pytest

from driver.client import Aeron
from driver.concurrent.logbuffer import fastpath
from tests.support import wait_for


@pytest.fixture
def waiter() -> fastpath.ChangeWaiter:
    if not fastpath.AVAILABLE:
        pytest.skip("the fast path extension is not built (make native)")
    return fastpath.ChangeWaiter()


def test_wakes_on_a_change_times_out_without_one_and_stops_at_once(waiter) -> None:
    value = ctypes.c_int64(7)
    address = ctypes.addressof(value)
    assert waiter.wait(address, 6, 5.0) is True  # already different: no wait
    started = time.monotonic()
    assert waiter.wait(address, 7, 0.05) is False
    assert time.monotonic() - started >= 0.05

    threading.Timer(0.05, lambda: setattr(value, "value", 8)).start()
    started = time.monotonic()
    assert waiter.wait(address, 7, 5.0) is True
    assert time.monotonic() - started < 2.0

    threading.Timer(0.05, waiter.stop).start()
    assert waiter.wait(address, 8, 5.0) is True
    assert waiter.wait(address, 8, 5.0) is True  # stopped for good


def test_a_client_idling_in_the_wait_sees_new_images_and_closes_quickly(embedded_driver, client_path) -> None:
    driver = embedded_driver()
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        subscription = aeron.add_subscription("aeron:ipc", 91)
        time.sleep(0.3)  # the client thread is idle in its wait when the image arrives
        publication = aeron.add_publication("aeron:ipc", 91)
        wait_for(lambda: len(subscription.images) == 1, 5, what="image via the client thread")
        assert publication.is_connected
        started = time.monotonic()
    assert time.monotonic() - started < 1.0  # close stops the wait at once
