"""The native steady-state cycle (driver/fast_cycle.py) is the Python data path, not a second one: the same
scripted traffic run with the SHARED Python cycle, with the native cycle serving every wake-up it can, and with
each agent cycled on its own (DEDICATED) puts the same datagrams on the wire, byte for byte and in order, and
leaves the same positions, counters, loss report and delivered messages (tests/support/differential.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driver.protocol.frames import HDR_TYPE_NAK
from tests.support import new_aeron_dir
from tests.support.differential import (
    IN_INITIAL_TERM,
    MODES,
    TERM_LENGTH,
    UNKNOWN_SESSION,
    Observed,
    Rig,
    data_frame,
)

Script = Callable[[Rig], None]


def run(tmp_path: Path, script: Script) -> dict[str, tuple[Observed, int]]:
    """``script`` run in every mode: each mode's observations and its count of native cycles that did work."""
    results = {}
    for mode in MODES:
        rig = Rig(new_aeron_dir(tmp_path), mode).open()
        try:
            script(rig)
            results[mode] = (rig.result(), rig.native_work)
        finally:
            rig.close()
    return results


def assert_equal(results: dict[str, tuple[Observed, int]], native_work: bool = True) -> Observed:
    python, _ = results["python"]
    for mode in ("native", "dedicated"):
        other, _ = results[mode]
        for name in ("wire_out", "wire_back", "delivered", "counters", "loss_report"):
            assert getattr(other, name) == getattr(python, name), f"{name} differs between python and {mode}"
    if native_work:
        assert results["native"][1] > 0, "the native cycle did no work: the run compared nothing"
    return python


def connect(rig: Rig, window: int = 128 * 1024) -> None:
    """The outbound stream connected (the peer answers its SETUP with ``window``) and the inbound one set up."""
    rig.step(lambda: None)  # the publication's SETUP
    rig.step(lambda: rig.status_message(window=window, at=0))
    rig.step(lambda: rig.advance_ms(110, 10))  # the next SETUP, the last: it has a receiver
    rig.step(rig.setup)
    rig.step(lambda: None)


def frames(offsets: list[int], length: int = 96) -> list[bytes]:
    return [data_frame(offset, offset.to_bytes(4, "little") * (length // 4)) for offset in offsets]


def steady(rig: Rig) -> None:
    connect(rig)
    for _ in range(5):
        rig.step(lambda: rig.offer(10))
        rig.step(lambda: rig.status_message(window=128 * 1024))
    rig.step(lambda: rig.send_in(frames(list(range(0, 1280, 128)))))
    rig.step(lambda: rig.send_in(frames(list(range(1280, 2560, 128)))))


def test_steady_traffic_both_ways(tmp_path: Path) -> None:
    python = assert_equal(run(tmp_path, steady))
    assert len(python.delivered) == 20
    assert sum(len(d) for d in python.wire_out) > 5


WINDOW = 128 * 1024


def loss_reordering_and_duplicates(rig: Rig) -> None:
    """Inbound: a gap (a NAK after its delay, the loss report), frames out of order, duplicates, then the repair;
    outbound data flows meanwhile."""
    connect(rig)
    rig.step(lambda: rig.send_in(frames([0, 128, 256, 640, 512, 768])))  # 384 lost, 512/640 swapped
    rig.step(lambda: rig.offer(5))
    rig.step(lambda: rig.send_in(frames([640, 768, 128])))  # duplicates
    rig.step(lambda: rig.advance_ms(30, 5))  # NAK delay and repeats
    rig.step(lambda: rig.send_in(frames([384, 896])))  # the repair
    rig.step(lambda: rig.offer(5))
    rig.step(lambda: rig.status_message(WINDOW))


def flow_control_stall(rig: Rig) -> None:
    """Outbound: a receiver window smaller than what is offered (the stall is counted once the sender sees it),
    then the window opens."""
    connect(rig, window=4096)
    for _ in range(3):  # time passes between offers: the conductor's sweep moves the publisher's limit
        rig.step(lambda: rig.offer(40))
        rig.step(lambda: rig.advance_ms(2))
    rig.step(lambda: rig.status_message(window=8192))
    rig.step(lambda: rig.advance_ms(2))
    rig.step(lambda: rig.offer(10))
    rig.step(lambda: rig.status_message(WINDOW))
    rig.step(lambda: rig.advance_ms(2))


def setup_mid_stream(rig: Rig) -> None:
    """Inbound: data, then a SETUP again for the stream it joined, then one for a second session mid-stream."""
    connect(rig)
    rig.step(lambda: rig.send_in(frames([0, 128, 256])))
    rig.step(rig.setup)
    rig.step(lambda: rig.send_in(frames([384, 512])))
    rig.step(lambda: rig.setup(session_id=0x4321, active_term=IN_INITIAL_TERM + 2, term_offset=1024))
    rig.step(lambda: rig.send_in(frames([640])))
    rig.step(lambda: rig.advance_ms(20, 5))


def client_command_mid_burst(rig: Rig) -> None:
    """A client's command written while committed data waits to be sent and datagrams wait to be read."""

    def burst_and_command() -> None:
        rig.offer(20)
        rig.send_in(frames([0, 128]))
        rig.client_command()
        rig.offer(20)

    connect(rig)
    rig.step(lambda: rig.offer(3))
    rig.step(burst_and_command)
    rig.step(lambda: rig.status_message(WINDOW))


def term_rotation(rig: Rig) -> None:
    """Both ways across a term boundary (64 KiB terms): the sender's and the receiver's term rotation."""
    connect(rig)
    for _ in range(12):
        rig.step(lambda: rig.offer(30, 512))
        rig.step(lambda: rig.status_message(WINDOW))
    offsets = list(range(TERM_LENGTH - 4 * 128, TERM_LENGTH, 128))
    big = data_frame(TERM_LENGTH - 32 * 1024, bytes(32 * 1024 - 32))  # one 32 KiB frame, a gap before it
    rig.step(lambda: rig.send_in([big]))
    rig.step(lambda: rig.send_in(frames(offsets)))
    next_term = [data_frame(o, bytes(96), term_id=IN_INITIAL_TERM + 1) for o in (0, 128, 256)]
    rig.step(lambda: rig.send_in(next_term))
    rig.step(lambda: rig.advance_ms(20, 5))


def nak_storm(rig: Rig) -> None:
    """Outbound: many NAKs for what was sent (retransmits, their delays and lingers), data still flowing."""
    connect(rig)
    rig.step(lambda: rig.offer(40))
    rig.step(lambda: rig.status_message(WINDOW))

    def storm() -> None:
        for n in range(30):
            rig.nak((n * 128) % 4096, 256)

    rig.step(storm)
    rig.step(lambda: rig.offer(10))
    rig.step(lambda: rig.advance_ms(40, 5))
    rig.step(storm)
    rig.step(lambda: rig.status_message(WINDOW))


def unknown_session(rig: Rig) -> None:
    """Inbound: data of a session the driver never saw a SETUP for (it asks for one), amid known data."""
    connect(rig)
    rig.step(lambda: rig.send_in([data_frame(0, bytes(64), session_id=UNKNOWN_SESSION), *frames([0, 128])]))
    rig.step(lambda: rig.send_in(frames([256])))
    rig.step(lambda: rig.advance_ms(20, 5))


def peer_goes_away(rig: Rig) -> None:
    """Outbound: the far receiver goes away mid-stream; what the publication sends meets port unreachable (an
    error the next read or send of its socket gets: a skipped read or a short send), inbound traffic carries
    on."""
    connect(rig)
    rig.step(lambda: rig.offer(5))
    rig.step(rig.peer_gone)
    for _ in range(3):
        rig.step(lambda: rig.offer(5))
        rig.step(lambda: rig.send_in(frames([0, 128])))
        rig.step(lambda: rig.advance_ms(2))


def a_trickle_past_the_image_liveness_timeout(rig: Rig) -> None:
    """Inbound: a datagram a second for 12 s, past the image liveness timeout (10 s): the image lives on frame
    times, which its agent takes back from the native cycles that inserted the datagrams."""
    connect(rig)
    for n in range(12):
        rig.step(lambda n=n: rig.send_in(frames([n * 128])))
        rig.step(lambda: rig.advance_ms(1000, 100))


@pytest.mark.parametrize(
    "script",
    [
        loss_reordering_and_duplicates,
        a_trickle_past_the_image_liveness_timeout,
        flow_control_stall,
        setup_mid_stream,
        client_command_mid_burst,
        term_rotation,
        nak_storm,
        unknown_session,
        peer_goes_away,
    ],
)
def test_scripted_traffic_is_the_same_in_every_mode(tmp_path: Path, script: Script) -> None:
    assert_equal(run(tmp_path, script))


def kinds(datagrams: list[list[bytes]]) -> set[int]:
    return {int.from_bytes(d[6:8], "little") for step in datagrams for d in step if len(d) >= 8}


def test_the_scripts_exercise_what_they_name(tmp_path: Path) -> None:
    """The loss script NAKs and reports the gap; the NAK storm's retransmits repeat data already sent."""
    lossy = assert_equal(run(tmp_path, loss_reordering_and_duplicates))
    assert HDR_TYPE_NAK in kinds(lossy.wire_back)
    assert lossy.loss_report.strip(b"\0") != b""
    assert [payload[:4] for _, _, payload in lossy.delivered][:8] == [
        o.to_bytes(4, "little") for o in range(0, 1024, 128)
    ]
    stormy = assert_equal(run(tmp_path, nak_storm))
    sent = [d for step in stormy.wire_out for d in step]
    assert len(sent) > len(set(sent)), "no retransmit"


EVENTS = st.one_of(
    st.tuples(st.just("offer"), st.integers(1, 30)),
    st.tuples(st.just("sm"), st.sampled_from([512, 4096, WINDOW])),
    st.tuples(st.just("nak"), st.integers(0, 31), st.sampled_from([64, 256, 1408])),
    # frames lost, reordered, doubled:
    st.tuples(st.just("data"), st.lists(st.integers(0, 23), min_size=1, max_size=8)),
    st.tuples(st.just("setup"), st.sampled_from([0x5678, 0x4321])),
    st.just(("command",)),
    st.just(("unknown",)),
    st.tuples(st.just("time"), st.sampled_from([1, 5, 20])),
)


def apply(rig: Rig, event: tuple) -> None:
    kind = event[0]
    if kind == "offer":
        rig.offer(event[1])
    elif kind == "sm":
        rig.status_message(event[1])
    elif kind == "nak":
        rig.nak(event[1] * 128, event[2])
    elif kind == "data":
        rig.send_in(frames([i * 128 for i in event[1]]))
    elif kind == "setup":
        rig.setup(session_id=event[1])
    elif kind == "command":
        rig.client_command()
    elif kind == "unknown":
        rig.send_in([data_frame(0, bytes(64), session_id=UNKNOWN_SESSION)])
    else:
        rig.advance_ms(event[1], event[1])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(schedule=st.lists(EVENTS, min_size=1, max_size=12))
def test_random_schedules_are_the_same_in_every_mode(tmp_path: Path, schedule: list[tuple]) -> None:
    def script(rig: Rig) -> None:
        connect(rig)
        for event in schedule:
            rig.step(lambda event=event: apply(rig, event))

    assert_equal(run(tmp_path, script), native_work=False)
