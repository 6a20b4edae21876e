"""The state tables of ReplayMerge and CatchUp (docs/archive.md sections 16 and 17) stepped against a fake archive
and fake images: which request each state sends, when the live destination goes in, that the replay is stopped
only once bytes the replay cannot have sent are in the image, and the typed failures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from driver.archive.client import (
    NULL_POSITION,
    NULL_RECORDING_ID,
    ArchiveError,
    ArchiveErrorCode,
    CatchUp,
    CatchUpState,
    HistoryUnavailable,
    ReplayMerge,
    ReplayMergeError,
    ReplayMergeState,
)
from driver.archive.client.replay_merge import Recording

TERM_LENGTH = 64 * 1024
SESSION_ID = 77
STREAM_ID = 1001


class Answer:
    """A request the fake archive answers when polled: the answer is taken then, as the archive takes it."""

    def __init__(self, value: Any) -> None:
        self._value = value
        self.result: Any = None

    def poll(self) -> bool:
        value = self._value() if callable(self._value) else self._value
        if isinstance(value, BaseException):
            raise value
        self.result = value
        return True


@dataclass
class FakeArchive:
    position: int = NULL_POSITION
    found: Any = NULL_RECORDING_ID
    start_position: int = 0
    requests: list[tuple[Any, ...]] = field(default_factory=list)

    def recording_position(self, recording_id: int) -> Answer:
        self.requests.append(("recording_position", recording_id))
        return Answer(lambda: self.position)

    def start_replay(
        self, recording_id: int, position: int, length: int, channel: str, stream_id: int
    ) -> Answer:
        self.requests.append(("start_replay", recording_id, position, length, channel, stream_id))
        return Answer((5 << 32) | 0xFFFF_FFFE)

    def stop_replay(self, replay_session_id: int) -> Answer:
        self.requests.append(("stop_replay", replay_session_id))
        return Answer(None)

    def find_last_matching_recording(
        self, min_id: int, fragment: str, stream_id: int, session_id: int
    ) -> Answer:
        self.requests.append(("find", fragment, stream_id, session_id))
        return Answer(self.found)

    def list_recording(self, recording_id: int) -> Answer:
        self.requests.append(("list_recording", recording_id))
        return Answer([FakeDescriptor(self.start_position)])


@dataclass
class FakeDescriptor:
    start_position: int


@dataclass
class FakeImage:
    position: int = 0
    join_position: int = 0
    session_id: int = SESSION_ID
    stream_id: int = STREAM_ID
    is_closed: bool = False
    is_end_of_stream: bool = False
    initial_term_id: int = 0
    position_bits_to_shift: int = 16
    term_length: int = TERM_LENGTH
    active_transport_count: int = 1  # the replay's destination alone

    def poll(self, handler: Any, fragment_limit: int) -> int:
        return 0

    def block_poll(self, handler: Any, block_length_limit: int) -> int:
        return 0


@dataclass
class FakeSubscription:
    image: FakeImage | None = None
    channel: str = ""
    stream_id: int = STREAM_ID
    destinations: list[tuple[str, str]] = field(default_factory=list)
    is_closed: bool = False

    @property
    def images(self) -> tuple[FakeImage, ...]:
        return () if self.image is None else (self.image,)

    def image_by_session_id(self, session_id: int) -> FakeImage | None:
        return self.image

    def add_destination(self, channel: str) -> None:
        self.destinations.append(("add", channel))

    def remove_destination(self, channel: str) -> None:
        self.destinations.append(("remove", channel))

    def poll(self, handler: Any, fragment_limit: int) -> int:
        return 0

    def close(self) -> None:
        self.is_closed = True


LIVE = "aeron:udp?endpoint=127.0.0.1:40457|control=127.0.0.1:40456"
REPLAY = "aeron:udp?endpoint=127.0.0.1:40458"


def merge_of(archive: FakeArchive, subscription: FakeSubscription, start: int = 0) -> ReplayMerge:
    recording = Recording(3, SESSION_ID, STREAM_ID, TERM_LENGTH, 0)
    return ReplayMerge(
        subscription,  # type: ignore[arg-type]
        archive,
        recording,
        replay_destination=REPLAY,
        live_destination=LIVE,
        counters_reader=None,  # no driver: only the image position can prove live
        start_position=start,
    )


def step(merge: ReplayMerge) -> ReplayMergeState:
    merge.poll(lambda *a: None)
    return merge.state


def test_replay_merge_stops_the_replay_only_on_bytes_the_replay_cannot_have_sent() -> None:
    archive = FakeArchive(position=10_000)
    image = FakeImage()
    subscription = FakeSubscription(image)
    merge = merge_of(archive, subscription)
    assert step(merge) is ReplayMergeState.GET_RECORDING_POSITION
    assert subscription.destinations == [("add", REPLAY)]
    assert step(merge) is ReplayMergeState.REPLAY
    assert archive.requests[-1] == ("start_replay", 3, 0, -1, f"{REPLAY}|session-id={SESSION_ID}", STREAM_ID)
    assert step(merge) is ReplayMergeState.CATCHUP
    image.position = 9_000
    assert step(merge) is ReplayMergeState.CATCHUP  # not yet at the live position seen first
    image.position = 10_000
    assert step(merge) is ReplayMergeState.ATTEMPT_LIVE_JOIN
    archive.position = (
        10_000 + TERM_LENGTH // 4 + 32
    )  # too far ahead: live frames would fall outside the window
    step(merge)
    assert not merge.is_live_added
    archive.position = 12_000
    step(merge)
    assert merge.is_live_added and subscription.destinations[-1] == ("add", LIVE)
    archive.position = 13_000
    image.position = 12_500
    step(merge)  # answers for the sample 10 000
    step(merge)  # the sample 12 500 is not beyond 13 000
    image.position = 13_500  # beyond the recording now, but this answer is for the sample 12 500 ...
    assert step(merge) is ReplayMergeState.ATTEMPT_LIVE_JOIN  # ... so the replay may have sent it
    archive.position = 13_200
    assert step(merge) is ReplayMergeState.STOP_REPLAY  # 13 500 sampled before the answer 13 200: live
    assert archive.requests[-1] == ("stop_replay", (5 << 32) | 0xFFFF_FFFE)
    assert merge.live_join_position == 13_500
    assert step(merge) is ReplayMergeState.MERGED
    assert subscription.destinations[-1] == ("remove", REPLAY)
    entered = [e.state for e in merge.trace if e.action == "enter"]
    assert entered == [
        ReplayMergeState.RESOLVE_REPLAY_PORT,
        ReplayMergeState.GET_RECORDING_POSITION,
        ReplayMergeState.REPLAY,
        ReplayMergeState.CATCHUP,
        ReplayMergeState.ATTEMPT_LIVE_JOIN,
        ReplayMergeState.STOP_REPLAY,
        ReplayMergeState.MERGED,
    ]
    assert merge.take_subscription() is subscription


def merge_at_live_join(archive: FakeArchive, image: FakeImage) -> ReplayMerge:
    """A merge past its catch-up with the live destination added."""
    merge = merge_of(archive, FakeSubscription(image))
    for _ in range(4):
        step(merge)
    assert merge.state is ReplayMergeState.ATTEMPT_LIVE_JOIN
    step(merge)
    assert merge.is_live_added
    return merge


def neck_and_neck(merge: ReplayMerge, archive: FakeArchive, image: FakeImage, steps: int) -> ReplayMergeState:
    """Live keeps pace with the source's recorder: while each request is in flight the recording and the image
    move on alike, so no position sampled before a request is ever beyond its answer."""
    for _ in range(steps):
        archive.position += 64
        image.position = archive.position
        if step(merge) is not ReplayMergeState.ATTEMPT_LIVE_JOIN:
            break
    return merge.state


def test_replay_merge_joins_a_live_stream_that_keeps_pace_with_the_recording() -> None:
    # The replay's and live's frames reach the image; the sampled positions never pass the recording position,
    # which alone kept the merge waiting for a moment when the source's recorder lagged (seconds on a busy
    # machine). The image's two active sources and its holding the recording position end it.
    archive = FakeArchive(position=10_000)
    image = FakeImage(position=10_000)
    merge = merge_at_live_join(archive, image)
    image.active_transport_count = 2
    assert neck_and_neck(merge, archive, image, 1_000) is ReplayMergeState.STOP_REPLAY
    assert merge.live_join_position == image.position
    assert [e.action for e in merge.trace][-2:] == ["live_proven", "enter"]
    assert step(merge) is ReplayMergeState.MERGED


def test_replay_merge_keeps_the_replay_while_only_the_replay_feeds_the_image() -> None:
    # The same positions with the replay's destination the only source: the replay may have sent all of it.
    archive = FakeArchive(position=10_000)
    image = FakeImage(position=10_000)
    merge = merge_at_live_join(archive, image)
    assert neck_and_neck(merge, archive, image, 200) is ReplayMergeState.ATTEMPT_LIVE_JOIN
    # Two sources but the image behind the recording position: the replay still owes it bytes.
    image.active_transport_count = 2
    for _ in range(50):
        archive.position += 64
        image.position = archive.position - 64
        assert step(merge) is ReplayMergeState.ATTEMPT_LIVE_JOIN


@pytest.mark.parametrize(
    ("position", "start", "message"),
    [(NULL_POSITION, 0, "is not active"), (4_096, 8_192, "beyond the live position")],
)
def test_replay_merge_fails_without_live_or_from_beyond_it(position: int, start: int, message: str) -> None:
    merge = merge_of(FakeArchive(position=position), FakeSubscription(FakeImage()), start)
    step(merge)
    with pytest.raises(ReplayMergeError, match=message) as caught:
        step(merge)
    assert caught.value.state is ReplayMergeState.GET_RECORDING_POSITION
    assert merge.has_failed
    with pytest.raises(ReplayMergeError):
        step(merge)  # stays failed


def test_replay_merge_fails_when_the_recording_stops_before_the_join() -> None:
    archive = FakeArchive(position=1_024)
    image = FakeImage(position=1_024)
    merge = merge_of(archive, FakeSubscription(image))
    for _ in range(4):
        step(merge)
    assert merge.state is ReplayMergeState.ATTEMPT_LIVE_JOIN
    archive.position = NULL_POSITION
    with pytest.raises(ReplayMergeError, match="stopped before the merge joined live"):
        step(merge)


def test_no_transition_outside_the_table() -> None:
    merge = merge_of(FakeArchive(), FakeSubscription())
    with pytest.raises(AssertionError, match="RESOLVE_REPLAY_PORT -> MERGED"):
        merge._to(ReplayMergeState.MERGED)


def catch_up_of(archive: FakeArchive, join: int, start: int, **options: Any) -> tuple[CatchUp, list[Any]]:
    subscribed: list[Any] = []

    def subscribe(channel: str, stream_id: int) -> FakeSubscription:
        subscribed.append((channel, stream_id))
        return FakeSubscription()

    live = FakeSubscription(FakeImage(position=join, join_position=join))
    catch_up = CatchUp(live, archive, subscribe, start, channel_fragment="aeron:ipc", **options)  # type: ignore[arg-type]
    return catch_up, subscribed


def test_catch_up_from_the_live_join_on_needs_no_history() -> None:
    archive = FakeArchive()
    catch_up, _ = catch_up_of(archive, 4_096, 4_096)
    catch_up.poll(lambda m: None)
    assert catch_up.state is CatchUpState.LIVE and archive.requests == []


def test_catch_up_replays_up_to_the_join_on_its_own_stream() -> None:
    archive = FakeArchive(found=9, start_position=0)
    catch_up, subscribed = catch_up_of(archive, 8_192, 1_024)
    for _ in range(4):
        catch_up.poll(lambda m: None)
    assert catch_up.state is CatchUpState.REPLAY
    assert archive.requests == [
        ("find", "aeron:ipc", STREAM_ID, SESSION_ID),
        ("list_recording", 9),
        ("start_replay", 9, 1_024, 8_192 - 1_024, "aeron:ipc", STREAM_ID + 1),
    ]
    assert subscribed == [("aeron:ipc?session-id=-2", STREAM_ID + 1)]


@pytest.mark.parametrize(
    ("found", "start_position", "earliest", "state"),
    [
        (NULL_RECORDING_ID, 0, 8_192, CatchUpState.FIND_RECORDING),
        (
            ArchiveError("min recording id outside valid range: 0", ArchiveErrorCode.UNKNOWN_RECORDING),
            0,
            8_192,
            CatchUpState.FIND_RECORDING,
        ),
        (4, 2_048, 2_048, CatchUpState.DESCRIBE_RECORDING),
    ],
)
def test_catch_up_history_unavailable_names_the_earliest_position(
    found: Any, start_position: int, earliest: int, state: CatchUpState
) -> None:
    archive = FakeArchive(found=found, start_position=start_position)
    catch_up, _ = catch_up_of(archive, 8_192, 1_024)
    with pytest.raises(HistoryUnavailable) as caught:
        for _ in range(4):
            catch_up.poll(lambda m: None)
    assert (caught.value.requested_position, caught.value.earliest_position) == (1_024, earliest)
    assert caught.value.state is state and catch_up.state is CatchUpState.FAILED


def test_catch_up_rejects_a_position_off_frame_boundaries() -> None:
    with pytest.raises(ValueError, match="multiple of 32"):
        catch_up_of(FakeArchive(), 0, 100)
