"""Spy subscriptions (``aeron-spy:<udp channel>``): a local subscriber reads a network publication's own log,
as 1.15.1 does -- linked to publications of the same canonical channel and stream, before or after they
exist; joined at the sender position; named "aeron:ipc" as source; holding the publisher back like a
receiver; told the image is gone once the drained publication ends. Real UDP on loopback, embedded driver."""

from __future__ import annotations

import time

from driver.client import Aeron, FragmentAssembler
from tests.support import free_port, wait_for


def collect(subscription, count: int, out: list[bytes]) -> None:
    handler = FragmentAssembler(
        lambda buffer, offset, length, header: out.append(buffer.get_bytes(offset, length))
    )
    wait_for(lambda: subscription.poll(handler, 100) >= 0 and len(out) >= count, what=f"{count} messages")


def publish(publication, messages: list[bytes]) -> None:
    for data in messages:
        deadline = time.monotonic() + 10
        while publication.offer(data) < 0:
            assert time.monotonic() < deadline, "offer kept failing"
            time.sleep(0.0002)


def test_spy_sees_what_the_publication_sends(embedded_driver) -> None:
    driver = embedded_driver(publication_linger_timeout_ns=200_000_000, timer_interval_ns=50_000_000)
    channel = f"aeron:udp?endpoint=localhost:{free_port()}"
    unavailable = []
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        early_spy = aeron.add_subscription(
            "aeron-spy:" + channel, 10, on_unavailable_image=unavailable.append
        )
        receiver = aeron.add_subscription(channel, 10)
        publication = aeron.add_publication(channel, 10)
        wait_for(lambda: publication.is_connected and receiver.images and early_spy.images, what="images")
        (image,) = early_spy.images
        assert image.source_identity == "aeron:ipc"
        assert image.session_id == publication.session_id
        messages = [bytes([i % 256]) * (i % 2000) for i in range(3000)]
        spied: list[bytes] = []
        received: list[bytes] = []
        publish(publication, messages[:1000])
        collect(early_spy, 1000, spied)
        collect(receiver, 1000, received)  # so the sender has sent them all
        late_spy = aeron.add_subscription("aeron-spy:" + channel, 10)  # joins where the sender is
        wait_for(lambda: late_spy.images, what="late spy image")
        assert late_spy.images[0].join_position == publication.position
        publish(publication, messages[1000:])
        collect(early_spy, 3000, spied)
        collect(receiver, 3000, received)
        late: list[bytes] = []
        collect(late_spy, 2000, late)
        assert spied == received == messages
        assert late == messages[1000:]
        other_stream = aeron.add_subscription("aeron-spy:" + channel, 11)
        publication.close()
        wait_for(lambda: early_spy.poll(lambda *_: None, 10) >= 0 and unavailable, what="spy image gone")
        assert unavailable == [image]
        assert not other_stream.images


def test_spies_simulate_a_connection_when_asked(embedded_driver) -> None:
    """aeron.spies.simulate.connection: with no receiver at all, a spy alone connects the publication and sets
    its pace; without the setting the publication waits for a receiver."""
    driver = embedded_driver(spies_simulate_connection=True)
    channel = f"aeron:udp?endpoint=localhost:{free_port()}"  # nobody listens there
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        spy = aeron.add_subscription("aeron-spy:" + channel, 10)
        publication = aeron.add_publication(channel, 10)
        wait_for(lambda: publication.is_connected and spy.images, what="connected through the spy")
        messages = [i.to_bytes(4, "little") * 100 for i in range(20_000)]  # ~9 MB: many windows' worth
        spied: list[bytes] = []
        handler = FragmentAssembler(
            lambda buffer, offset, length, header: spied.append(buffer.get_bytes(offset, length))
        )
        for data in messages:
            deadline = time.monotonic() + 10
            while publication.offer(data) < 0:
                assert time.monotonic() < deadline, "offer kept failing"
                spy.poll(handler, 100)
        wait_for(lambda: spy.poll(handler, 100) >= 0 and len(spied) >= len(messages), what="every message")
        assert spied == messages


def test_without_simulation_a_spy_does_not_connect_a_publication(embedded_driver) -> None:
    driver = embedded_driver()
    channel = f"aeron:udp?endpoint=localhost:{free_port()}"
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        spy = aeron.add_subscription("aeron-spy:" + channel, 10)
        publication = aeron.add_publication(channel, 10)
        wait_for(lambda: spy.images, what="spy image")
        time.sleep(0.2)
        assert not publication.is_connected
        assert publication.offer(b"x") < 0
