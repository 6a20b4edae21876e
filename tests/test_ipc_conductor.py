"""IPC publications and subscriptions through the conductor (INVOKER mode, manual clock, real log files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from driver.agent.runner import do_work_until_idle
from driver.concurrent.broadcast import BroadcastReceiver, CopyBroadcastReceiver
from driver.concurrent.counters import RECORD_ALLOCATED
from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.concurrent.logbuffer.log_buffers import LogBuffers
from driver.concurrent.ring_buffer import ManyToOneRingBuffer
from driver.context import DriverContext
from driver.media_driver import MediaDriver
from driver.protocol import control_protocol as cp
from driver.status.system_counters import FIRST_FREE_COUNTER_ID
from tests.support import wait_for

TERM_LENGTH = 64 * 1024

FIRST_FREE_ID = FIRST_FREE_COUNTER_ID  # the first counter id after the driver's own counters


class Client:
    def __init__(self, driver: MediaDriver) -> None:
        self.driver = driver
        self.ring = ManyToOneRingBuffer(driver.cnc.to_driver_buffer)
        self.events = CopyBroadcastReceiver(BroadcastReceiver(driver.cnc.to_clients_buffer))
        self.client_id = self.ring.next_correlation_id()

    def command(self, msg_type_id: int, build) -> tuple[int, list[tuple[int, bytes]]]:
        correlation_id = self.ring.next_correlation_id()
        assert self.ring.write(msg_type_id, build(correlation_id))
        return correlation_id, self.run()

    def run(self) -> list[tuple[int, bytes]]:
        do_work_until_idle(self.driver.conductor)
        received: list[tuple[int, bytes]] = []
        while self.events.receive(lambda t, b: received.append((t, bytes(b)))):
            pass
        return received

    def add_publication(
        self,
        channel: str = f"aeron:ipc?term-length={TERM_LENGTH}",
        stream_id: int = 10,
        exclusive: bool = False,
    ):
        kind = cp.Command.ADD_EXCLUSIVE_PUBLICATION if exclusive else cp.Command.ADD_PUBLICATION
        return self.command(kind, lambda c: cp.encode_publication(self.client_id, c, stream_id, channel))

    def add_subscription(self, channel: str = "aeron:ipc", stream_id: int = 10):
        return self.command(
            cp.Command.ADD_SUBSCRIPTION,
            lambda c: cp.encode_subscription(self.client_id, c, stream_id, channel),
        )


def decode(events: list[tuple[int, bytes]], event: cp.Event):
    decoders = {
        cp.Event.ON_PUBLICATION_READY: cp.decode_publication_ready,
        cp.Event.ON_EXCLUSIVE_PUBLICATION_READY: cp.decode_publication_ready,
        cp.Event.ON_AVAILABLE_IMAGE: cp.decode_image_ready,
        cp.Event.ON_UNAVAILABLE_IMAGE: cp.decode_image_message,
        cp.Event.ON_SUBSCRIPTION_READY: cp.decode_subscription_ready,
        cp.Event.ON_ERROR: cp.decode_error,
    }
    return [decoders[event](memoryview(body)) for t, body in events if t == event]


def one_subscriber_publication(client: Client):
    """A subscription, then a publication on its stream: (the subscriber's image, the publication's ready)."""
    client.add_subscription()
    client_events = client.add_publication()[1]
    (image,) = decode(client_events, cp.Event.ON_AVAILABLE_IMAGE)
    return image, decode(client_events, cp.Event.ON_PUBLICATION_READY)[0]


@pytest.fixture
def driver(aeron_dir: Path, clock) -> MediaDriver:
    ctx = DriverContext(aeron_dir=str(aeron_dir), publication_linger_timeout_ns=2_000_000_000)
    media_driver = MediaDriver(ctx, clock.epoch_clock_ms, clock.nano_clock)
    media_driver.conductor.on_start()
    yield media_driver
    media_driver.conductor.on_close()
    media_driver.close()


@pytest.fixture
def client(driver: MediaDriver) -> Client:
    return Client(driver)


def test_publication_ready_names_a_log_laid_out_as_1_15_1(client: Client, driver: MediaDriver) -> None:
    correlation_id, events = client.add_publication()
    (ready,) = decode(events, cp.Event.ON_PUBLICATION_READY)
    assert ready.correlation_id == ready.registration_id == correlation_id
    assert ready.stream_id == 10
    assert ready.channel_status_indicator_id == -1
    path = Path(ready.log_file_name)
    assert path.is_absolute() and path.parent == driver.aeron_dir.resolve() / "publications"
    assert path.name == f"ipc-{ready.session_id & 0xFFFFFFFF:x}-a-{correlation_id:x}.logbuffer"
    assert path.stat().st_size == 3 * TERM_LENGTH + 4096
    with LogBuffers(path) as log:
        meta = log.meta_data_buffer
        assert lbd.correlation_id(meta) == correlation_id
        assert lbd.mtu_length(meta) == 1408
        assert lbd.term_length(meta) == TERM_LENGTH
        assert lbd.end_of_stream_position(meta) == 2**63 - 1
        assert not lbd.is_connected(meta)
    labels = {driver.counters.get_counter_label(i) for i in range(FIRST_FREE_ID, FIRST_FREE_ID + 4)}
    assert f"pub-lmt: {correlation_id} {ready.session_id} 10 aeron:ipc?term-length={TERM_LENGTH}" in labels
    assert (
        f"pub-pos (sample): {correlation_id} {ready.session_id} 10 aeron:ipc?term-length={TERM_LENGTH}"
        in labels
    )


def test_shared_publication_is_reused_and_exclusive_is_not(client: Client) -> None:
    _, first = client.add_publication()
    _, second = client.add_publication()
    _, exclusive = client.add_publication(exclusive=True)
    a, b = decode(first, cp.Event.ON_PUBLICATION_READY)[0], decode(second, cp.Event.ON_PUBLICATION_READY)[0]
    (c,) = decode(exclusive, cp.Event.ON_EXCLUSIVE_PUBLICATION_READY)
    assert a.registration_id == b.registration_id and a.session_id == b.session_id
    assert b.correlation_id != b.registration_id
    assert c.session_id != a.session_id and c.log_file_name != a.log_file_name


def test_subscription_then_publication_links_and_connects(client: Client, driver: MediaDriver) -> None:
    sub_id, events = client.add_subscription()
    assert decode(events, cp.Event.ON_SUBSCRIPTION_READY) == [cp.SubscriptionReady(sub_id, -1)]
    pub_id, events = client.add_publication()
    assert [t for t, _ in events] == [cp.Event.ON_PUBLICATION_READY, cp.Event.ON_AVAILABLE_IMAGE]
    ready = decode(events, cp.Event.ON_PUBLICATION_READY)[0]
    (image,) = decode(events, cp.Event.ON_AVAILABLE_IMAGE)
    assert image.correlation_id == pub_id
    assert image.subscription_registration_id == sub_id
    assert image.log_file_name == ready.log_file_name
    assert image.source_identity == f"aeron:ipc?term-length={TERM_LENGTH}"
    assert driver.counters.get_counter_label(image.subscriber_position_id) == (
        f"sub-pos: {sub_id} {ready.session_id} 10 aeron:ipc @0"
    )
    # Subscribers present: the limit is the slowest subscriber plus a term.
    assert driver.counters.get_counter_value(ready.publication_limit_counter_id) == TERM_LENGTH
    with LogBuffers(ready.log_file_name) as log:
        assert lbd.is_connected(log.meta_data_buffer)


def test_publisher_limit_is_set_before_the_client_hears_ready(client: Client, driver: MediaDriver) -> None:
    # A publisher (BasicPublisher) offers as soon as it hears "ready": the limit must be up by then, not one duty
    # cycle later, or its first offer is back-pressured.
    client.add_subscription()
    assert client.ring.write(
        cp.Command.ADD_PUBLICATION,
        cp.encode_publication(client.client_id, client.ring.next_correlation_id(), 10, "aeron:ipc"),
    )
    received: list[tuple[int, bytes]] = []

    def answered() -> bool:
        # The default IPC log (3 x 64 MiB) is made off the duty cycle: the answer comes when it is ready.
        driver.conductor.do_work()
        while client.events.receive(lambda t, b: received.append((t, bytes(b)))):
            pass
        return bool(decode(received, cp.Event.ON_PUBLICATION_READY))

    wait_for(answered, 10, "ON_PUBLICATION_READY")
    ready = decode(received, cp.Event.ON_PUBLICATION_READY)[0]
    assert driver.counters.get_counter_value(ready.publication_limit_counter_id) > 0


def test_publication_without_subscribers_has_no_room(client: Client, driver: MediaDriver) -> None:
    _, events = client.add_publication()
    ready = decode(events, cp.Event.ON_PUBLICATION_READY)[0]
    assert driver.counters.get_counter_value(ready.publication_limit_counter_id) == 0


def test_limit_follows_the_slowest_subscriber_and_cleans_behind_it(
    client: Client, driver: MediaDriver
) -> None:
    client.add_subscription()
    _, _events = client.add_subscription()
    client_events = client.add_publication()[1]
    images = decode(client_events, cp.Event.ON_AVAILABLE_IMAGE)
    ready = decode(client_events, cp.Event.ON_PUBLICATION_READY)[0]
    assert len(images) == 2
    fast, slow = images
    counters = driver.counters
    with LogBuffers(ready.log_file_name) as log:
        log.term_buffers[0].put_bytes(0, b"\xff" * 4096)  # stand-in for consumed frames
        counters.set_counter_value(fast.subscriber_position_id, 40_000)
        counters.set_counter_value(slow.subscriber_position_id, 16_384)
        client.run()
        assert counters.get_counter_value(ready.publication_limit_counter_id) == 16_384 + TERM_LENGTH
        assert log.term_buffers[0].get_bytes(0, 4096) == bytes(4096)  # cleaned up to the slowest reader


def test_cleaning_catches_up_before_the_limit_moves_however_far_the_reader_got(
    client: Client, driver: MediaDriver
) -> None:
    """A conductor that ran seldom (an embedded driver sharing the GIL with a busy client) finds the reader
    terms further on: everything it read is zeroed before the limit lets the publisher reuse those terms,
    or a reader would take a frame left from three terms before as new."""
    client.add_subscription()
    client_events = client.add_publication()[1]
    (image,) = decode(client_events, cp.Event.ON_AVAILABLE_IMAGE)
    ready = decode(client_events, cp.Event.ON_PUBLICATION_READY)[0]
    counters = driver.counters
    with LogBuffers(ready.log_file_name) as log:
        for term in log.term_buffers:
            term.put_bytes(0, b"\xff" * TERM_LENGTH)  # stand-in for frames written and read
        read = 2 * TERM_LENGTH + TERM_LENGTH // 2
        counters.set_counter_value(image.subscriber_position_id, read)
        client.run()
        assert counters.get_counter_value(ready.publication_limit_counter_id) == read + TERM_LENGTH
        assert log.term_buffers[0].get_bytes(0, TERM_LENGTH) == bytes(TERM_LENGTH)
        assert log.term_buffers[1].get_bytes(0, TERM_LENGTH) == bytes(TERM_LENGTH)
        assert log.term_buffers[2].get_bytes(0, TERM_LENGTH // 2) == bytes(TERM_LENGTH // 2)
        assert log.term_buffers[2].get_bytes(TERM_LENGTH // 2, 32) == b"\xff" * 32  # not past the reader


def test_limit_moves_count_as_work_only_when_they_come_quickly(
    client: Client, driver: MediaDriver, clock
) -> None:
    """A move soon after the previous one keeps the conductor polling; one after a quiet spell does not reset the
    idle backoff (the next needs window/8 more bytes consumed). Limit and cleaning are the same either way."""
    image, ready = one_subscriber_publication(client)
    counters, conductor = driver.counters, driver.conductor
    gain = TERM_LENGTH // 8
    with LogBuffers(ready.log_file_name) as log:
        log.term_buffers[0].put_bytes(0, b"\xff" * (3 * gain))
        clock.advance_ms(10)
        counters.set_counter_value(image.subscriber_position_id, gain + 32)
        assert conductor.do_work() == 0  # moved after a quiet spell: routine
        assert counters.get_counter_value(ready.publication_limit_counter_id) == gain + 32 + TERM_LENGTH
        assert log.term_buffers[0].get_bytes(0, gain + 32) == bytes(gain + 32)
        assert conductor.do_work() == 0  # within the trip gain: no move
        clock.nanos += 100_000
        counters.set_counter_value(image.subscriber_position_id, 2 * gain + 64)
        assert conductor.do_work() == 1  # moved again 100 us later: a fast reader, keep polling
        assert counters.get_counter_value(ready.publication_limit_counter_id) == 2 * gain + 64 + TERM_LENGTH
        assert log.term_buffers[0].get_bytes(0, 2 * gain + 64) == bytes(2 * gain + 64)
        assert log.term_buffers[0].get_bytes(2 * gain + 64, 1) == b"\xff"  # never ahead of the reader


def test_positions_that_trickle_are_swept_once_an_interval_and_a_stream_at_once(
    client: Client, driver: MediaDriver, clock
) -> None:
    """The conductor's sweep (publisher limits, image rebuilds, status messages) runs in every cycle while positions
    move by a kilobyte or more, but only once per aeron.conductor.sweep.interval while they trickle: a request and
    its answer do not wait for a Python sweep per message."""
    interval_ns = driver.ctx.conductor_sweep_interval_ns
    assert interval_ns == 1_000_000  # the default
    image, ready = one_subscriber_publication(client)
    counters, conductor = driver.counters, driver.conductor
    gain = TERM_LENGTH // 8
    start = counters.get_counter_value(ready.publication_limit_counter_id)
    assert start == TERM_LENGTH
    clock.nanos += interval_ns
    conductor.do_work()
    counters.set_counter_value(image.subscriber_position_id, gain - 256)  # a stream's worth, short of a limit trip
    conductor.do_work()
    assert counters.get_counter_value(ready.publication_limit_counter_id) == start  # not yet a trip of the limit
    counters.set_counter_value(image.subscriber_position_id, gain + 256)  # 512 bytes: a trickle, left for later
    conductor.do_work()
    clock.nanos += interval_ns - 1
    conductor.do_work()
    assert counters.get_counter_value(ready.publication_limit_counter_id) == start
    clock.nanos += 1
    conductor.do_work()
    assert counters.get_counter_value(ready.publication_limit_counter_id) == gain + 256 + TERM_LENGTH
    counters.set_counter_value(image.subscriber_position_id, gain + 768)
    conductor.do_work()
    counters.set_counter_value(image.subscriber_position_id, 2 * gain + 768)
    conductor.do_work()  # 512 + 8 KiB since the last sweep: a stream again
    assert counters.get_counter_value(ready.publication_limit_counter_id) == 2 * gain + 768 + TERM_LENGTH


def test_limit_of_a_publication_whose_subscribers_come_and_go(client: Client, driver: MediaDriver) -> None:
    """Only publications with subscribers are polled every duty cycle: the last one leaving holds the limit at
    what it read, and a new one opens the window again."""
    sub_id, _ = client.add_subscription()
    events = client.add_publication()[1]
    (image,) = decode(events, cp.Event.ON_AVAILABLE_IMAGE)
    ready = decode(events, cp.Event.ON_PUBLICATION_READY)[0]
    counters = driver.counters
    counters.set_counter_value(image.subscriber_position_id, 16_384)
    client.run()
    assert counters.get_counter_value(ready.publication_limit_counter_id) == 16_384 + TERM_LENGTH
    client.command(cp.Command.REMOVE_SUBSCRIPTION, lambda c: cp.encode_remove(client.client_id, c, sub_id))
    assert counters.get_counter_value(ready.publication_limit_counter_id) == 16_384
    for _ in range(3):
        driver.conductor.do_work()
    assert counters.get_counter_value(ready.publication_limit_counter_id) == 16_384
    _, events = client.add_subscription()
    (late,) = decode(events, cp.Event.ON_AVAILABLE_IMAGE)
    assert counters.get_counter_value(late.subscriber_position_id) == 16_384
    counters.set_counter_value(late.subscriber_position_id, 32_768)
    client.run()
    assert counters.get_counter_value(ready.publication_limit_counter_id) == 32_768 + TERM_LENGTH


def test_late_subscriber_joins_at_the_furthest_consumer_position(client: Client, driver: MediaDriver) -> None:
    client.add_subscription()
    events = client.add_publication()[1]
    (first,) = decode(events, cp.Event.ON_AVAILABLE_IMAGE)
    driver.counters.set_counter_value(first.subscriber_position_id, 8_192)
    client.run()
    _, events = client.add_subscription()
    (late,) = decode(events, cp.Event.ON_AVAILABLE_IMAGE)
    assert driver.counters.get_counter_value(late.subscriber_position_id) == 8_192
    assert driver.counters.get_counter_label(late.subscriber_position_id).endswith("@8192")


def test_removed_publication_ends_the_stream_then_lingers_and_is_deleted(
    client: Client, driver, clock
) -> None:
    sub_id, _ = client.add_subscription()
    pub_id, events = client.add_publication()
    ready = decode(events, cp.Event.ON_PUBLICATION_READY)[0]
    _, events = client.command(
        cp.Command.REMOVE_PUBLICATION, lambda c: cp.encode_remove(client.client_id, c, pub_id)
    )
    assert [t for t, _ in events] == [cp.Event.ON_OPERATION_SUCCESS]
    with LogBuffers(ready.log_file_name) as log:
        assert lbd.end_of_stream_position(log.meta_data_buffer) == 0
    clock.advance_ms(1000)
    events = client.run()
    assert decode(events, cp.Event.ON_UNAVAILABLE_IMAGE) == [cp.ImageMessage(pub_id, sub_id, 10, "aeron:ipc")]
    assert Path(ready.log_file_name).exists()  # lingering
    clock.advance_ms(3000)
    client.run()
    assert not Path(ready.log_file_name).exists()
    assert driver.counters.get_counter_state(ready.publication_limit_counter_id) != RECORD_ALLOCATED


def test_negative_linger_as_the_1_15_1_archive_sends_frees_the_publication_once_drained(
    client: Client, driver, clock
) -> None:
    # aeron.archive.replay.linger.timeout=3s reaches the driver as an int-wrapped linger; 1.15.1 takes it and
    # the drained publication goes without lingering.
    pub_id, events = client.add_publication(f"aeron:ipc?term-length={TERM_LENGTH}|linger=-1294967296")
    ready = decode(events, cp.Event.ON_PUBLICATION_READY)[0]
    _, events = client.command(
        cp.Command.REMOVE_PUBLICATION, lambda c: cp.encode_remove(client.client_id, c, pub_id)
    )
    assert [t for t, _ in events] == [cp.Event.ON_OPERATION_SUCCESS]
    clock.advance_ms(1000)
    client.run()  # drained: lingering starts
    assert Path(ready.log_file_name).exists()
    clock.advance_ms(1000)
    client.run()  # the next timer tick ends it; the 2 s default linger would still hold the log
    assert not Path(ready.log_file_name).exists()


def _keepalive(client: Client) -> None:
    assert client.ring.write(cp.Command.CLIENT_KEEPALIVE, cp.encode_correlated(client.client_id, 0))


@pytest.mark.parametrize("goes", ["closes", "times out"])
def test_a_saturated_linger_holds_the_log_only_while_its_client_lives(
    aeron_dir: Path, clock, goes: str
) -> None:
    """linger=<more than a long holds> is taken and saturated, as 1.15.1 does; once the client that removed the
    publication is gone, the log lingers no longer than aeron.publication.linger.max."""
    ctx = DriverContext(aeron_dir=str(aeron_dir), publication_linger_max_ns=10_000_000_000)
    driver = MediaDriver(ctx, clock.epoch_clock_ms, clock.nano_clock)
    driver.conductor.on_start()
    try:
        client = Client(driver)
        channel = f"aeron:ipc?term-length={TERM_LENGTH}|linger=99999999999999999999s"
        pub_id, events = client.add_publication(channel)
        ready = decode(events, cp.Event.ON_PUBLICATION_READY)[0]
        client.command(cp.Command.REMOVE_PUBLICATION, lambda c: cp.encode_remove(client.client_id, c, pub_id))
        log = Path(ready.log_file_name)
        for _ in range(30):  # 30 s: the client lives, so its (saturated) linger holds
            clock.advance_ms(1000)
            _keepalive(client)
            client.run()
        assert log.exists()
        if goes == "closes":
            client.command(cp.Command.CLIENT_CLOSE, lambda c: cp.encode_correlated(client.client_id, c))
        gone_at = clock.nanos
        while log.exists():
            assert clock.nanos - gone_at <= 5_000_000_000 + 10_000_000_000 + 2_000_000_000, "log still pinned"
            clock.advance_ms(500)
            client.run()
        assert driver.counters.get_counter_state(ready.publication_limit_counter_id) != RECORD_ALLOCATED
    finally:
        driver.conductor.on_close()
        driver.close()


def test_unknown_publication_and_subscription_removals_are_refused(client: Client) -> None:
    client.add_publication()
    _, events = client.command(
        cp.Command.REMOVE_PUBLICATION, lambda c: cp.encode_remove(client.client_id, c, 999)
    )
    (error,) = decode(events, cp.Event.ON_ERROR)
    assert error.error_code == cp.ErrorCode.UNKNOWN_PUBLICATION
    _, events = client.command(
        cp.Command.REMOVE_SUBSCRIPTION, lambda c: cp.encode_remove(client.client_id, c, 999)
    )
    (error,) = decode(events, cp.Event.ON_ERROR)
    assert error.error_code == cp.ErrorCode.UNKNOWN_SUBSCRIPTION


@pytest.mark.parametrize(
    ("channel", "expected"),
    [
        ("aeron:ipc?term-length=1000", "term-length"),
        ("aeron:ipc?mtu=33", "mtu"),
        ("aeron:ipc?term-length=65536|mtu=16384", "mtu"),
        ("aeron:ipc?mtu", "parameter 'mtu' has no '='"),
    ],
)
def test_bad_channels_are_refused_naming_the_problem(client: Client, channel: str, expected: str) -> None:
    _, events = client.add_publication(channel=channel)
    (error,) = decode(events, cp.Event.ON_ERROR)
    assert expected in error.message


def test_timed_out_client_releases_publications_and_subscriptions(client: Client, driver, clock) -> None:
    client.add_subscription()
    _, events = client.add_publication()
    ready = decode(events, cp.Event.ON_PUBLICATION_READY)[0]
    clock.advance_ms(6000)  # past the 5 s liveness timeout without keepalives
    client.run()
    clock.advance_ms(1000)
    client.run()
    clock.advance_ms(6000)
    client.run()
    assert not Path(ready.log_file_name).exists()
    allocated = [
        i for i in range(FIRST_FREE_ID, FIRST_FREE_ID + 7) if driver.counters.get_counter_state(i) == RECORD_ALLOCATED
    ]
    assert allocated == []
