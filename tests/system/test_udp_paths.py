"""UDP end to end between two of our drivers (in-process, real loopback sockets): unicast, loss recovery
with the seeded loss generator, multicast on loopback, MDC (manual and dynamic) and MDS."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from driver.client import Aeron
from driver.status.system_counters import SystemCounterDescriptor as SC
from tests.support import EmbeddedDriver, free_port, new_aeron_dir, wait_for


@pytest.fixture
def two_drivers(tmp_path: Path, request):
    settings = getattr(request, "param", {})
    a = EmbeddedDriver(new_aeron_dir(tmp_path, "aeron-udp-a"), dir_delete_on_start=True)
    b = EmbeddedDriver(new_aeron_dir(tmp_path, "aeron-udp-b"), dir_delete_on_start=True, **settings)
    yield a, b
    a.close()
    b.close()


def stream(
    publication, subscriptions, count: int, size: int = 32, timeout_s: float = 30.0
) -> list[list[bytes]]:
    """Offer ``count`` numbered messages and collect them on every subscription (exact content)."""
    received: list[list[bytes]] = [[] for _ in subscriptions]
    handlers = [lambda b, o, n, h, r=r: r.append(b.get_bytes(o, n)) for r in received]
    deadline = time.monotonic() + timeout_s
    sent = 0
    while any(len(r) < count for r in received):
        assert time.monotonic() < deadline, f"sent {sent}, received {[len(r) for r in received]}"
        if sent < count and publication.offer(sent.to_bytes(4, "little") * (size // 4)) > 0:
            sent += 1
        for subscription, handler in zip(subscriptions, handlers, strict=True):
            subscription.poll(handler, 100)
    return received


def expected(count: int, size: int = 32) -> list[bytes]:
    return [i.to_bytes(4, "little") * (size // 4) for i in range(count)]


def test_unicast_stream_is_complete_and_ordered(two_drivers) -> None:
    a, b = two_drivers
    channel = f"aeron:udp?endpoint=localhost:{free_port()}"
    with (
        Aeron.connect(aeron_dir=a.aeron_dir) as pub_client,
        Aeron.connect(aeron_dir=b.aeron_dir) as sub_client,
    ):
        subscription = sub_client.add_subscription(channel, 10)
        publication = pub_client.add_publication(channel, 10)
        wait_for(lambda: publication.is_connected and subscription.images)
        assert subscription.images[0].source_identity.startswith("127.0.0.1:")
        (received,) = stream(publication, [subscription], 20_000)
        assert received == expected(20_000)
    counters_a, counters_b = a.driver.counters, b.driver.counters
    assert counters_a.get_counter_value(SC.BYTES_SENT) >= 20_000 * 64
    assert counters_b.get_counter_value(SC.BYTES_RECEIVED) >= 20_000 * 64
    assert counters_a.get_counter_value(SC.STATUS_MESSAGES_RECEIVED) > 0
    assert counters_b.get_counter_value(SC.STATUS_MESSAGES_SENT) > 0


@pytest.mark.parametrize(
    "two_drivers", [{"receive_data_loss_rate": 0.05, "receive_data_loss_seed": 7}], indirect=True
)
def test_loss_is_recovered_by_naks_and_reported(two_drivers) -> None:
    a, b = two_drivers
    channel = f"aeron:udp?endpoint=localhost:{free_port()}"
    with (
        Aeron.connect(aeron_dir=a.aeron_dir) as pub_client,
        Aeron.connect(aeron_dir=b.aeron_dir) as sub_client,
    ):
        subscription = sub_client.add_subscription(channel, 10)
        publication = pub_client.add_publication(channel, 10)
        wait_for(lambda: publication.is_connected)
        (received,) = stream(publication, [subscription], 20_000)
        assert received == expected(20_000)
    assert b.driver.counters.get_counter_value(SC.NAK_MESSAGES_SENT) > 0
    assert a.driver.counters.get_counter_value(SC.NAK_MESSAGES_RECEIVED) > 0
    assert a.driver.counters.get_counter_value(SC.RETRANSMITS_SENT) > 0
    from driver.reports.loss_report import iter_loss_report

    (entry,) = list(iter_loss_report(b.driver.loss_report_file.buffer))
    assert entry.channel == channel and entry.stream_id == 10
    assert entry.observation_count > 0 and entry.total_bytes_lost > 0
    assert entry.source.startswith("/127.0.0.1:")


def test_multicast_on_loopback(two_drivers) -> None:
    a, b = two_drivers
    channel = f"aeron:udp?endpoint=224.0.1.1:{free_port()}|interface=127.0.0.1"  # loopback multicast
    with (
        Aeron.connect(aeron_dir=a.aeron_dir) as pub_client,
        Aeron.connect(aeron_dir=b.aeron_dir) as sub_client,
    ):
        first = sub_client.add_subscription(channel, 10)
        second = pub_client.add_subscription(channel, 10)  # a receiver on the publishing driver too
        publication = pub_client.add_publication(channel, 10)
        wait_for(lambda: publication.is_connected and first.images and second.images)
        received = stream(publication, [first, second], 5_000)
        assert received == [expected(5_000)] * 2


@pytest.mark.parametrize("mode", ["manual", "dynamic"])
def test_mdc_reaches_subscribers_on_both_drivers(two_drivers, mode: str) -> None:
    a, b = two_drivers
    control, first_port, second_port = free_port(), free_port(), free_port()
    channel = f"aeron:udp?control=localhost:{control}" + ("|control-mode=manual" if mode == "manual" else "")
    with (
        Aeron.connect(aeron_dir=a.aeron_dir) as pub_client,
        Aeron.connect(aeron_dir=b.aeron_dir) as sub_client,
    ):
        publication = pub_client.add_publication(channel, 10)
        if mode == "manual":
            publication.add_destination(f"aeron:udp?endpoint=localhost:{first_port}")
            publication.add_destination(f"aeron:udp?endpoint=localhost:{second_port}")
        first = pub_client.add_subscription(
            f"aeron:udp?endpoint=localhost:{first_port}|control=localhost:{control}", 10
        )
        second = sub_client.add_subscription(
            f"aeron:udp?endpoint=localhost:{second_port}|control=localhost:{control}", 10
        )
        wait_for(lambda: first.images and second.images)
        received = stream(publication, [first, second], 5_000)
        assert received == [expected(5_000)] * 2


def test_mdc_destinations_need_manual_control_mode(two_drivers) -> None:
    a, _ = two_drivers
    from driver.client import RegistrationError

    with Aeron.connect(aeron_dir=a.aeron_dir) as client:
        publication = client.add_publication(f"aeron:udp?endpoint=localhost:{free_port()}", 10)
        with pytest.raises(RegistrationError, match="manual"):
            publication.add_destination(f"aeron:udp?endpoint=localhost:{free_port()}")


def test_mds_subscription_receives_through_its_destination(two_drivers) -> None:
    a, b = two_drivers
    port = free_port()
    with (
        Aeron.connect(aeron_dir=a.aeron_dir) as pub_client,
        Aeron.connect(aeron_dir=b.aeron_dir) as sub_client,
    ):
        subscription = sub_client.add_subscription("aeron:udp?control-mode=manual", 10)
        subscription.add_destination(f"aeron:udp?endpoint=localhost:{port}")
        publication = pub_client.add_publication(f"aeron:udp?endpoint=localhost:{port}", 10)
        wait_for(lambda: publication.is_connected and subscription.images)
        (received,) = stream(publication, [subscription], 5_000)
        assert received == expected(5_000)


def test_closed_publication_ends_the_remote_stream(two_drivers) -> None:
    a, b = two_drivers
    channel = f"aeron:udp?endpoint=localhost:{free_port()}"
    unavailable = []
    with (
        Aeron.connect(aeron_dir=a.aeron_dir) as pub_client,
        Aeron.connect(aeron_dir=b.aeron_dir) as sub_client,
    ):
        subscription = sub_client.add_subscription(channel, 10, on_unavailable_image=unavailable.append)
        publication = pub_client.add_publication(channel, 10)
        wait_for(lambda: publication.is_connected and subscription.images)
        stream(publication, [subscription], 100)
        image = subscription.images[0]
        publication.close()
        wait_for(lambda: subscription.poll(lambda *_: None, 10) >= 0 and image.is_end_of_stream, 10)
        wait_for(lambda: unavailable == [image], 15)


@pytest.mark.parametrize("strategy", ["min", "max"])
def test_mdc_flow_control_strategy_decides_who_sets_the_pace(tmp_path: Path, strategy: str) -> None:
    """aeron.multicast.flow.control.strategy on an MDC publication with one reading and one stalled receiver:
    with min the stalled one holds the publisher back; with max the reader's pace wins and the publisher
    goes far past the stalled receiver's window."""
    driver = EmbeddedDriver(
        new_aeron_dir(tmp_path, "aeron-fc"), dir_delete_on_start=True, multicast_flow_control=strategy
    )
    try:
        control, reading_port, stalled_port = free_port(), free_port(), free_port()
        with Aeron.connect(aeron_dir=driver.aeron_dir) as client:
            reading = client.add_subscription(
                f"aeron:udp?endpoint=localhost:{reading_port}|control=localhost:{control}", 10
            )
            stalled = client.add_subscription(
                f"aeron:udp?endpoint=localhost:{stalled_port}|control=localhost:{control}", 10
            )
            publication = client.add_publication(f"aeron:udp?control=localhost:{control}|term-length=64k", 10)
            wait_for(lambda: reading.images and stalled.images, 10)
            target = 512 * 1024  # 16x the 32 KiB windows
            deadline = time.monotonic() + (3 if strategy == "min" else 20)  # max: stop as soon as it is there
            while publication.position < target and time.monotonic() < deadline:
                publication.offer(bytes(992))
                reading.poll(lambda *_: None, 100)  # the stalled subscription is never polled
            if strategy == "min":
                assert publication.position < 128 * 1024, publication.position
            else:
                assert publication.position >= target
    finally:
        driver.close()


def test_an_mds_image_counts_the_destinations_that_feed_it(two_drivers) -> None:
    # One image fed through two destinations (as a replay merge's: replay and live), its log's active transport
    # count as the client reads it: 1 with one source, 2 once the second sends.
    a, b = two_drivers
    first_port, second_port = free_port(), free_port()
    same = "session-id=4242|init-term-id=7|term-id=7|term-offset=0|term-length=65536"
    with (
        Aeron.connect(aeron_dir=a.aeron_dir) as pub_client,
        Aeron.connect(aeron_dir=b.aeron_dir) as sub_client,
    ):
        subscription = sub_client.add_subscription("aeron:udp?control-mode=manual|session-id=4242", 10)
        subscription.add_destination(f"aeron:udp?endpoint=localhost:{first_port}")
        subscription.add_destination(f"aeron:udp?endpoint=localhost:{second_port}")
        first = pub_client.add_exclusive_publication(f"aeron:udp?endpoint=localhost:{first_port}|{same}", 10)
        wait_for(lambda: first.is_connected and subscription.images)
        (received,) = stream(first, [subscription], 100)
        assert received == expected(100)
        image = subscription.image_by_session_id(4242)
        assert image is not None and image.active_transport_count == 1
        second = sub_client.add_exclusive_publication(
            f"aeron:udp?endpoint=localhost:{second_port}|{same}", 10
        )  # the same stream from the subscriber's own driver
        wait_for(lambda: second.is_connected)
        wait_for(lambda: second.offer(bytes(32)) > 0 and image.active_transport_count == 2)
        assert len(subscription.images) == 1
