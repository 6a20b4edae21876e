"""Flow control (Aeron 1.15.1): unicast and max multicast follow the fastest receiver, min multicast the slowest
by receiver id with a 2 s timeout; should_linger at end of stream."""

from __future__ import annotations

from driver.protocol import frames as f
from driver.protocol.flow_control import MaxMulticastFlowControl, MinMulticastFlowControl, UnicastFlowControl

BITS = 16
T = 1 << BITS
INITIAL = 100
MS = 1_000_000
S = 1000 * MS


def sm(term_id: int, term_offset: int, window: int, receiver_id: int = 1) -> f.StatusMessageFrame:
    return f.StatusMessageFrame.decode(
        f.encode_status_message(1, 2, term_id, term_offset, window, receiver_id)
    )


def test_unicast_takes_the_max_of_limit_and_position_plus_window() -> None:
    fc = UnicastFlowControl()
    fc.initialize(INITIAL, T)
    assert fc.on_status_message(sm(INITIAL, 0, 32768), 0, INITIAL, BITS, 0) == 32768
    assert fc.on_status_message(sm(INITIAL + 1, 1024, 32768), 32768, INITIAL, BITS, 1) == T + 1024 + 32768
    assert fc.on_status_message(sm(INITIAL, 0, 1024), 100_000, INITIAL, BITS, 2) == 100_000  # never back
    assert fc.on_idle(3, 100_000, 50_000, False) == 100_000
    assert fc.has_required_receivers() and fc.receiver_count == 1


def test_term_id_wraps_like_java() -> None:
    fc = UnicastFlowControl()
    initial = 2**31 - 1
    wrapped = -(2**31)  # initial + 1 in 32-bit arithmetic
    assert fc.on_status_message(sm(wrapped, 64, 1000), 0, initial, BITS, 0) == T + 64 + 1000


def test_max_multicast_follows_the_fastest_receiver() -> None:
    fc = MaxMulticastFlowControl()
    assert fc.on_status_message(sm(INITIAL, 4096, 1000, receiver_id=1), 0, INITIAL, BITS, 0) == 5096
    assert fc.on_status_message(sm(INITIAL, 0, 1000, receiver_id=2), 5096, INITIAL, BITS, 0) == 5096
    assert fc.receiver_count == 2
    fc.on_idle(3 * S, 5096, 5096, False)
    assert fc.receiver_count == 0


def test_unicast_should_linger_until_caught_up_or_receiver_silent() -> None:
    fc = UnicastFlowControl()
    fc.on_status_message(sm(INITIAL, 1024, 1000), 0, INITIAL, BITS, 0)
    fc.on_idle(1 * S, 2024, 2048, True)
    assert fc.should_linger(1 * S)  # receiver at 1024 < sender 2048 and heard recently
    fc.on_idle(1 * S, 2024, 2048, False)
    assert fc.should_linger(1 * S)
    fc.on_status_message(sm(INITIAL, 2048, 1000), 0, INITIAL, BITS, 1 * S)
    fc.on_idle(1 * S, 3048, 2048, True)
    assert not fc.should_linger(1 * S)

    silent = UnicastFlowControl()
    silent.on_status_message(sm(INITIAL, 0, 1000), 0, INITIAL, BITS, 0)
    silent.on_idle(2 * S, 1000, 2048, True)
    assert silent.should_linger(2 * S)
    silent.on_idle(2 * S + 1, 1000, 2048, True)
    assert not silent.should_linger(2 * S + 1)


def test_min_multicast_follows_the_slowest_receiver_by_id() -> None:
    fc = MinMulticastFlowControl()
    assert fc.on_status_message(sm(INITIAL, 8192, 1000, receiver_id=7), 0, INITIAL, BITS, 0) == 9192
    # a slower receiver cannot move the limit back
    assert fc.on_status_message(sm(INITIAL, 1024, 1000, receiver_id=8), 9192, INITIAL, BITS, 0) == 9192
    # the fast one advancing does not help while the slow one lags
    assert fc.on_status_message(sm(INITIAL, 20000, 1000, receiver_id=7), 9192, INITIAL, BITS, 1) == 9192
    assert fc.receiver_count == 2
    assert fc.on_idle(2, 9192, 9192, False) == 2024  # on_idle reports the minimum as it is
    assert fc.on_status_message(sm(INITIAL, 16000, 1000, receiver_id=8), 9192, INITIAL, BITS, 3) == 17000
    assert sorted(r[:3] for r in fc.receivers) == [(7, 20000, 21000), (8, 16000, 17000)]


def test_min_multicast_receivers_time_out_after_2_s() -> None:
    fc = MinMulticastFlowControl()
    fc.on_status_message(sm(INITIAL, 1024, 1000, receiver_id=1), 0, INITIAL, BITS, 0)
    fc.on_status_message(sm(INITIAL, 8192, 1000, receiver_id=2), 0, INITIAL, BITS, 1 * S)
    assert fc.on_idle(2 * S, 5000, 5000, False) == 2024
    assert fc.on_idle(2 * S + 1, 5000, 5000, False) == 9192  # receiver 1 timed out
    assert fc.receiver_count == 1
    assert fc.on_idle(3 * S + 1, 9192, 9192, False) == 9192  # none left: limit unchanged
    assert fc.receiver_count == 0


def test_min_multicast_linger_and_required_receivers() -> None:
    fc = MinMulticastFlowControl(group_min_size=2)
    assert not fc.has_required_receivers()
    fc.on_status_message(sm(INITIAL, 1024, 1000, receiver_id=1), 0, INITIAL, BITS, 0, ("10.0.0.1", 4000))
    fc.on_status_message(sm(INITIAL, 4096, 1000, receiver_id=2), 0, INITIAL, BITS, 0)
    assert fc.has_required_receivers()
    assert fc.receivers[0][3] == ("10.0.0.1", 4000)
    fc.on_idle(1, 2024, 4096, True)
    assert fc.should_linger(1)
    fc.on_status_message(sm(INITIAL, 4096, 1000, receiver_id=1), 0, INITIAL, BITS, 2)
    fc.on_idle(3, 5096, 4096, True)
    assert not fc.should_linger(3)
    assert MinMulticastFlowControl().has_required_receivers()
    lonely = MinMulticastFlowControl()
    lonely.on_idle(0, 0, 0, True)
    assert not lonely.should_linger(0)
