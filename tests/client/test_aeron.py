"""The Python client against a real driver process: connect, counters, close, and every way it can fail."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import pytest

from driver.client import Aeron, ClientTimeoutError, CncVersionError, DriverTimeoutError, RegistrationError
from driver.concurrent.counters import RECORD_ALLOCATED
from driver.context import DriverContext
from driver.media_driver import MediaDriver
from driver.status.system_counters import FIRST_FREE_COUNTER_ID
from driver.status.system_counters import SystemCounterDescriptor as SC
from tests.support import ManualClock, wait_for


def _labels(aeron: Aeron) -> dict[int, str]:
    labels: dict[int, str] = {}
    aeron.counters_reader.for_each(lambda i, _t, _k, label: labels.__setitem__(i, label))
    return labels


def test_connect_add_counter_and_close(driver_process) -> None:
    driver = driver_process()
    with Aeron.connect(aeron_dir=driver.aeron_dir, timeout_s=5) as aeron:
        counter = aeron.add_counter(type_id=1001, label="orders processed", key=b"orders")
        counter.set(1234)
        reader = aeron.counters_reader
        assert reader.get_counter_value(counter.id) == 1234
        assert reader.get_counter_label(counter.id) == "orders processed"
        assert reader.get_counter_type_id(counter.id) == 1001
        assert _labels(aeron)[FIRST_FREE_COUNTER_ID] == f"client-heartbeat: {aeron.client_id}"  # first after the driver's
        counter.close()
        assert reader.get_counter_state(counter.id) != RECORD_ALLOCATED
    # After CLIENT_CLOSE the driver reaps the client at its next timer tick (1 s).
    with Aeron.connect(aeron_dir=driver.aeron_dir, timeout_s=5) as observer:
        wait_for(
            lambda: f"client-heartbeat: {aeron.client_id}" not in _labels(observer).values(),
            3,
            "client reaped",
        )
    assert driver.stop() == 0


def test_two_clients_see_each_others_counters(driver_process) -> None:
    driver = driver_process()
    with Aeron.connect(aeron_dir=driver.aeron_dir) as a, Aeron.connect(aeron_dir=driver.aeron_dir) as b:
        assert a.client_id != b.client_id
        counter = a.add_counter(type_id=7, label="shared")
        counter.set(99)
        assert b.counters_reader.get_counter_value(counter.id) == 99


def test_removing_an_unknown_counter_is_refused(driver_process) -> None:
    driver = driver_process()
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        aeron.add_counter(1, "x")
        with pytest.raises(RegistrationError, match="Unknown counter: 987654") as info:
            aeron._remove_counter(987654)
        assert info.value.code == 5


def test_no_driver_is_a_clear_timeout(aeron_dir: Path) -> None:
    started = time.monotonic()
    with pytest.raises(DriverTimeoutError, match=r"no driver: .*cnc.dat does not exist .*mediadriver run"):
        Aeron.connect(aeron_dir=aeron_dir, timeout_s=0.3)
    assert time.monotonic() - started < 2


def test_stale_cnc_without_heartbeat_is_not_a_driver(aeron_dir: Path) -> None:
    old = MediaDriver(DriverContext(aeron_dir=str(aeron_dir)), lambda: int(time.time() * 1000) - 60_000)
    old.close()
    with pytest.raises(DriverTimeoutError, match="no driver heartbeat detected"):
        Aeron.connect(aeron_dir=aeron_dir, timeout_s=0.3)


def test_cnc_of_another_version_is_refused(aeron_dir: Path) -> None:
    aeron_dir.mkdir(parents=True)
    (aeron_dir / "cnc.dat").write_bytes(struct.pack("<i", 14) + bytes(4096))
    with pytest.raises(CncVersionError, match="CnC version 14; this client speaks version 15"):
        Aeron.connect(aeron_dir=aeron_dir, timeout_s=0.3)


def test_driver_that_dies_is_detected_by_the_client(driver_process) -> None:
    driver = driver_process()
    aeron = Aeron.connect(aeron_dir=driver.aeron_dir, driver_timeout_ms=1500)
    try:
        driver.proc.kill()
        driver.proc.wait()
        wait_for(lambda: aeron.conductor.failure is not None, 4, "the client to notice the dead driver")
        with pytest.raises(DriverTimeoutError, match="has not heartbeated"):
            aeron.add_counter(1, "after death")
    finally:
        aeron.close()


def test_client_that_stops_keeping_alive_is_timed_out(embedded_driver) -> None:
    clock = ManualClock.starting_now()
    driver = embedded_driver(
        client_liveness_timeout_ns=500_000_000,
        timer_interval_ns=100_000_000,
        epoch_clock_ms=clock.epoch_clock_ms,
        nano_clock=clock.nano_clock,
    )
    timeouts = driver.driver.system_counters.get(SC.CLIENT_TIMEOUTS)
    aeron = Aeron.connect(aeron_dir=driver.aeron_dir, use_conductor_invoker=True)
    try:
        aeron.add_counter(1, "makes the driver know this client")
        known_at = clock.nanos
        # No duty cycle of the client (no keepalive) while the driver's time passes the liveness timeout.
        wait_for(
            lambda: clock.advance_ms(100) or timeouts.get() == 1,
            what="the driver to time the client out",
            interval=0.02,
        )
        assert clock.nanos - known_at >= 500_000_000
        aeron.do_work()
        with pytest.raises(ClientTimeoutError, match=f"timed out client {aeron.client_id}"):
            aeron.add_counter(1, "too late")
    finally:
        aeron.close()


def test_driver_that_stops_cleanly_is_reported_as_stopped(driver_process) -> None:
    driver = driver_process()
    aeron = Aeron.connect(aeron_dir=driver.aeron_dir, driver_timeout_ms=1500)
    try:
        assert driver.stop() == 0
        wait_for(lambda: aeron.conductor.failure is not None, 4, "the client to notice the stopped driver")
        with pytest.raises(DriverTimeoutError, match=r"^the driver stopped") as info:
            aeron.add_counter(1, "after the stop")
        assert "heartbeated" not in str(info.value)
    finally:
        aeron.close()
