"""The batch APIs (Publication.offer_many, Subscription/Image.poll_batch) deliver exactly what offer and
per-message poll do, and the steady-state offer and poll paths allocate nothing that stays."""

from __future__ import annotations

import gc
import tracemalloc
from itertools import count

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driver.client import Aeron
from driver.client.offer_result import ADMIN_ACTION, BACK_PRESSURED, CLOSED
from tests.support import wait_for

CHANNEL = "aeron:ipc?term-length=64k"
STREAM_IDS = count(3001)


def connected(aeron: Aeron, subscriptions: int = 1, kind: str = "shared"):
    stream_id = next(STREAM_IDS)
    subs = [aeron.add_subscription(CHANNEL, stream_id) for _ in range(subscriptions)]
    add = aeron.add_exclusive_publication if kind == "exclusive" else aeron.add_publication
    publication = add(CHANNEL, stream_id)
    wait_for(lambda: publication.is_connected and all(s.images for s in subs), what="connection")
    return publication, subs


def fragments_by_poll(subscription, wanted: int) -> list[tuple[bytes, int]]:
    got: list[tuple[bytes, int]] = []

    def handler(buffer, offset, length, header) -> None:
        got.append((buffer.get_bytes(offset, length), header.flags))

    wait_for(lambda: subscription.poll(handler, 7) >= 0 and len(got) >= wanted, what="fragments")
    return got


def fragments_by_batch(subscription, wanted: int, limit: int) -> list[tuple[bytes, int]]:
    got: list[tuple[bytes, int]] = []

    def take() -> bool:
        batch = subscription.poll_batch(limit)
        assert len(batch) <= limit
        got.extend(
            (bytes(batch.buffer[o : o + n]), int(f))
            for o, n, f in zip(batch.offsets, batch.lengths, batch.flags, strict=True)
        )
        return len(got) >= wanted

    wait_for(take, what="batches")
    subscription.poll_batch(limit).release()
    return got


def offer_all(publication, messages: list[bytes]) -> None:
    for message in messages:
        wait_for(lambda m=message: publication.offer(m) > 0, what="offer")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.integers(0, 5000), min_size=1, max_size=40),
    limit=st.integers(1, 50),
)
def test_batch_poll_delivers_what_per_message_polling_does(
    aeron: Aeron, sizes: list[int], limit: int
) -> None:
    # Sizes over the MTU's payload (1376 by default) are fragmented: fragments and their flags must match.
    publication, (per_message, batched) = connected(aeron, subscriptions=2)
    messages = [bytes((i + k) & 0xFF for k in range(size)) for i, size in enumerate(sizes)]
    offer_all(publication, messages)
    wanted = sum(max(1, -(-size // publication.max_payload_length)) for size in sizes)
    expected = fragments_by_poll(per_message, wanted)
    assert len(expected) == wanted
    assert fragments_by_batch(batched, wanted, limit) == expected
    publication.close()
    per_message.close()
    batched.close()


def test_a_batch_is_consumed_only_when_released(aeron: Aeron) -> None:
    publication, (subscription,) = connected(aeron)
    offer_all(publication, [b"one", b"two", b"three"])
    image = subscription.images[0]
    start = image.position
    wait_for(lambda: len(image.poll_batch(2)) == 2, what="a batch")
    batch = image._batch
    assert image.position == start  # still held: the publisher cannot reuse the space yet
    assert [bytes(batch.data(i)) for i in range(len(batch))] == [b"one", b"two"]
    assert batch.offsets.dtype == np.int32 and list(batch.lengths) == [3, 3]
    assert list(batch.flags) == [0xC0, 0xC0]
    with batch:
        pass
    assert image.position == batch.position == start + 128  # two 64-byte frames
    assert fragments_by_poll(subscription, 1) == [(b"three", 0xC0)]


@pytest.mark.parametrize("kind", ["shared", "exclusive"])
def test_offer_many_appends_in_order_and_stops_at_back_pressure(aeron: Aeron, kind: str) -> None:
    publication, (subscription,) = connected(aeron, kind=kind)
    assert publication.offer_many([]) == 0
    sent = publication.offer_many([b"a", bytearray(b"bb"), memoryview(b"ccc")])
    assert sent == 3
    assert [m for m, _ in fragments_by_poll(subscription, 3)] == [b"a", b"bb", b"ccc"]
    # A window's worth and more: it stops at the first that does not go and says how many went.
    big = [bytes(1000)] * 200
    sent = publication.offer_many(big)
    assert 0 < sent < 200
    assert publication.offer_many(big) in (BACK_PRESSURED, ADMIN_ACTION)
    publication.close()
    assert publication.offer_many([b"x"]) == CLOSED


@pytest.mark.parametrize("kind", ["shared", "exclusive"])
def test_offers_bound_before_a_close_return_closed(aeron: Aeron, kind: str) -> None:
    publication, _ = connected(aeron, kind=kind)
    offer, offer_many = publication.offer, publication.offer_many
    publication.close()
    assert offer(b"late") == CLOSED
    assert offer_many([b"late"]) == CLOSED


@pytest.mark.slow
@pytest.mark.parametrize("client_path", ["fast"], indirect=True)
def test_no_allocation_per_message_on_the_offer_and_poll_paths(embedded_driver, client_path: str) -> None:
    """1,000,000 32-byte messages offered and polled (blocks of 250, inside the 32 KiB window of a 64 KiB term)
    leave traced memory where it was."""
    driver = embedded_driver()
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        publication, (subscription,) = connected(aeron)
        payload = bytes(32)
        received = [0]

        def handler(buffer, offset, length, header) -> None:
            pass

        offer, poll = publication.offer, subscription.poll

        def round_trip(blocks: int) -> None:
            for _ in range(blocks):
                sent = 0
                while sent < 250:
                    if offer(payload) > 0:
                        sent += 1
                got = 0
                while got < sent:
                    got += poll(handler, 250)
                received[0] += got

        round_trip(40)  # warm: every lazily made object exists
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot().filter_traces(
                [tracemalloc.Filter(True, "*/driver/client/*")]
            )
            round_trip(4000)
            gc.collect()
            after = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, "*/driver/client/*")])
        finally:
            tracemalloc.stop()
        growth = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
        assert received[0] == 1_010_000
        assert growth < 16 * 1024, after.compare_to(before, "lineno")[:5]
