"""Image.block_poll / raw_poll (what the archive recorder reads): whole runs of committed frames as they lie
in the term, padding included as a block of its own, never past the term end or the limit, and the position
moved only once the handler has taken the block."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

import pytest

from driver.client import Aeron, ExclusivePublication, Image
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.protocol.frames import HDR_TYPE_DATA, HDR_TYPE_PAD, HEADER_LENGTH, TYPE_OFFSET

CHANNEL = "aeron:ipc?term-length=64k"
TERM_LENGTH = 64 * 1024


def wait_until(predicate: Callable[[], object], timeout_s: float = 5.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.001)


class Blocks:
    def __init__(self) -> None:
        self.blocks: list[tuple[int, int, int, int, bytes]] = []

    def __call__(self, buffer: AtomicBuffer, offset: int, length: int, session_id: int, term_id: int) -> None:
        self.blocks.append((offset, length, session_id, term_id, buffer.get_bytes(offset, length)))


def frame_types(block: bytes) -> list[int]:
    types, offset = [], 0
    while offset < len(block):
        frame_length = int.from_bytes(block[offset : offset + 4], "little")
        types.append(block[offset + TYPE_OFFSET])
        offset += (frame_length + 31) & ~31
    return types


@pytest.fixture
def stream(embedded_driver) -> Iterator[tuple[ExclusivePublication, Image, Aeron]]:
    driver = embedded_driver()
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        subscription = aeron.add_subscription(CHANNEL, 2001)
        publication = aeron.add_exclusive_publication(CHANNEL, 2001)
        wait_until(lambda: publication.is_connected and subscription.images, what="connection")
        yield publication, subscription.images[0], aeron


def offer(publication: ExclusivePublication, data: bytes) -> int:
    result = publication.offer(data)
    assert result > 0, result
    return result


def test_blocks_of_whole_frames_up_to_the_limit(stream) -> None:
    publication, image, _ = stream
    for i in range(3):
        offer(publication, bytes([i]) * 100)  # 132-byte frames, 160 aligned
    blocks = Blocks()
    assert image.block_poll(blocks, 400) == 320  # a third frame would cross the limit
    assert image.position == 320
    assert image.block_poll(blocks, 100) == 0  # less than one frame: nothing, position kept
    assert image.block_poll(blocks, 4096) == 160
    assert [(b[0], b[1], b[2], b[3]) for b in blocks.blocks] == [
        (0, 320, publication.session_id, publication.initial_term_id),
        (320, 160, publication.session_id, publication.initial_term_id),
    ]
    assert blocks.blocks[0][4][HEADER_LENGTH : HEADER_LENGTH + 100] == bytes(100)
    assert image.block_poll(blocks, 4096) == 0  # nothing more committed


def test_padding_is_handed_over_as_a_block_of_its_own(stream) -> None:
    publication, image, _ = stream
    offer(publication, b"a" * 100)
    publication.append_padding(1000)  # 1032-byte pad frame, 1056 aligned
    offer(publication, b"b" * 100)
    blocks = Blocks()
    assert image.block_poll(blocks, 8192) == 160  # stops where the padding begins
    assert image.block_poll(blocks, 64) == 1056  # the pad whole, even past the limit
    assert image.block_poll(blocks, 8192) == 160
    assert [frame_types(b[4]) for b in blocks.blocks] == [[HDR_TYPE_DATA], [HDR_TYPE_PAD], [HDR_TYPE_DATA]]
    assert image.position == 160 + 1056 + 160
    assert image._subscriber_position.get() == image.position  # what the driver and publisher see


def publish_past_the_first_term(publication: ExclusivePublication, image: Image, poll) -> None:
    """Offer 1000-byte messages (1056 aligned: 62 fill 65472 bytes of a term, 64 bytes of padding end it)
    until one lands in the second term, polling as the publication's window requires (a recorder's loop)."""
    data = b"x" * 1000
    position = 0
    while position <= TERM_LENGTH:
        result = publication.offer(data)
        if result > 0:
            position = result
        poll()
    deadline = time.monotonic() + 5
    while image.position < position:
        poll()
        assert time.monotonic() < deadline, "image did not reach the publication's position"
    assert position == TERM_LENGTH + 1056


def test_a_block_never_crosses_the_term_end(stream) -> None:
    publication, image, _ = stream
    blocks = Blocks()
    publish_past_the_first_term(publication, image, lambda: image.block_poll(blocks, TERM_LENGTH))
    first_term = [b for b in blocks.blocks if b[3] == publication.initial_term_id]
    second_term = [b for b in blocks.blocks if b[3] == publication.initial_term_id + 1]
    assert all(b[0] + b[1] <= TERM_LENGTH for b in first_term)
    assert sum(b[1] for b in first_term) == TERM_LENGTH
    # The term's end padding comes alone, last; the next term starts at offset 0.
    assert (first_term[-1][0], first_term[-1][1]) == (62 * 1056, 64)
    assert frame_types(first_term[-1][4]) == [HDR_TYPE_PAD]
    assert all(set(frame_types(b[4])) == {HDR_TYPE_DATA} for b in first_term[:-1])
    assert [(b[0], b[1]) for b in second_term] == [(0, 1056)]
    assert image.position == TERM_LENGTH + 1056


def test_a_raising_handler_does_not_move_the_position(stream) -> None:
    publication, image, _ = stream
    offer(publication, b"c" * 100)

    def disk_full(*_args: object) -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        image.block_poll(disk_full, 4096)
    assert image.position == 0 and image._subscriber_position.get() == 0
    with pytest.raises(OSError, match="No space left"):
        image.raw_poll(disk_full, 4096)
    assert image.position == 0
    blocks = Blocks()
    assert image.block_poll(blocks, 4096) == 160  # the same block again
    assert blocks.blocks[0][0] == 0


def test_raw_poll_says_where_the_block_lies_in_the_log_file(stream) -> None:
    publication, image, _ = stream
    seen: list[tuple[int, int, int, int, int]] = []

    def on_block(log_file, file_offset, buffer, term_offset, length, session_id, term_id) -> None:
        fd = os.open(log_file, os.O_RDONLY)
        try:
            on_disk = os.pread(fd, length, file_offset)
        finally:
            os.close(fd)
        assert on_disk == buffer.get_bytes(term_offset, length)
        assert session_id == publication.session_id
        seen.append((file_offset, term_offset, length, term_id - publication.initial_term_id))

    publish_past_the_first_term(publication, image, lambda: image.raw_poll(on_block, TERM_LENGTH))
    assert all(file_offset == term_offset + TERM_LENGTH * term for file_offset, term_offset, _, term in seen)
    assert seen[-2:] == [(62 * 1056, 62 * 1056, 64, 0), (TERM_LENGTH, 0, 1056, 1)]


def test_what_a_recorder_reads_from_an_image_and_a_publication(stream) -> None:
    publication, image, _ = stream
    assert image.join_position == 0
    assert image.term_length == TERM_LENGTH
    assert image.mtu_length == publication.mtu_length
    assert image.initial_term_id == publication.initial_term_id
    assert image.session_id == publication.session_id
    assert image.source_identity
    assert not image.is_end_of_stream and not image.is_closed
    assert publication.is_connected
    assert publication.position == 0
    assert publication.max_possible_position == TERM_LENGTH * (1 << 31)
    assert publication.append_padding(0) == 32
    with pytest.raises(ValueError, match="negative"):
        publication.append_padding(-1)
    publication.close()
    assert publication.append_padding(10) < 0
