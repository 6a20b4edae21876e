"""RetransmitHandler (docs/wire.md section 7, sender step 5): immediate retransmit then 60 ms linger, duplicates
ignored, at most 16 actions, invalid offsets reported, delayed retransmits fired by process_timeouts."""

from __future__ import annotations

from driver.protocol.feedback_delay import StaticDelayGenerator
from driver.protocol.retransmit_handler import RetransmitHandler

T = 64 * 1024
MS = 1_000_000


class Sent:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int, int]] = []

    def __call__(self, term_id: int, term_offset: int, length: int) -> None:
        self.calls.append((term_id, term_offset, length))

    def take(self) -> list[tuple[int, int, int]]:
        calls, self.calls = self.calls, []
        return calls


def test_unicast_retransmits_at_once_and_lingers() -> None:
    sent = Sent()
    handler = RetransmitHandler()
    assert handler.on_nak(5, 160, 96, T, 0, sent)
    assert sent.take() == [(5, 160, 96)]
    assert handler.on_nak(5, 160, 96, T, 10 * MS, sent)  # duplicate while lingering
    assert sent.take() == []
    assert handler.active_count == 1
    handler.process_timeouts(60 * MS, sent)  # expires strictly after 60 ms
    assert handler.active_count == 1
    assert handler.process_timeouts(60 * MS + 1, sent) == 1
    assert handler.active_count == 0
    handler.on_nak(5, 160, 96, T, 61 * MS, sent)
    assert sent.take() == [(5, 160, 96)]


def test_different_offsets_and_terms_are_separate_actions() -> None:
    sent = Sent()
    handler = RetransmitHandler()
    handler.on_nak(5, 160, 96, T, 0, sent)
    handler.on_nak(5, 512, 64, T, 0, sent)
    handler.on_nak(6, 160, 96, T, 0, sent)
    assert sent.take() == [(5, 160, 96), (5, 512, 64), (6, 160, 96)]


def test_invalid_offsets_are_reported_and_ignored() -> None:
    sent = Sent()
    handler = RetransmitHandler()
    assert not handler.on_nak(5, -32, 64, T, 0, sent)
    assert not handler.on_nak(5, T - 31, 64, T, 0, sent)
    assert handler.on_nak(
        5, T - 32, 64, T, 0, sent
    )  # the last header slot is valid; length capped at the end
    assert sent.take() == [(5, T - 32, 32)]
    assert handler.on_nak(5, 64, 0, T, 0, sent)
    assert sent.take() == []


def test_at_most_max_actions() -> None:
    sent = Sent()
    handler = RetransmitHandler(max_actions=16)
    for i in range(20):
        handler.on_nak(1, i * 64, 64, T, 0, sent)
    assert len(sent.take()) == 16
    handler.process_timeouts(61 * MS, sent)
    handler.on_nak(1, 19 * 64, 64, T, 61 * MS, sent)
    assert sent.take() == [(1, 19 * 64, 64)]


def test_delayed_retransmit_fires_after_the_delay_then_lingers() -> None:
    sent = Sent()
    handler = RetransmitHandler(
        StaticDelayGenerator(10 * MS, immediate_first=False), linger_timeout_ns=60 * MS
    )
    handler.on_nak(1, 0, 128, T, 0, sent)
    assert sent.take() == []
    handler.process_timeouts(10 * MS, sent)
    assert sent.take() == []
    handler.process_timeouts(10 * MS + 1, sent)
    assert sent.take() == [(1, 0, 128)]
    handler.on_nak(1, 0, 128, T, 20 * MS, sent)
    handler.process_timeouts(50 * MS, sent)
    assert sent.take() == []
    handler.process_timeouts(70 * MS + 2, sent)
    assert handler.active_count == 0


def test_retransmit_received_cancels_a_delayed_action() -> None:
    sent = Sent()
    handler = RetransmitHandler(StaticDelayGenerator(10 * MS, immediate_first=False))
    handler.on_nak(1, 0, 128, T, 0, sent)
    handler.on_retransmit_received(1, 0)
    handler.process_timeouts(20 * MS, sent)
    assert sent.take() == [] and handler.active_count == 0
