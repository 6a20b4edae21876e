"""The driver conductor in INVOKER mode: real cnc.dat, commands written by hand, a manual clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from driver.agent.runner import do_work_until_idle
from driver.concurrent.broadcast import BroadcastReceiver, CopyBroadcastReceiver
from driver.concurrent.counters import RECORD_ALLOCATED, RECORD_RECLAIMED
from driver.concurrent.error_log import ErrorLogReader
from driver.concurrent.ring_buffer import ManyToOneRingBuffer
from driver.context import DriverContext
from driver.media_driver import MediaDriver
from driver.protocol import control_protocol as cp
from driver.status.system_counters import FIRST_FREE_COUNTER_ID
from driver.status.system_counters import SystemCounterDescriptor as SC


class Harness:
    """One fake client: writes commands to the ring, collects events from the broadcast buffer."""

    def __init__(self, driver: MediaDriver) -> None:
        self.driver = driver
        self.ring = ManyToOneRingBuffer(driver.cnc.to_driver_buffer)
        self.events = CopyBroadcastReceiver(BroadcastReceiver(driver.cnc.to_clients_buffer))
        self.client_id = self.ring.next_correlation_id()

    def send(self, msg_type_id: int, body: bytes) -> None:
        assert self.ring.write(msg_type_id, body)

    def run(self) -> list[tuple[int, bytes]]:
        do_work_until_idle(self.driver.conductor)
        received: list[tuple[int, bytes]] = []
        while self.events.receive(lambda t, b: received.append((t, bytes(b)))):
            pass
        return received

    def add_counter(
        self, type_id: int = 1001, label: str = "test counter", key: bytes = b"k"
    ) -> tuple[int, int]:
        correlation_id = self.ring.next_correlation_id()
        self.send(
            cp.Command.ADD_COUNTER, cp.encode_counter(self.client_id, correlation_id, type_id, key, label)
        )
        events = self.run()
        assert events[0][0] == cp.Event.ON_COUNTER_READY, events
        update = cp.decode_counter_update(memoryview(events[0][1]))
        assert update.correlation_id == correlation_id
        return correlation_id, update.counter_id

    def counter_value(self, descriptor: SC) -> int:
        return self.driver.counters.get_counter_value(descriptor.value)


@pytest.fixture
def driver(aeron_dir: Path, clock) -> MediaDriver:
    ctx = DriverContext(aeron_dir=str(aeron_dir), client_liveness_timeout_ns=2_000_000_000)
    media_driver = MediaDriver(ctx, clock.epoch_clock_ms, clock.nano_clock)
    media_driver.conductor.on_start()
    yield media_driver
    media_driver.conductor.on_close()
    media_driver.close()


@pytest.fixture
def client(driver: MediaDriver) -> Harness:
    return Harness(driver)


def test_add_counter_allocates_client_heartbeat_and_counter(client: Harness, driver: MediaDriver) -> None:
    registration_id, counter_id = client.add_counter(type_id=1001, label="orders", key=b"\x01\x02")
    counters = driver.counters
    heartbeat_id = FIRST_FREE_COUNTER_ID  # first id after the driver's own counters
    assert counters.get_counter_label(heartbeat_id) == f"client-heartbeat: {client.client_id}"
    assert counters.get_counter_type_id(heartbeat_id) == 11
    assert counter_id == heartbeat_id + 1
    assert counters.get_counter_label(counter_id) == "orders"
    assert counters.get_counter_type_id(counter_id) == 1001
    assert counters.get_counter_key(counter_id)[:2] == b"\x01\x02"
    assert registration_id > client.client_id


def test_remove_counter_answers_success_then_unavailable(client: Harness, driver: MediaDriver) -> None:
    registration_id, counter_id = client.add_counter()
    correlation_id = client.ring.next_correlation_id()
    client.send(
        cp.Command.REMOVE_COUNTER, cp.encode_remove(client.client_id, correlation_id, registration_id)
    )
    events = client.run()
    assert [t for t, _ in events] == [cp.Event.ON_OPERATION_SUCCESS, cp.Event.ON_UNAVAILABLE_COUNTER]
    assert cp.decode_operation_succeeded(memoryview(events[0][1])) == correlation_id
    assert cp.decode_counter_update(memoryview(events[1][1])) == cp.CounterUpdate(registration_id, counter_id)
    assert driver.counters.get_counter_state(counter_id) == RECORD_RECLAIMED


def test_remove_unknown_counter_is_an_error_with_code_5(client: Harness, driver: MediaDriver) -> None:
    client.add_counter()
    correlation_id = client.ring.next_correlation_id()
    client.send(cp.Command.REMOVE_COUNTER, cp.encode_remove(client.client_id, correlation_id, 424242))
    (event,) = client.run()
    assert event[0] == cp.Event.ON_ERROR
    error = cp.decode_error(memoryview(event[1]))
    assert (error.offending_correlation_id, error.error_code) == (
        correlation_id,
        cp.ErrorCode.UNKNOWN_COUNTER,
    )
    assert "424242" in error.message
    assert client.counter_value(SC.ERRORS) == 1


def test_keepalive_keeps_client_alive_and_updates_heartbeat_counter(client: Harness, driver, clock) -> None:
    client.add_counter()
    for _ in range(5):
        clock.advance_ms(1000)
        client.send(cp.Command.CLIENT_KEEPALIVE, cp.encode_correlated(client.client_id, 0))
        client.run()
    assert client.client_id in driver.conductor.clients
    assert driver.counters.get_counter_value(FIRST_FREE_COUNTER_ID) == clock.epoch_ms
    assert client.counter_value(SC.CLIENT_TIMEOUTS) == 0


def test_silent_client_times_out_and_its_counters_are_freed(client: Harness, driver, clock) -> None:
    _, counter_id = client.add_counter()
    clock.advance_ms(2001)  # liveness timeout is 2 s
    events = client.run()
    assert (cp.Event.ON_CLIENT_TIMEOUT, cp.encode_client_timeout(client.client_id)) in events
    assert client.client_id not in driver.conductor.clients
    assert driver.counters.get_counter_state(counter_id) == RECORD_RECLAIMED
    assert driver.counters.get_counter_state(FIRST_FREE_COUNTER_ID) == RECORD_RECLAIMED
    assert client.counter_value(SC.CLIENT_TIMEOUTS) == 1
    # No ON_UNAVAILABLE_COUNTER for counters freed by a timeout (as 1.15.1).
    assert all(t != cp.Event.ON_UNAVAILABLE_COUNTER for t, _ in events)


def test_client_close_reaps_the_client_at_once_counted_as_a_close(client: Harness, driver) -> None:
    _, counter_id = client.add_counter()
    client.send(cp.Command.CLIENT_CLOSE, cp.encode_correlated(client.client_id, -1))
    events = client.run()
    # Not a liveness timeout (1.15.1 counts and reports it as one): "Client closes" counts it.
    assert all(t != cp.Event.ON_CLIENT_TIMEOUT for t, _ in events)
    assert client.counter_value(SC.CLIENT_TIMEOUTS) == 0
    assert driver.system_counters.client_closes.get() == 1
    assert driver.counters.get_counter_label(driver.system_counters.client_closes.id) == "Client closes"
    assert driver.counters.get_counter_state(counter_id) == RECORD_RECLAIMED


def heartbeat_counter_of(driver: MediaDriver, client_id: int) -> int:
    """The counter a modern client keeps alive by: type 11 with its client id as the key's first 8 bytes."""
    counters = driver.counters
    found = [
        i
        for i in range(FIRST_FREE_COUNTER_ID, 128)
        if counters.get_counter_state(i) == RECORD_ALLOCATED
        and counters.get_counter_type_id(i) == 11
        and counters.get_counter_key(i)[:8] == client_id.to_bytes(8, "little", signed=True)
    ]
    assert len(found) == 1, found
    return found[0]


def test_a_client_advancing_its_heartbeat_counter_stays_alive_without_keepalives(
    client: Harness, driver, clock
) -> None:
    client.add_counter()
    heartbeat = heartbeat_counter_of(driver, client.client_id)
    for _ in range(6):  # 6 s, three times the liveness timeout, and never a CLIENT_KEEPALIVE
        clock.advance_ms(1000)
        driver.counters.set_counter_value(heartbeat, clock.epoch_ms)  # what the 1.4x+ C client does
        assert client.run() == []
    assert client.client_id in driver.conductor.clients
    assert client.counter_value(SC.CLIENT_TIMEOUTS) == 0


def test_a_client_whose_heartbeat_counter_stops_is_timed_out(client: Harness, driver, clock) -> None:
    _, counter_id = client.add_counter()
    heartbeat = heartbeat_counter_of(driver, client.client_id)
    clock.advance_ms(1000)
    driver.counters.set_counter_value(heartbeat, clock.epoch_ms)
    client.run()
    clock.advance_ms(2000)  # exactly the liveness timeout since the last beat: still alive
    assert client.run() == []
    clock.advance_ms(1000)
    events = client.run()
    assert (cp.Event.ON_CLIENT_TIMEOUT, cp.encode_client_timeout(client.client_id)) in events
    assert client.client_id not in driver.conductor.clients
    assert driver.counters.get_counter_state(counter_id) == RECORD_RECLAIMED
    assert client.counter_value(SC.CLIENT_TIMEOUTS) == 1


def test_client_close_reaps_a_client_that_wrote_its_heartbeat_counter(client: Harness, driver, clock) -> None:
    client.add_counter()
    heartbeat = heartbeat_counter_of(driver, client.client_id)
    clock.advance_ms(500)
    driver.counters.set_counter_value(heartbeat, clock.epoch_ms)
    client.send(cp.Command.CLIENT_CLOSE, cp.encode_correlated(client.client_id, -1))
    client.run()
    assert client.client_id not in driver.conductor.clients
    assert (client.counter_value(SC.CLIENT_TIMEOUTS), driver.system_counters.client_closes.get()) == (0, 1)


def test_heartbeat_is_written_every_timer_interval(client: Harness, driver, clock) -> None:
    clock.advance_ms(1000)
    client.run()
    assert client.ring.consumer_heartbeat_time() == clock.epoch_ms


@pytest.mark.parametrize(
    ("msg_type_id", "body", "expected"),
    [
        (0x77, b"\x00" * 40, "unknown command type id 0x77"),
        (cp.Command.ADD_COUNTER, b"\x01" * 10, "malformed command"),
        (
            cp.Command.ADD_COUNTER,
            cp.encode_correlated(1, 5) + b"\x00\x00\x00\x00\xff\xff\xff\x7f",
            "key length",
        ),
        (
            cp.Command.ADD_PUBLICATION,
            cp.encode_correlated(1, 5) + b"\x01\x00\x00\x00\xff\x00\x00\x00",
            "runs past",
        ),
    ],
)
def test_garbage_commands_get_a_clear_error_and_the_driver_survives(
    client: Harness, driver: MediaDriver, msg_type_id: int, body: bytes, expected: str
) -> None:
    client.send(msg_type_id, body)
    events = client.run()
    assert events and events[0][0] == cp.Event.ON_ERROR
    assert expected in cp.decode_error(memoryview(events[0][1])).message
    assert ErrorLogReader.has_errors(driver.cnc.error_log_buffer)
    assert client.counter_value(SC.ERRORS) == 1
    # Still serving.
    _, counter_id = client.add_counter()
    assert driver.counters.get_counter_state(counter_id) == RECORD_ALLOCATED


def test_stuck_command_record_is_unblocked_after_the_liveness_timeout(client: Harness, driver, clock) -> None:
    ring = client.ring
    # A producer that claimed space and died before committing: negative length at the head.
    tail = ring.producer_position()
    from driver.concurrent import ring_buffer as rb

    buffer = driver.cnc.to_driver_buffer
    buffer.put_int64(ring.capacity + rb.TAIL_POSITION_OFFSET, tail + 64)
    buffer.put_int32(tail, -64)
    client.run()
    registration = ring.next_correlation_id()
    client.send(cp.Command.ADD_COUNTER, cp.encode_counter(client.client_id, registration, 1, b"", "after"))
    assert client.run() == []
    clock.advance_ms(1000)
    assert client.run() == []  # not yet: the head has been stuck for less than the liveness timeout
    clock.advance_ms(1500)
    events = client.run()
    assert any(t == cp.Event.ON_COUNTER_READY for t, _ in events)
    assert client.counter_value(SC.UNBLOCKED_COMMANDS) == 1
