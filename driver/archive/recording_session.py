"""RecordingSession: records one image into its segment files (docs/archive.md section 6).

INIT opens the segment file of the join position and announces RecordingStarted; RECORDING block-polls the image
(at most min(term length, 2 MiB) a time), writes each block and then moves ``rec-pos`` and announces progress;
INACTIVE announces RecordingStopped and closes the file; STOPPED is final, and the recorder then tells the
conductor the stop position (what is on disk) and any error.
"""

from __future__ import annotations

import enum

from driver.archive.archive_context import MAX_BLOCK_LENGTH
from driver.archive.checksums import ChecksumWriter
from driver.archive.control_response_proxy import RecordingEventsProxy
from driver.archive.recording_index import RecordingIndexWriter
from driver.archive.recording_writer import RecordingWriteError, RecordingWriter
from driver.archive.state import StateMachine
from driver.client.counter import Counter
from driver.client.image import Image
from driver.concurrent.atomic_buffer import AtomicBuffer


class State(enum.Enum):
    INIT = "INIT"
    RECORDING = "RECORDING"
    INACTIVE = "INACTIVE"
    STOPPED = "STOPPED"


TRANSITIONS: dict[tuple[State, str], State] = {
    (State.INIT, "opened"): State.RECORDING,
    (State.INIT, "failed"): State.INACTIVE,
    (State.INIT, "abort"): State.INACTIVE,
    (State.RECORDING, "end_of_stream"): State.INACTIVE,
    (State.RECORDING, "failed"): State.INACTIVE,
    (State.RECORDING, "abort"): State.INACTIVE,
    (State.INACTIVE, "closed"): State.STOPPED,
}


class RecordingSession:
    def __init__(
        self,
        recording_id: int,
        image: Image,
        position: Counter,
        writer: RecordingWriter,
        events: RecordingEventsProxy,
        original_channel: str,
        index: RecordingIndexWriter | None = None,
    ) -> None:
        self.recording_id = recording_id
        self.image = image
        self.position = position
        self.writer = writer
        self.events = events
        self.original_channel = original_channel
        self.join_position = image.join_position
        self.recorded_position = image.join_position
        self.block_length = min(image.term_length, MAX_BLOCK_LENGTH)
        self.machine = StateMachine(TRANSITIONS, State.INIT)
        self.error: str | None = None
        self.index = index
        self.checksums: ChecksumWriter | None = None
        self._on_block = writer.on_block
        if index is not None:
            self.use_index()

    @property
    def state(self) -> State:
        return self.machine.state

    @property
    def is_done(self) -> bool:
        return self.machine.state is State.STOPPED

    def abort(self) -> None:
        self.machine.on("abort")

    def do_work(self) -> int:
        work = 0
        if self.machine.state is State.INIT:
            work += self._init()
        if self.machine.state is State.RECORDING:
            work += self._record()
        if self.machine.state is State.INACTIVE:
            self.events.stopped(self.recording_id, self.join_position, self.recorded_position)
            self.writer.close()
            self.writer.discard_reserved()
            if self.index is not None:
                self.index.close()
            if self.checksums is not None:
                self.checksums.close()
            self.machine.on("closed")
            work += 1
        return work

    def _init(self) -> int:
        try:
            self.writer.init(self.join_position)
            if self.index is not None:
                self.index.init(self.join_position, self.index_count)
            if self.checksums is not None:
                self.checksums.init(self.join_position)
        except (RecordingWriteError, OSError) as e:
            self.error = str(e)
            self.machine.on("failed")
            return 1
        image = self.image
        self.events.started(
            self.recording_id,
            self.join_position,
            image.session_id,
            image.stream_id,
            self.original_channel,
            image.source_identity,
        )
        self.machine.on("opened")
        return 1

    def use_index(self) -> None:
        """Blocks go to the sidecars (index, checksums) too, after the segment file."""
        self._on_block = self._write_and_index

    index_count = 0
    """Messages already recorded below the join position (an extended recording's index continues)."""

    def _write_and_index(
        self,
        term_buffer: AtomicBuffer,
        term_offset: int,
        length: int,
        session_id: int,
        term_id: int,
        messages: int = -1,
    ) -> None:
        position = self.writer.position
        self.writer.on_block(term_buffer, term_offset, length, session_id, term_id)
        if self.index is not None:
            self.index.on_block(term_buffer, term_offset, length, messages)
        if self.checksums is not None:
            self.checksums.on_block(term_buffer, term_offset, length, position)

    def _record(self) -> int:
        image = self.image
        try:
            if self._on_block == self._write_and_index:  # the index counts messages: found in the block's walk
                length = image.block_poll_counting(self._write_and_index, self.block_length)
            else:
                length = image.block_poll(self._on_block, self.block_length)
        except RecordingWriteError as e:
            # The image did not move past the block: the stop position is what reached the file.
            self.error = str(e)
            self.machine.on("failed")
            return 1
        if length > 0:
            self.recorded_position = image.position
            self.position.set(self.recorded_position)
            self.events.progress(self.recording_id, self.join_position, self.recorded_position)
            return 1
        if image.is_closed or image.is_end_of_stream:
            self.machine.on("end_of_stream")
            return 1
        return 0
