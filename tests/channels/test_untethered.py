"""Untethered subscriptions (``tether=false``) under a manual clock: the state machine on its own, then IPC
publications through the conductor (INVOKER mode, real log files and counters)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from driver.context import DriverContext
from driver.media_driver import MediaDriver
from driver.protocol import control_protocol as cp
from driver.protocol.untethered import Action, State, UntetheredSubscriptions, UntetheredTimeouts
from tests.test_ipc_conductor import Client, decode

S = 1_000_000_000
TERM_LENGTH = 64 * 1024


class Position:
    def __init__(self, value: int = 0) -> None:
        self.value = value

    def get(self) -> int:
        return self.value


def test_behind_then_unavailable_then_dropped_then_rejoined_each_after_its_timeout() -> None:
    subs = UntetheredSubscriptions()
    slow = Position(0)
    subs.add("link", slow, UntetheredTimeouts(5 * S, 3 * S, 10 * S), now_ns=0)
    behind_limit = 100
    assert subs.check(4 * S, behind_limit) == []
    ((action, entry),) = subs.check(5 * S, behind_limit)
    assert (action, entry.state) == (Action.UNAVAILABLE, State.LINGER)
    assert subs.check(7 * S, behind_limit) == []
    assert [a for a, _ in subs.check(8 * S, behind_limit)] == [Action.DROP]
    assert subs.is_resting(slow)
    assert subs.check(17 * S, behind_limit) == []
    assert [a for a, _ in subs.check(18 * S, behind_limit)] == [Action.REJOIN]
    assert entry.state is State.ACTIVE


def test_a_subscriber_inside_the_window_restarts_its_clock() -> None:
    subs = UntetheredSubscriptions()
    position = Position(0)
    subs.add("link", position, UntetheredTimeouts(5 * S, 5 * S, 10 * S), now_ns=0)
    assert subs.check(4 * S, behind_limit=100) == []
    position.value = 101  # caught up within the window
    assert subs.check(6 * S, behind_limit=100) == []
    position.value = 50
    assert subs.check(10 * S, behind_limit=100) == []  # behind again only since 6 s
    assert [a for a, _ in subs.check(11 * S, behind_limit=100)] == [Action.UNAVAILABLE]


@pytest.fixture
def driver(aeron_dir: Path, clock) -> Iterator[MediaDriver]:
    ctx = DriverContext(aeron_dir=str(aeron_dir))
    media_driver = MediaDriver(ctx, clock.epoch_clock_ms, clock.nano_clock)
    media_driver.conductor.on_start()
    yield media_driver
    media_driver.conductor.on_close()
    media_driver.close()


def _stream(client: Client, slow_channel: str):
    """A tethered fast subscriber, a slow one on ``slow_channel``, and a publication: (fast, slow, ready)."""
    fast_id, _ = client.add_subscription("aeron:ipc")
    slow_id, _ = client.add_subscription(slow_channel)
    _, events = client.add_publication()
    images = {image.subscription_registration_id: image for image in decode(events, cp.Event.ON_AVAILABLE_IMAGE)}
    (ready,) = decode(events, cp.Event.ON_PUBLICATION_READY)
    return images[fast_id], images[slow_id], ready


def _seconds(client: Client, clock, seconds: int) -> list[tuple[int, bytes]]:
    events = []
    for _ in range(seconds):
        clock.advance_ms(1000)
        assert client.ring.write(cp.Command.CLIENT_KEEPALIVE, cp.encode_correlated(client.client_id, 0))
        events += client.run()
    return events


def test_an_untethered_ipc_subscriber_a_window_behind_is_dropped_rests_and_rejoins_live(
    driver: MediaDriver, clock
) -> None:
    client = Client(driver)
    fast, slow, ready = _stream(client, "aeron:ipc?tether=false")
    counters = driver.counters
    limit = ready.publication_limit_counter_id
    window = counters.get_counter_value(limit)
    counters.set_counter_value(fast.subscriber_position_id, window)  # the slow one holds it at 0 + window
    client.run()
    assert counters.get_counter_value(limit) == window
    # 5 s behind (aeron.untethered.window.limit.timeout): its image goes; it still holds the stream while it
    # lingers (as long again), so the client can let go of the log.
    events = _seconds(client, clock, 4)
    assert decode(events, cp.Event.ON_UNAVAILABLE_IMAGE) == []
    events = _seconds(client, clock, 1)
    assert decode(events, cp.Event.ON_UNAVAILABLE_IMAGE) == [
        cp.ImageMessage(ready.registration_id, slow.subscription_registration_id, 10, "aeron:ipc")
    ]
    assert counters.get_counter_value(limit) == window
    _seconds(client, clock, 5)
    assert counters.get_counter_value(limit) == 2 * window  # out of flow control: the fast one runs on
    counters.set_counter_value(fast.subscriber_position_id, 3 * window)
    client.run()
    # 10 s resting (aeron.untethered.resting.timeout), then back at the live position.
    events = _seconds(client, clock, 9)
    assert decode(events, cp.Event.ON_AVAILABLE_IMAGE) == []
    events = _seconds(client, clock, 1)
    (again,) = decode(events, cp.Event.ON_AVAILABLE_IMAGE)
    assert (again.subscription_registration_id, again.subscriber_position_id) == (
        slow.subscription_registration_id,
        slow.subscriber_position_id,
    )
    assert counters.get_counter_value(slow.subscriber_position_id) == 3 * window
    assert counters.get_counter_value(limit) == 4 * window


def test_channel_timeouts_override_the_driver_settings(driver: MediaDriver, clock) -> None:
    client = Client(driver)
    fast, _slow, ready = _stream(
        client,
        "aeron:ipc?tether=false|untethered-window-limit-timeout=1s|untethered-resting-timeout=2s",
    )
    counters = driver.counters
    window = counters.get_counter_value(ready.publication_limit_counter_id)
    counters.set_counter_value(fast.subscriber_position_id, window)
    client.run()
    events = _seconds(client, clock, 1)
    assert len(decode(events, cp.Event.ON_UNAVAILABLE_IMAGE)) == 1
    _seconds(client, clock, 1)  # linger: as the channel's window-limit timeout
    assert counters.get_counter_value(ready.publication_limit_counter_id) == 2 * window
    events = _seconds(client, clock, 2)
    assert len(decode(events, cp.Event.ON_AVAILABLE_IMAGE)) == 1


def test_a_tethered_slow_subscriber_still_holds_the_stream_back(driver: MediaDriver, clock) -> None:
    client = Client(driver)
    fast, _slow, ready = _stream(client, "aeron:ipc?tether=true")
    counters = driver.counters
    window = counters.get_counter_value(ready.publication_limit_counter_id)
    counters.set_counter_value(fast.subscriber_position_id, window)
    events = _seconds(client, clock, 30)
    assert decode(events, cp.Event.ON_UNAVAILABLE_IMAGE) == []
    assert counters.get_counter_value(ready.publication_limit_counter_id) == window


def test_removing_a_resting_subscription_frees_its_position(driver: MediaDriver, clock) -> None:
    client = Client(driver)
    fast, slow, ready = _stream(client, "aeron:ipc?tether=false")
    counters = driver.counters
    window = counters.get_counter_value(ready.publication_limit_counter_id)
    counters.set_counter_value(fast.subscriber_position_id, window)
    _seconds(client, clock, 11)  # resting now
    _, events = client.command(
        cp.Command.REMOVE_SUBSCRIPTION,
        lambda c: cp.encode_remove(client.client_id, c, slow.subscription_registration_id),
    )
    assert [t for t, _ in events] == [cp.Event.ON_OPERATION_SUCCESS]
    events = _seconds(client, clock, 12)
    assert decode(events, cp.Event.ON_AVAILABLE_IMAGE) == []
    assert counters.get_counter_state(slow.subscriber_position_id) != 1  # RECORD_ALLOCATED


@pytest.mark.parametrize("value", ["-1s", "soon"])
def test_a_bad_untethered_timeout_is_refused_by_name(driver: MediaDriver, value: str) -> None:
    client = Client(driver)
    _, events = client.add_subscription(f"aeron:ipc?tether=false|untethered-resting-timeout={value}")
    (error,) = decode(events, cp.Event.ON_ERROR)
    assert "untethered-resting-timeout" in error.message
