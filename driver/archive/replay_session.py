"""ReplaySession: sends a recording (or part of it) again on a replay publication (docs/archive.md section 8).

INIT checks, when the replay starts inside the recording, that a frame header of the recording's stream, term
id and term offset is at the replay position (read where the writer put it, ``segment_position``, so a recording
that joined late replays from any frame boundary), then waits for the publication to connect until the connect
deadline. REPLAY reads at most min(remaining, 2 MiB, rest of the term) and puts the whole frames it read into
the replay publication's term in one copy (``offer_block``: the publication was made at the recording's term id
and offset, so only session and stream ids change); what that leaves -- a padding frame the read cut short, a
frame past the publication limit -- goes frame by frame, DATA through try_claim (flags and reserved value kept)
and PAD through append_padding, until the limit; a live
recording is followed through its position until it stops. A frame that is neither DATA nor PAD below the
recorded position (a hole) is an error the client hears of, as is every other error after the OK.
"""

from __future__ import annotations

import enum
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from driver.archive.archive_context import MAX_BLOCK_LENGTH
from driver.archive.checksums import ReplayChecker
from driver.archive.replay_controls import ReplayControls
from driver.archive.segment_file import segment_file_name, segment_path, segment_position
from driver.archive.state import StateMachine
from driver.client.offer_result import ADMIN_ACTION, CLOSED, NOT_CONNECTED
from driver.client.publication import ExclusivePublication
from driver.concurrent.logbuffer.buffer_claim import BufferClaim
from driver.concurrent.logbuffer.frame_descriptor import (
    FRAME_ALIGNMENT,
    HDR_TYPE_DATA,
    HDR_TYPE_PAD,
    HEADER_LENGTH,
    RESERVED_VALUE_OFFSET,
)
from driver.util.bit_util import align, to_int32

# frame length i32 @0, version u8 @4, flags u8 @5, type u16 @6, term offset i32 @8, session i32 @12,
# stream i32 @16, term id i32 @20 (docs/wire.md)
_FRAME = struct.Struct("<iBBHiiii")
_I64 = struct.Struct("<q")


class State(enum.Enum):
    INIT = "INIT"
    REPLAY = "REPLAY"
    INACTIVE = "INACTIVE"
    DONE = "DONE"


TRANSITIONS: dict[tuple[State, str], State] = {
    (State.INIT, "connected"): State.REPLAY,
    (State.INIT, "failed"): State.INACTIVE,
    (State.INIT, "abort"): State.INACTIVE,
    (State.REPLAY, "complete"): State.INACTIVE,
    (State.REPLAY, "failed"): State.INACTIVE,
    (State.REPLAY, "abort"): State.INACTIVE,
    (State.REPLAY, "disconnected"): State.INACTIVE,
    (State.INACTIVE, "closed"): State.DONE,
}


class RecordingSummary(NamedTuple):
    recording_id: int
    start_position: int
    stop_position: int
    initial_term_id: int
    segment_file_length: int
    term_buffer_length: int
    mtu_length: int
    stream_id: int


LivePosition = Callable[[], tuple[int, bool]]
"""For a live recording: (recorded position, whether the recording has stopped)."""


def header_error(archive_dir: Path, summary: RecordingSummary, position: int) -> str | None:
    """None when a frame header of the recording is at ``position``, else why not (1.15.1's text)."""
    term_length = summary.term_buffer_length
    index, offset = segment_position(
        summary.start_position, position, term_length, summary.segment_file_length
    )
    path = segment_path(archive_dir, summary.recording_id, index)
    try:
        with open(path, "rb") as f:
            raw = os.pread(f.fileno(), HEADER_LENGTH, offset)
    except FileNotFoundError:
        return f"recording segment not found {path.name}"
    if len(raw) < HEADER_LENGTH:
        return f"{position} position not aligned to data header"
    _, _, _, _, term_offset, _, stream_id, term_id = _FRAME.unpack_from(raw)
    expected_term_id = to_int32(summary.initial_term_id + (position // term_length))
    if (
        term_offset != position & (term_length - 1)
        or term_id != expected_term_id
        or stream_id != summary.stream_id
    ):
        return f"{position} position not aligned to data header"
    return None


class ReplaySession:
    def __init__(
        self,
        replay_session_id: int,
        correlation_id: int,
        control_session_id: int,
        summary: RecordingSummary,
        replay_position: int,
        replay_limit: int,
        publication: ExclusivePublication,
        archive_dir: Path,
        connect_deadline_ms: int,
        live_position: LivePosition | None,
        controls: ReplayControls | None = None,
    ) -> None:
        self.replay_session_id = replay_session_id
        self.correlation_id = correlation_id
        self.control_session_id = control_session_id
        self.summary = summary
        self.recording_id = summary.recording_id
        self.replay_position = replay_position
        self.replay_limit = replay_limit
        self.publication = publication
        self.archive_dir = archive_dir
        self.connect_deadline_ms = connect_deadline_ms
        self._live_position = live_position
        self.controls = controls
        self._first_position = replay_position
        if live_position is not None:
            self.stop_position, _ = live_position()
        else:
            self.stop_position = summary.stop_position
        self.machine = StateMachine(TRANSITIONS, State.INIT)
        self.error: str | None = None
        self._checked_header = False
        self._fd = -1
        self._segment_index = -1
        self._buffer = bytearray(min(MAX_BLOCK_LENGTH, summary.term_buffer_length))
        self._view = memoryview(self._buffer)
        self._claim = BufferClaim()
        self.checksums: ReplayChecker | None = None

    @property
    def state(self) -> State:
        return self.machine.state

    @property
    def is_done(self) -> bool:
        return self.machine.state is State.DONE

    def abort(self) -> None:
        self.machine.on("abort")

    def _fail(self, message: str) -> None:
        self.error = message
        self.machine.on("failed")

    def do_work(self, now_ms: int) -> int:
        work = 0
        if self.machine.state is State.INIT:
            work += self._init(now_ms)
        if self.machine.state is State.REPLAY:
            work += self._replay()
        if self.machine.state is State.INACTIVE:
            self._close_segment()
            if self.checksums is not None:
                self.checksums.close()
            self.publication.close()
            self.machine.on("closed")
            work += 1
        return work

    # -- INIT ------------------------------------------------------------------------------------------------------

    def _init(self, now_ms: int) -> int:
        if not self._checked_header:
            self._checked_header = True
            position = self.replay_position
            if position > self.summary.start_position and position != self.stop_position:
                error = header_error(self.archive_dir, self.summary, position)
                if error is not None:
                    self._fail(error)
                    return 1
        if not self.publication.is_connected:
            if now_ms > self.connect_deadline_ms:
                self._fail("no connection established for replay")
                return 1
            return 0
        self.machine.on("connected")
        return 1

    # -- REPLAY ----------------------------------------------------------------------------------------------------

    def _refresh_live(self) -> bool:
        """For a live recording at its recorded position: True when there is new data to send."""
        assert self._live_position is not None
        position, stopped = self._live_position()
        if stopped and position < self.replay_limit:
            self.replay_limit = position
        if self.replay_position >= self.replay_limit:
            self._complete()
            return False
        if position > self.stop_position:
            self.stop_position = position
            return True
        return False

    def _replay(self) -> int:
        if self.replay_position >= self.stop_position:
            if self._live_position is None:
                self._complete()
                return 0
            if not self._refresh_live():
                return 0
        bound = self.stop_position
        if self.controls is not None:
            limit = self.controls.limit(self.replay_position)
            if limit is None:
                self.machine.on("complete")  # the bound is gone (a freed counter): the replay ends cleanly
                return 1
            if limit < bound:
                bound = limit
                if self.replay_position + HEADER_LENGTH > bound:
                    return 0
        publication = self.publication
        if publication.position_limit - publication.position <= 0:
            if not publication.is_connected:
                self.machine.on("disconnected")
            return 0
        summary = self.summary
        term_length = summary.term_buffer_length
        position = self.replay_position
        term_offset = position & (term_length - 1)
        length = min(bound - position, len(self._buffer), term_length - term_offset)
        bytes_read = self._read(position, length)
        if bytes_read < 0:
            return 1
        if self.checksums is not None:
            mismatch = self.checksums.check(self._buffer, position, bytes_read)
            if mismatch is not None:
                self._fail(f"replay recording {self.recording_id} - {mismatch}")
                return 1
        view = self._view
        frame_offset = 0
        fragments = 0
        # Whole runs of frames go in one copy; what the block could not take (a padding frame cut by the read,
        # a hole, back pressure, a closed publication) is left to the frame by frame path below.
        # Only while the publication stands where the recording does: the copied headers keep their recorded
        # term ids and offsets (a repeated round starts the recording again further along the publication).
        result = 0
        if publication.position == position:
            result = publication.offer_block(
                self._buffer, bytes_read, min(bound, self.replay_limit) - position
            )
            if result == ADMIN_ACTION:
                result = publication.offer_block(
                    self._buffer, bytes_read, min(bound, self.replay_limit) - position
                )
        if result > position:
            frame_offset = result - position
            position = result
            self.replay_position = position
            fragments = 1
            if position >= self.replay_limit:
                self._complete()
                return fragments
        claim = self._claim
        while frame_offset < bytes_read:
            if bytes_read - frame_offset < HEADER_LENGTH:
                break
            frame_length, _, flags, frame_type, *_ = _FRAME.unpack_from(view, frame_offset)
            if frame_length < HEADER_LENGTH or frame_type not in (HDR_TYPE_DATA, HDR_TYPE_PAD):
                self._fail(
                    f"replay recording {self.recording_id} - no frame at position {position} in "
                    f"{self._segment_name()}: the segment has a hole where data was recorded"
                )
                return fragments + 1
            aligned_length = align(frame_length, FRAME_ALIGNMENT)
            if position + aligned_length > bound:
                break  # a padding frame's header is read whole, but the frame must not cross the bound either
            data_length = frame_length - HEADER_LENGTH
            if frame_type == HDR_TYPE_DATA:
                if frame_offset + aligned_length > bytes_read:
                    break
                result = publication.try_claim(data_length, claim)
                if result > 0:
                    data_offset = frame_offset + HEADER_LENGTH
                    claim.buffer.view[claim.offset : claim.offset + data_length] = view[
                        data_offset : data_offset + data_length
                    ]
                    claim.flags = flags
                    claim.reserved_value = _I64.unpack_from(view, frame_offset + RESERVED_VALUE_OFFSET)[0]
                    claim.commit()
            else:
                result = publication.append_padding(data_length)
            if result > 0:
                fragments += 1
                frame_offset += aligned_length
                position += aligned_length
                self.replay_position = position
                if position >= self.replay_limit:
                    self._complete()
                    break
            else:
                if result in (CLOSED, NOT_CONNECTED):
                    self._fail("stream closed before replay is complete")
                break
        return fragments

    def _complete(self) -> None:
        if self.controls is not None and self.controls.next_round():
            self.replay_position = self._first_position
            return
        self.machine.on("complete")

    def _segment_name(self) -> str:
        return segment_file_name(self.recording_id, self._segment_index)

    def _read(self, position: int, length: int) -> int:
        """Bytes read at ``position`` into the buffer (-1 after failing the session)."""
        summary = self.summary
        index, offset = segment_position(
            summary.start_position, position, summary.term_buffer_length, summary.segment_file_length
        )
        if index != self._segment_index:
            self._close_segment()
            path = segment_path(self.archive_dir, self.recording_id, index)
            try:
                self._fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                self._fail(f"recording segment not found {path.name}")
                return -1
            except OSError as e:
                self._fail(
                    f"replay recording {self.recording_id} - cannot open {path.name}: {e.strerror or e}"
                )
                return -1
            self._segment_index = index
        try:
            return os.preadv(self._fd, [self._view[:length]], offset)
        except OSError as e:
            self._fail(f"IOException - {e.strerror or e} - {self._segment_name()}")
            return -1

    def _close_segment(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            self._segment_index = -1
