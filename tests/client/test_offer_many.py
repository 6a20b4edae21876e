"""Publication.offer_many (one C call on the fast path; on a shared publication, runs of messages that fit a
frame go with one reservation each) writes the log exactly as per-message offers do: across term ends,
interleaved with offer and try_claim, beside a second publisher on the same shared log, and the
publication's own tail follows it."""

from __future__ import annotations

from itertools import count

import pytest

from driver.client import Aeron, BufferClaim, FragmentAssembler
from driver.client.offer_result import CLOSED
from tests.support import wait_for

CHANNEL = "aeron:ipc?term-length=64k"
STREAM_IDS = count(3501)


@pytest.mark.parametrize("kind", ["shared", "exclusive"])
def test_offer_many_mixed_with_offer_and_claim_over_several_terms(aeron: Aeron, kind: str) -> None:
    stream_id = next(STREAM_IDS)
    subscription = aeron.add_subscription(CHANNEL, stream_id)
    add = aeron.add_exclusive_publication if kind == "exclusive" else aeron.add_publication
    publication = add(CHANNEL, stream_id)
    wait_for(lambda: publication.is_connected and subscription.images, what="connection")
    got: list[bytes] = []
    assembler = FragmentAssembler(lambda buf, off, length, _h: got.append(buf.get_bytes(off, length)))
    sent: list[bytes] = []

    def drain() -> None:
        while subscription.poll(assembler, 1000):
            pass

    claim = BufferClaim()
    i = 0
    # ~400 KiB through 64 KiB terms: every way of appending meets term ends; 3000 B messages are fragmented.
    while sum(map(len, sent)) < 400_000:
        batch = [bytes([i & 0xFF]) * (3000 if i % 7 == 0 else 1 + i % 300) for i in range(i, i + 40)]
        went = publication.offer_many(batch)  # how many went, or a code (back pressure) when none did
        went = max(went, 0)
        sent += batch[:went]
        i += went
        single = bytes([i & 0xFF]) * (1 + i % 500)
        if publication.offer(single) > 0:
            sent.append(single)
            i += 1
        if publication.try_claim(8, claim) > 0:
            claim.put_bytes(b"claimed!")
            claim.commit()
            sent.append(b"claimed!")
        drain()
    wait_for(lambda: (drain(), len(got) >= len(sent))[1], what="every message")
    assert got == sent
    assert subscription.images[0].position == publication.position
    publication.close()
    assert publication.offer_many([b"x"]) == CLOSED
    subscription.close()


def test_two_publishers_offering_many_to_one_shared_log_interleave_whole_messages(aeron: Aeron) -> None:
    """Each block is one reservation: the other publisher's messages land before or after it, never inside
    a message, and each publisher's own messages keep their order, across term ends."""
    stream_id = next(STREAM_IDS)
    subscription = aeron.add_subscription(CHANNEL, stream_id)
    first, second = aeron.add_publication(CHANNEL, stream_id), aeron.add_publication(CHANNEL, stream_id)
    wait_for(lambda: first.is_connected and subscription.images, what="connection")
    got: list[bytes] = []
    assembler = FragmentAssembler(lambda buf, off, length, _h: got.append(buf.get_bytes(off, length)))
    queues = {b"A": [b"A" + i.to_bytes(4, "big") * (1 + i % 90) for i in range(3000)]}
    queues[b"B"] = [b"B" + i.to_bytes(4, "big") * (1 + i % 50) for i in range(3000)]
    position = {b"A": 0, b"B": 0}
    while position[b"A"] < 3000 or position[b"B"] < 3000:
        for name, publication in ((b"A", first), (b"B", second)):
            went = publication.offer_many(queues[name][position[name] : position[name] + 37])
            position[name] += max(went, 0)
        while subscription.poll(assembler, 1000):
            pass
    wait_for(lambda: subscription.poll(assembler, 1000) >= 0 and len(got) >= 6000, what="every message")
    assert [m for m in got if m[:1] == b"A"] == queues[b"A"]
    assert [m for m in got if m[:1] == b"B"] == queues[b"B"]
