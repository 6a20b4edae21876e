"""What an operator reads when something is off, as one line naming the cause and the fix: exhausted counters,
a clean close (not a liveness timeout), a close while another client keeps the to-driver ring full."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from driver.client import Aeron, AeronError, RegistrationError
from driver.client.client_conductor import CLOSE_RETRY_S
from driver.concurrent.ring_buffer import ManyToOneRingBuffer
from driver.context import DriverContext
from driver.media_driver import MediaDriver
from driver.status.system_counters import FIRST_FREE_COUNTER_ID
from driver.status.system_counters import SystemCounterDescriptor as SC
from tests.support import free_port, wait_for

COUNTERS = FIRST_FREE_COUNTER_ID + 3  # the driver's own, the client's heartbeat, two more
EXHAUSTED = (
    rf"unable to allocate a counter: all {COUNTERS} counter ids are in use; increase "
    r"aeron\.counters\.buffer\.length or release resources"
)


def test_exhausted_counters_read_the_same_for_every_resource(embedded_driver) -> None:
    embedded = embedded_driver(counters_values_buffer_length=COUNTERS * 128)
    with Aeron.connect(aeron_dir=embedded.aeron_dir) as aeron:
        aeron.add_counter(1001, "one")
        aeron.add_counter(1001, "two")
        refusals = []
        for add in (
            lambda: aeron.add_counter(1001, "three"),
            lambda: aeron.add_publication("aeron:ipc", 7),
            lambda: aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}", 7),
        ):
            with pytest.raises(RegistrationError) as refused:
                add()
            refusals.append(str(refused.value))
    for message in refusals:
        assert re.fullmatch(rf"driver refused command \d+ \(error code 0\): {EXHAUSTED}", message), message


def test_clean_closes_are_counted_apart_from_liveness_timeouts(embedded_driver, tmp_path: Path) -> None:
    embedded = embedded_driver(timer_interval_ns=50_000_000)
    counters = embedded.driver.system_counters
    for _ in range(3):
        with Aeron.connect(aeron_dir=embedded.aeron_dir) as aeron:
            aeron.add_counter(1001, "makes the driver know this client")
    wait_for(lambda: counters.client_closes.get() == 3, 10, "the closed clients to be reaped")
    assert counters.get(SC.CLIENT_TIMEOUTS).get() == 0
    stat = subprocess.run(
        [sys.executable, "-m", "driver", "stat", "--dir", str(embedded.aeron_dir), "--once"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    lines = stat.stdout.splitlines()
    assert f"{FIRST_FREE_COUNTER_ID - 1:3d}: {3:20,d} - Client closes" in lines
    assert f" 24: {0:20,d} - Client liveness timeouts" in lines


def test_close_with_the_ring_kept_full_returns_within_its_bound(aeron_dir: Path, caplog) -> None:
    # A driver that does not run (INVOKER mode, never invoked) and another client that filled its ring.
    driver = MediaDriver(DriverContext(aeron_dir=str(aeron_dir), threading_mode="INVOKER"))
    try:
        aeron = Aeron.connect(aeron_dir=str(aeron_dir), use_conductor_invoker=True)
        ring = ManyToOneRingBuffer(driver.cnc.to_driver_buffer)
        for size in (1024, 0):  # to the last byte
            while ring.write(0x77, bytes(size)):
                pass
        started = time.monotonic()
        with caplog.at_level(logging.INFO, logger="driver.client.client_conductor"):
            aeron.close()  # no exception
        took = time.monotonic() - started
        assert CLOSE_RETRY_S <= took < CLOSE_RETRY_S + 2
        [record] = caplog.records
        assert record.getMessage() == (
            f"client {aeron.client_id} closed without telling the driver: the to-driver ring stayed full for "
            f"{CLOSE_RETRY_S:g} s; the driver releases its resources after the client liveness timeout"
        )
    finally:
        driver.close()


def test_a_command_into_a_full_ring_names_the_cause_and_the_fix(aeron_dir: Path) -> None:
    driver = MediaDriver(DriverContext(aeron_dir=str(aeron_dir), threading_mode="INVOKER"))
    try:
        with Aeron.connect(aeron_dir=str(aeron_dir), use_conductor_invoker=True) as aeron:
            ring = ManyToOneRingBuffer(driver.cnc.to_driver_buffer)
            for size in (1024, 0):
                while ring.write(0x77, bytes(size)):
                    pass
            with pytest.raises(AeronError) as refused:
                aeron.async_add_publication("aeron:ipc", 1)
            assert str(refused.value) == (
                "could not send ADD_PUBLICATION (0x1) to the driver: its to-driver ring is full (the driver is not "
                "reading it, or other clients keep it full); try again, or give the driver a larger "
                "aeron.conductor.buffer.length"
            )
    finally:
        driver.close()
