"""Non-blocking registrations: a registration id at once, None while pending, the resource or the driver's
refusal once the duty cycle has seen the answer; blocking calls refused where they would deadlock.

The driver runs in-process in INVOKER style (its agents' duty cycles called by the test, in turn with the
client's), so "pending" is exact: nothing answers until the test runs a cycle.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from driver.agent.runner import CompositeAgent
from driver.client import (
    AeronError,
    DriverTimeoutError,
    ExclusivePublication,
    Publication,
    RegistrationError,
    Subscription,
)
from driver.client.aeron import Aeron
from driver.client.counter import Counter
from driver.concurrent.counters import RECORD_ALLOCATED
from driver.context import DriverContext
from driver.media_driver import MediaDriver
from driver.protocol.control_protocol import ErrorCode

CHANNEL = "aeron:ipc?term-length=64k"


class InvokedDriver:
    """A MediaDriver whose agents run only when ``invoke()`` is called."""

    def __init__(self, aeron_dir: Path) -> None:
        self.driver = MediaDriver(DriverContext(aeron_dir=str(aeron_dir)))
        self.agent = CompositeAgent([self.driver.conductor, self.driver.sender, self.driver.receiver])
        self.agent.on_start()

    def invoke(self) -> int:
        return self.agent.do_work()

    def close(self) -> None:
        self.agent.on_close()
        self.driver.close()


@pytest.fixture
def driver(aeron_dir: Path) -> Iterator[InvokedDriver]:
    invoked = InvokedDriver(aeron_dir)
    yield invoked
    invoked.close()


@pytest.fixture
def aeron(driver: InvokedDriver, aeron_dir: Path) -> Iterator[Aeron]:
    client = Aeron.connect(aeron_dir=aeron_dir, timeout_s=1, use_conductor_agent_invoker=True)
    yield client
    client.close()


def drive(driver: InvokedDriver, aeron: Aeron, until: Callable[[], object], cycles: int = 200) -> object:
    """Driver cycle, client cycle, in turn, until ``until()`` returns something other than None."""
    for _ in range(cycles):
        driver.invoke()
        aeron.conductor_agent_invoker.do_work()
        result = until()
        if result is not None:
            return result
    raise AssertionError(f"still pending after {cycles} duty cycles")


def test_registrations_are_pending_until_the_duty_cycle_sees_the_answer(
    driver: InvokedDriver, aeron: Aeron
) -> None:
    publication_id = aeron.async_add_publication(CHANNEL, 10)
    exclusive_id = aeron.async_add_exclusive_publication(CHANNEL, 10)
    subscription_id = aeron.async_add_subscription(CHANNEL, 10)
    counter_id = aeron.async_add_counter(1001, b"key", "orders")
    ids = [publication_id, exclusive_id, subscription_id, counter_id]
    assert len(set(ids)) == 4
    # Nothing has run: all pending.
    assert aeron.get_publication(publication_id) is None
    assert aeron.get_exclusive_publication(exclusive_id) is None
    assert aeron.get_subscription(subscription_id) is None
    assert aeron.get_counter(counter_id) is None
    driver.invoke()  # the driver answers, but the client has not read the answers yet
    assert aeron.get_publication(publication_id) is None

    publication = drive(driver, aeron, lambda: aeron.get_publication(publication_id))
    exclusive = aeron.get_exclusive_publication(exclusive_id)
    subscription = aeron.get_subscription(subscription_id)
    counter = aeron.get_counter(counter_id)
    assert isinstance(publication, Publication) and publication.registration_id == publication_id
    assert isinstance(exclusive, ExclusivePublication) and exclusive.stream_id == 10
    assert isinstance(subscription, Subscription) and subscription.channel_status_id == -1
    assert isinstance(counter, Counter)
    assert aeron.counters_reader.get_counter_label(counter.id) == "orders"
    # Ready objects stay gettable; the wrong getter says what the id is.
    assert aeron.get_publication(publication_id) is publication
    with pytest.raises(AeronError, match="is a ExclusivePublication, not a Publication"):
        aeron.get_publication(exclusive_id)
    with pytest.raises(AeronError, match="unknown registration id 424242"):
        aeron.get_subscription(424242)

    # Both publications reach the subscription (two images), and messages flow.
    drive(driver, aeron, lambda: len(subscription.images) == 2 or None)
    assert drive(driver, aeron, lambda: exclusive.offer(b"hello") > 0 or None)
    received: list[bytes] = []
    drive(
        driver,
        aeron,
        lambda: subscription.poll(lambda b, o, n, _h: received.append(b.get_bytes(o, n)), 10) or None,
    )
    assert received == [b"hello"]


def test_a_refused_registration_raises_the_drivers_code_and_message_once(
    driver: InvokedDriver, aeron: Aeron
) -> None:
    registration_id = aeron.async_add_publication("aeron:ipc?term-length=1000", 5)
    with pytest.raises(RegistrationError) as info:
        drive(driver, aeron, lambda: aeron.get_publication(registration_id))
    error = info.value
    assert error.correlation_id == registration_id
    assert error.code == ErrorCode.GENERIC_ERROR
    assert "term-length=1000 is less than the minimum term length 65536" in error.driver_message
    # Taken: the id is now unknown.
    with pytest.raises(AeronError, match="unknown registration id"):
        aeron.get_publication(registration_id)
    # A refused subscription leaves nothing behind either.
    subscription_id = aeron.async_add_subscription("aeron:udp?endpoint=127.0.0.1", 5)
    with pytest.raises(RegistrationError, match="endpoint"):
        drive(driver, aeron, lambda: aeron.get_subscription(subscription_id))
    assert subscription_id not in aeron._subscriptions


def test_blocking_calls_in_agent_invoker_mode_raise_instead_of_deadlocking(
    driver: InvokedDriver, aeron: Aeron
) -> None:
    started = time.monotonic()
    for call in (
        lambda: aeron.add_publication(CHANNEL, 1),
        lambda: aeron.add_exclusive_publication(CHANNEL, 1),
        lambda: aeron.add_subscription(CHANNEL, 1),
        lambda: aeron.add_counter(1, "x"),
    ):
        with pytest.raises(AeronError, match="would deadlock: use the async_add_"):
            call()
    assert time.monotonic() - started < 1


def test_closing_does_not_wait_for_the_driver_in_agent_invoker_mode(
    driver: InvokedDriver, aeron: Aeron
) -> None:
    errors: list[BaseException] = []
    aeron.error_handler = errors.append
    publication_id = aeron.async_add_publication(CHANNEL, 11)
    subscription_id = aeron.async_add_subscription(CHANNEL, 11)
    counter_id = aeron.async_add_counter(1, b"", "to remove")
    drive(driver, aeron, lambda: aeron.get_counter(counter_id))
    publication = aeron.get_publication(publication_id)
    subscription = aeron.get_subscription(subscription_id)
    counter = aeron.get_counter(counter_id)
    # No driver cycle runs during these: they would block forever if they waited for the answer.
    publication.close()
    subscription.close()
    counter.close()
    assert publication.is_closed and subscription.is_closed
    assert len(aeron.conductor._pending) == 3
    drive(driver, aeron, lambda: not aeron.conductor._pending or None)
    assert errors == []
    assert aeron.counters_reader.get_counter_state(counter.id) != RECORD_ALLOCATED


def test_an_unanswered_registration_times_out_on_the_injected_clock(aeron_dir: Path) -> None:
    driver = MediaDriver(DriverContext(aeron_dir=str(aeron_dir)))  # constructed, never run: never answers
    nanos = [0]
    try:
        aeron = Aeron.connect(
            aeron_dir=aeron_dir,
            timeout_s=1,
            use_conductor_agent_invoker=True,
            driver_timeout_ms=2_000,
            nano_clock=lambda: nanos[0],
        )
        try:
            registration_id = aeron.async_add_publication(CHANNEL, 3)
            nanos[0] = 1_999_000_000
            aeron.do_work()
            assert aeron.get_publication(registration_id) is None
            nanos[0] = 2_000_000_001
            aeron.do_work()
            with pytest.raises(DriverTimeoutError, match="no response from the driver within 2000 ms"):
                aeron.get_publication(registration_id)
        finally:
            aeron.close()
    finally:
        driver.close()


def test_the_client_thread_completes_registrations_nobody_waits_for(embedded_driver) -> None:
    driver = embedded_driver()
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        assert aeron.conductor_agent_invoker is None
        registration_id = aeron.async_add_publication(CHANNEL, 12)
        deadline = time.monotonic() + 5
        while (publication := aeron.get_publication(registration_id)) is None:
            assert time.monotonic() < deadline, "the client thread never completed the registration"
            time.sleep(0.002)
        assert publication.stream_id == 12
        refused_id = aeron.async_add_publication("aeron:ipc?term-length=1000", 12)
        deadline = time.monotonic() + 5
        with pytest.raises(RegistrationError, match="minimum term length"):
            while aeron.get_publication(refused_id) is None:
                assert time.monotonic() < deadline
                time.sleep(0.002)


def test_a_command_that_cannot_be_encoded_is_refused_at_once_and_leaves_nothing_pending(
    driver: InvokedDriver, aeron: Aeron
) -> None:
    with pytest.raises(ValueError):
        aeron.async_add_counter(1, b"", "x" * 10_000)
    assert aeron.conductor._pending == {} and aeron._pending_registrations == set()
