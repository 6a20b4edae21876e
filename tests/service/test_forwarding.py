"""The replay's batched forwarding (docs/service.md section 5) between real IPC streams: every message arrives
once and in order through back pressure, fragmented ones whole, the counts are what the target took, and a
target without a subscriber drops rather than counts."""

from __future__ import annotations

import time

import pytest

from driver.client import Aeron, FragmentAssembler
from driver.service.forwarding import Forwarder
from tests.support import wait_for
from tests.support.service_env import API, Publisher, replay_payloads, wait_for_state

SOURCE = "aeron:ipc?term-length=64k"
SOURCE_MAX_PAYLOAD = 1376
TARGET = "aeron:ipc?term-length=64k|mtu=4096"


@pytest.fixture
def aeron(embedded_driver) -> Aeron:
    driver = embedded_driver()
    with Aeron.connect(aeron_dir=driver.aeron_dir) as client:
        yield client


def test_every_message_once_in_order_through_back_pressure_and_fragmentation(aeron: Aeron) -> None:
    source_sub = aeron.add_subscription(SOURCE, 11)
    source = aeron.add_exclusive_publication(SOURCE, 11)
    target_sub = aeron.add_subscription(TARGET, 12)
    target = aeron.add_exclusive_publication(TARGET, 12)
    wait_for(lambda: source.is_connected and target.is_connected and source_sub.images, what="connections")
    image = source_sub.images[0]
    # Small messages and some over either MTU's payload (1376 on the source, 4064 on the target), so some are
    # fragmented on one side only; 600 KiB through 64 KiB terms and a 32 KiB window.
    messages = [
        bytes([i & 0xFF]) * (5000 if i % 50 == 0 else 3000 if i % 31 == 0 else i % 200) for i in range(6000)
    ]
    forwarder = Forwarder(target, drop_unconnected=False, fragment_limit=100)
    received: list[bytes] = []
    assembler = FragmentAssembler(lambda buf, off, length, _h: received.append(buf.get_bytes(off, length)))
    offered = 0
    held = 0
    turns = 0
    # A bound on time, not turns: how many turns it takes depends on how often the embedded driver's thread
    # gets the GIL to move the limits, which a faster client changes.
    deadline = time.monotonic() + 60
    while len(received) < len(messages):
        while offered < len(messages) and source.offer(messages[offered]) > 0:
            offered += 1
        forwarder.forward(image)
        held += forwarder.pending
        turns += 1
        if turns % 8 == 0:  # the target's reader lags: back pressure on the forwarder
            target_sub.poll(assembler, 10_000)
        assert time.monotonic() < deadline, (turns, offered, len(received))
    assert held > 0  # the forwarder did hold messages over turns
    assert received == messages
    assert forwarder.messages == len(messages)
    assert forwarder.bytes == sum(frame_bytes_of(len(m), SOURCE_MAX_PAYLOAD) for m in messages)
    assert not forwarder.pending


def frame_bytes_of(payload: int, max_payload: int = 1376) -> int:
    """The frames a message of ``payload`` bytes takes (fragments of ``max_payload``), headers and alignment."""
    whole, rest = divmod(payload, max_payload)
    sizes = [max_payload] * whole + ([rest] if rest or not whole else [])
    return sum((n + 32 + 31) & -32 for n in sizes)


def test_a_target_without_subscriber_drops_and_does_not_count(aeron: Aeron) -> None:
    source_sub = aeron.add_subscription(SOURCE, 21)
    source = aeron.add_exclusive_publication(SOURCE, 21)
    target = aeron.add_exclusive_publication(TARGET, 22)
    wait_for(lambda: source.is_connected and source_sub.images, what="connection")
    for i in range(50):
        wait_for(lambda i=i: source.offer(bytes([i]) * 40) > 0, what="offer")
    forwarder = Forwarder(target, drop_unconnected=True)
    wait_for(
        lambda: (
            forwarder.forward(source_sub.images[0]) == 0 and source_sub.images[0].position == source.position
        )
    )
    assert forwarder.messages == forwarder.bytes == 0
    assert not forwarder.pending


def test_a_fast_replay_through_the_service_is_exact_and_in_order(service_env) -> None:
    """40,000 messages recorded without pause and replayed at rate 1000 (as fast as it goes), to a reader
    polling 256 fragments at a time from a thread: every message arrives once, in order, and the status counts
    exactly them."""
    env = service_env
    count = 40_000
    env.client.post(
        f"{API}/record",
        json={"streams": [{"channel": "aeron:ipc", "stream_id": 1001}], "max_messages": count},
    ).raise_for_status()
    publisher = Publisher(env, "aeron:ipc", 1001, 0.0, count=count)
    wait_for(lambda: publisher.publication.is_connected, 10, "the recording to subscribe")
    publisher.start()
    dataset_id = wait_for_state(env, "record")["dataset_id"]
    publisher.stop()
    received, status = replay_payloads(
        env, {"dataset_id": dataset_id, "rate": 1000, "stream_id": 2001}, "aeron:ipc", 2001
    )
    assert [p for _, p in received] == publisher.sent
    assert status["messages"] == count and status["bytes"] == sum(
        frame_bytes_of(len(m)) for m in publisher.sent
    )
    # The same measure as the recording's: its frames, headers and alignment included, padding not.
    assert status["bytes"] == env.client.get(f"{API}/datasets/{dataset_id}").json()["bytes"]
