"""Publications and subscriptions of the Python client over aeron:ipc, through our driver."""

from __future__ import annotations

import asyncio
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driver.client import (
    ADMIN_ACTION,
    BACK_PRESSURED,
    CLOSED,
    NOT_CONNECTED,
    Aeron,
    BufferClaim,
    FragmentAssembler,
)
from driver.concurrent.logbuffer.header import Header
from tests.support import ManualClock, wait_for

CHANNEL = "aeron:ipc?term-length=64k"
TERM_LENGTH = 64 * 1024


def offer(publication, data: bytes, timeout_s: float = 5.0) -> int:
    deadline = time.monotonic() + timeout_s
    while (result := publication.offer(data)) < 0:
        if time.monotonic() > deadline:
            raise AssertionError(f"offer still failing with {result}")
        time.sleep(0.0002)
    return result


def ticked(clock: ManualClock, step_ms: int = 100) -> bool:
    """One timer interval of manual time per poll; poll every 20 ms so that the driver's agents (parked at most
    1 ms while a client is connected) see each step. Always True."""
    clock.advance_ms(step_ms)
    return True


class Collector:
    def __init__(self) -> None:
        self.messages: list[tuple[bytes, int, int, int, int]] = []

    def __call__(self, buffer, offset: int, length: int, header: Header) -> None:
        self.messages.append(
            (
                buffer.get_bytes(offset, length),
                header.session_id,
                header.stream_id,
                header.position,
                header.flags,
            )
        )

    def drain(self, subscription, count: int, timeout_s: float = 5.0) -> None:
        handler = FragmentAssembler(self)
        wait_for(lambda: subscription.poll(handler, 100) >= 0 and len(self.messages) >= count, timeout_s)


def test_messages_arrive_in_order_with_their_header_fields(aeron: Aeron) -> None:
    subscription = aeron.add_subscription(CHANNEL, 1001)
    publication = aeron.add_publication(CHANNEL, 1001)
    wait_for(lambda: publication.is_connected and subscription.images, what="connection")
    positions = [offer(publication, f"message {i}".encode()) for i in range(100)]
    assert positions == sorted(positions) and positions[0] == 64  # 32-byte header + payload, aligned
    collector = Collector()
    collector.drain(subscription, 100)
    assert [m[0] for m in collector.messages] == [f"message {i}".encode() for i in range(100)]
    assert {m[1] for m in collector.messages} == {publication.session_id}
    assert {m[2] for m in collector.messages} == {1001}
    assert [m[3] for m in collector.messages] == positions
    assert subscription.images[0].position == positions[-1]


def test_unconnected_and_closed_publications_say_so(aeron: Aeron) -> None:
    publication = aeron.add_publication(CHANNEL, 1002)
    assert publication.offer(b"nobody listens") == NOT_CONNECTED
    publication.close()
    assert publication.offer(b"closed") == CLOSED


def test_fragmented_messages_up_to_the_maximum_reassemble(aeron: Aeron) -> None:
    subscription = aeron.add_subscription(CHANNEL, 1003)
    publication = aeron.add_publication(CHANNEL, 1003)
    wait_for(lambda: publication.is_connected, what="connection")
    assert publication.max_message_length == TERM_LENGTH // 8
    sizes = [0, 1, 1375, 1376, 1377, 4000, publication.max_message_length]
    payloads = [bytes((i * 7 + k) & 0xFF for k in range(size)) for i, size in enumerate(sizes)]
    collector = Collector()
    for payload in payloads:
        offer(publication, payload)
        collector.drain(subscription, len(collector.messages) + 1)
    assert [m[0] for m in collector.messages] == payloads
    with pytest.raises(ValueError, match="exceeds the maximum"):
        publication.offer(bytes(publication.max_message_length + 1))


@pytest.mark.parametrize("kind", ["shared", "exclusive"])
def test_try_claim_commit_and_abort(aeron: Aeron, kind: str) -> None:
    stream_id = 1004 if kind == "shared" else 1014
    subscription = aeron.add_subscription(CHANNEL, stream_id)
    add = aeron.add_exclusive_publication if kind == "exclusive" else aeron.add_publication
    publication = add(CHANNEL, stream_id)
    wait_for(lambda: publication.is_connected, what="connection")
    claim = BufferClaim()
    wait_for(lambda: publication.try_claim(5, claim) > 0, what="claim")
    claim.put_bytes(b"first")
    claim.commit()
    wait_for(lambda: publication.try_claim(7, claim) > 0, what="claim")
    claim.put_bytes(b"aborted")
    claim.abort()
    offer(publication, b"third")
    with pytest.raises(ValueError, match="exceeds the max payload length"):
        publication.try_claim(publication.max_payload_length + 1, claim)
    with pytest.raises(ValueError, match="negative"):
        publication.try_claim(-1, claim)
    collector = Collector()
    collector.drain(subscription, 2)
    assert [m[0] for m in collector.messages] == [b"first", b"third"]
    # Claims through three term ends: each lands whole in one term, the position after it is returned.
    sent = [bytes([i & 0xFF]) * (100 + i) for i in range(600)]
    for data in sent:
        while (position := publication.try_claim(len(data), claim)) < 0:
            subscription.poll(FragmentAssembler(collector), 100)
        claim.put_bytes(data)
        claim.commit()
        assert position == publication.position
    collector.drain(subscription, 2 + len(sent))
    assert [m[0] for m in collector.messages[2:]] == sent
    assert subscription.images[0].position == publication.position > 3 * TERM_LENGTH


def test_exclusive_publication_runs_across_term_rotations(aeron: Aeron) -> None:
    subscription = aeron.add_subscription(CHANNEL, 1005)
    publication = aeron.add_exclusive_publication(CHANNEL, 1005)
    wait_for(lambda: publication.is_connected, what="connection")
    collector = Collector()
    handler = FragmentAssembler(collector)
    count = 3000  # 3000 x 96-byte frames = 4.4 terms of 64 KiB
    last_position = 0
    for i in range(count):
        data = i.to_bytes(4, "little") * 16
        while (last_position := publication.offer(data)) < 0:
            subscription.poll(handler, 100)
    wait_for(lambda: subscription.poll(handler, 100) >= 0 and len(collector.messages) >= count)
    assert [int.from_bytes(m[0][:4], "little") for m in collector.messages] == list(range(count))
    # Each 64 KiB term holds 682 whole frames of 96 bytes; the rest of a term is padding.
    assert publication.position == last_position == 4 * TERM_LENGTH + (count - 4 * 682) * 96


@pytest.mark.parametrize("kind", ["shared", "exclusive"])
def test_positions_kept_by_the_caller_never_change(aeron: Aeron, kind: str) -> None:
    """The fast path rewrites the int an offer returned once the caller has dropped it: every position the
    caller keeps stays the value it was given, from offer and offer_async, and (exclusive, placed 64 KiB
    short of 2**30) across the value where the int grows a digit."""
    stream_id = 1011 if kind == "shared" else 1012
    subscription = aeron.add_subscription(CHANNEL, stream_id)
    if kind == "shared":
        publication = aeron.add_publication(CHANNEL, stream_id)
    else:
        placed = f"{CHANNEL}|init-term-id=0|term-id={2**30 // TERM_LENGTH - 1}|term-offset=0"
        publication = aeron.add_exclusive_publication(placed, stream_id)
    wait_for(lambda: publication.is_connected, what="connection")

    def offered(data: bytes) -> int:
        while (position := publication.offer(data)) < 0:
            subscription.poll(lambda *_: None, 100)
        return position

    kept: list[int] = []
    seen: list[str] = []  # each kept value as text, written when it was returned
    for n in [0, 1, 31, 32, 100, 1000] * 100:
        kept.append(offered(bytes(n)))
        seen.append(str(kept[-1]))
        assert kept[-1] == publication.position
        offered(b"x")  # dropped at once: the next offer may reuse its int

    async def offered_async() -> None:
        for _ in range(50):
            kept.append(await publication.offer_async(b"y"))
            seen.append(str(kept[-1]))
            await publication.offer_async(b"z")

    asyncio.run(offered_async())
    assert [str(p) for p in kept] == seen
    assert kept == sorted(set(kept)) and kept[-1] == publication.position - 64
    if kind == "exclusive":
        assert kept[0] < 2**30 < kept[-1]


def test_offsets_kept_by_a_poll_handler_never_change(aeron: Aeron) -> None:
    """The fast path's poll reuses the ints it hands its handler (offset, length, header.offset) while the
    handler keeps none of them: the ones it keeps stay the values they were given."""
    subscription = aeron.add_subscription(CHANNEL, 1013)
    publication = aeron.add_publication(CHANNEL, 1013)
    wait_for(lambda: publication.is_connected, what="connection")
    sizes = [1000, 300, 500, 1300, 257, 700] * 5  # lengths and offsets past the shared small ints
    for n in sizes:
        offer(publication, bytes(n))
    kept: list[tuple[int, int, int]] = []
    seen: list[str] = []

    def handler(buffer, offset: int, length: int, header: Header) -> None:
        if len(kept) % 2:  # every other fragment keeps nothing
            kept.append((offset, length, header.offset))
            seen.append(repr(kept[-1]))
        else:
            kept.append((0, length, 0))
            seen.append(repr(kept[-1]))

    wait_for(lambda: subscription.poll(handler, 4) >= 0 and len(kept) >= len(sizes), what="fragments")
    assert [repr(k) for k in kept] == seen
    assert [length for _, length, _ in kept] == sizes
    frames = [offset for offset, _, _ in kept[1::2]]
    assert frames == sorted(set(frames)) and all(o == h + 32 for o, _, h in kept[1::2])


def test_shared_publication_is_one_stream_for_both_publishers(aeron: Aeron) -> None:
    subscription = aeron.add_subscription(CHANNEL, 1006)
    first = aeron.add_publication(CHANNEL, 1006)
    second = aeron.add_publication(CHANNEL, 1006)
    assert first.session_id == second.session_id and first.registration_id != second.registration_id
    wait_for(lambda: first.is_connected, what="connection")
    offer(first, b"a")
    offer(second, b"b")
    first.close()
    offer(second, b"c")  # the log lives on while a publisher holds it
    collector = Collector()
    collector.drain(subscription, 3)
    assert [m[0] for m in collector.messages] == [b"a", b"b", b"c"]


def test_removed_publication_ends_the_stream(embedded_driver) -> None:
    clock = ManualClock.starting_now()
    driver = embedded_driver(
        publication_linger_timeout_ns=500_000_000,
        timer_interval_ns=100_000_000,
        epoch_clock_ms=clock.epoch_clock_ms,
        nano_clock=clock.nano_clock,
    )
    unavailable = []
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        subscription = aeron.add_subscription(CHANNEL, 1007, on_unavailable_image=unavailable.append)
        publication = aeron.add_publication(CHANNEL, 1007)
        wait_for(lambda: publication.is_connected and subscription.images, what="connection")
        offer(publication, b"last words")
        image = subscription.images[0]
        log_file = image.log_buffers.path
        publication.close()
        closed_at = clock.nanos
        collector = Collector()
        collector.drain(subscription, 1)
        assert image.is_end_of_stream
        wait_for(lambda: ticked(clock) and unavailable == [image], what="image unavailable", interval=0.02)
        wait_for(
            lambda: ticked(clock) and not log_file.exists(),
            what="log file deleted after linger",
            interval=0.02,
        )
        assert clock.nanos - closed_at >= 500_000_000


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("offer"), st.integers(0, 3000)),
            st.tuples(st.just("poll"), st.integers(1, 40)),
            st.tuples(st.just("stall"), st.integers(20, 200)),
        ),
        min_size=1,
        max_size=60,
    )
)
@pytest.mark.parametrize("kind", ["shared", "exclusive"])
def test_back_pressure_never_overwrites_unread_data(
    aeron: Aeron, kind: str, steps: list[tuple[str, int]]
) -> None:
    """A stalled subscriber makes offers fail with BACK_PRESSURED; everything accepted arrives intact."""
    stream_id = 2000 + (time.monotonic_ns() % 1_000_000)
    subscription = aeron.add_subscription(CHANNEL, stream_id)
    add = aeron.add_exclusive_publication if kind == "exclusive" else aeron.add_publication
    publication = add(CHANNEL, stream_id)
    try:
        # Images arrive asynchronously (the driver's events follow its response to the add).
        wait_for(lambda: publication.is_connected and subscription.images, what="connection")
        wait_for(lambda: publication.position_limit > 0, what="publisher limit")
        sent: list[bytes] = []
        received: list[bytes] = []
        handler = FragmentAssembler(lambda b, o, n, h: received.append(b.get_bytes(o, n)))
        image = subscription.images[0]
        for i, (action, amount) in enumerate(steps):
            if action == "poll":
                subscription.poll(handler, amount)
                continue
            count = 1 if action == "offer" else amount
            size = amount if action == "offer" else 1000
            for k in range(count):
                payload = bytes(((i + k) * 13 + j) & 0xFF for j in range(size))
                result = publication.offer(payload)
                if result > 0:
                    sent.append(payload)
                    # Never more than a window (+ one message) ahead of what the subscriber consumed.
                    assert result - image.position <= TERM_LENGTH + publication.max_message_length + 64
                else:
                    assert result in (BACK_PRESSURED, ADMIN_ACTION), result
        wait_for(lambda: subscription.poll(handler, 100) >= 0 and len(received) >= len(sent), what="drain")
        assert received == sent
    finally:
        publication.close()
        subscription.close()


@pytest.mark.parametrize("kind", ["shared", "exclusive"])
def test_a_message_over_the_maximum_is_refused_even_when_not_connected(aeron: Aeron, kind: str) -> None:
    add = aeron.add_exclusive_publication if kind == "exclusive" else aeron.add_publication
    publication = add(CHANNEL, 1008)  # nobody subscribes: the limit alone would say NOT_CONNECTED
    with pytest.raises(ValueError, match="exceeds the maximum"):
        publication.offer(bytes(publication.max_message_length + 1))
    with pytest.raises(ValueError, match="exceeds the maximum"):
        publication.offer_many([bytes(publication.max_message_length + 1)])


def test_exclusive_offers_claims_and_padding_share_one_position(aeron: Aeron) -> None:
    """Offers (native), claims and padding (Python) of one exclusive publication move the same position,
    across term rotations: every message arrives in order and the positions add up."""
    subscription = aeron.add_subscription(CHANNEL, 1009)
    publication = aeron.add_exclusive_publication(CHANNEL, 1009)
    wait_for(lambda: publication.is_connected, what="connection")
    collector = Collector()
    handler = FragmentAssembler(collector)
    claim = BufferClaim()
    expected: list[bytes] = []

    def retry(action) -> int:
        while (result := action()) < 0:
            assert result in (BACK_PRESSURED, ADMIN_ACTION), result
            subscription.poll(handler, 100)
        return result

    def claimed(data: bytes) -> int:
        result = publication.try_claim(len(data), claim)
        if result > 0:
            claim.put_bytes(data)
            claim.commit()
        return result

    for i in range(600):  # ~3 terms of 64 KiB
        data = i.to_bytes(4, "little") * (1 + i % 50)
        step = i % 4
        if step == 0:
            position = retry(lambda d=data: publication.offer(d))
        elif step == 1:
            position = retry(lambda d=data: claimed(d))
        elif step == 2:
            position = retry(lambda n=i % 100: publication.append_padding(n))
            assert position == publication.position
            continue
        else:
            position = retry(lambda d=data: publication.offer(d * 40))  # fragmented
            data *= 40
        expected.append(data)
        assert position == publication.position
    wait_for(lambda: subscription.poll(handler, 100) >= 0 and len(collector.messages) >= len(expected))
    assert [m[0] for m in collector.messages] == expected
    assert collector.messages[-1][3] == publication.position


def test_an_abandoned_claim_is_unblocked_after_the_unblock_timeout(embedded_driver) -> None:
    """A publisher that claims and never commits (it died) would stall the stream for every other publisher
    of the shared log; after aeron.publication.unblock.timeout the driver pads over the claim."""
    clock = ManualClock.starting_now()
    driver = embedded_driver(
        publication_unblock_timeout_ns=1_000_000_000,
        timer_interval_ns=100_000_000,
        epoch_clock_ms=clock.epoch_clock_ms,
        nano_clock=clock.nano_clock,
    )
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        subscription = aeron.add_subscription(CHANNEL, 1010)
        publication = aeron.add_publication(CHANNEL, 1010)
        wait_for(lambda: publication.is_connected, what="connection")
        offer(publication, b"before")
        claim = BufferClaim()
        wait_for(lambda: publication.try_claim(100, claim) > 0, what="claim")
        claim.put_bytes(b"never committed")
        offer(publication, b"after")
        collector = Collector()
        collector.drain(subscription, 1)
        blocked_since = clock.nanos
        handler = FragmentAssembler(collector)
        wait_for(
            lambda: ticked(clock) and subscription.poll(handler, 100) >= 0 and len(collector.messages) >= 2,
            what="the abandoned claim to be padded over",
            interval=0.02,
        )
        assert clock.nanos - blocked_since >= 1_000_000_000
        assert [m[0] for m in collector.messages] == [b"before", b"after"]
        assert driver.driver.counters.get_counter_value(19) == 1  # Unblocked Publications
