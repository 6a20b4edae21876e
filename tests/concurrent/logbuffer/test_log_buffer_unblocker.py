"""LogBufferUnblocker / TermUnblocker (1.15.1): an abandoned claim, or a hole a dead publisher reserved but
never wrote, becomes a PAD frame with the log's default header; a hole up to the term's end also rotates the
log; a log stuck exactly at a term boundary is rotated; anything else is left alone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.concurrent.logbuffer.log_buffer_unblocker import TermUnblockStatus, unblock, unblock_term
from driver.protocol.frames import DATA_HEADER, HDR_TYPE_DATA, HDR_TYPE_PAD, create_default_header

T = 64 * 1024
INITIAL_TERM_ID = 100


class Log:
    def __init__(self) -> None:
        self.meta = AtomicBuffer(bytearray(lbd.LOG_META_DATA_LENGTH))
        lbd.store_default_frame_header(self.meta, create_default_header(42, 7, INITIAL_TERM_ID))
        self.terms = [AtomicBuffer(bytearray(T)) for _ in range(3)]
        # As a new log: partition 0 holds the initial term, the others the terms three before theirs.
        lbd.initialise_tail_with_term_id(self.meta, 0, INITIAL_TERM_ID)
        for index in (1, 2):
            lbd.initialise_tail_with_term_id(self.meta, index, INITIAL_TERM_ID + index - 3)

    def data(self, index: int, offset: int, length: int, term_id: int = INITIAL_TERM_ID) -> None:
        DATA_HEADER.pack_into(
            self.terms[index].view, offset, length, 0, 0xC0, HDR_TYPE_DATA, offset, 42, 7, term_id, 0
        )

    def tail(self, index: int, term_id: int, offset: int) -> None:
        lbd.set_raw_tail(self.meta, index, lbd.pack_tail(term_id, offset))

    def header(self, index: int, offset: int) -> tuple:
        return DATA_HEADER.unpack_from(self.terms[index].view, offset)

    def close(self) -> None:
        for buffer in (*self.terms, self.meta):
            buffer.close()


@pytest.fixture
def log() -> Iterator[Log]:
    log = Log()
    yield log
    log.close()


def test_an_uncommitted_claim_becomes_padding(log: Log) -> None:
    log.data(0, 0, 96)
    # A claim writes its header with a negative length, and the commit makes it positive; this one never did.
    DATA_HEADER.pack_into(log.terms[0].view, 96, -160, 0, 0xC0, HDR_TYPE_DATA, 96, 42, 7, INITIAL_TERM_ID, 0)
    log.data(0, 256, 64)
    log.tail(0, INITIAL_TERM_ID, 320)
    assert unblock(log.terms, log.meta, 96, T)
    assert log.header(0, 96) == (160, 0, 0xC0, HDR_TYPE_PAD, 96, 42, 7, INITIAL_TERM_ID, 0)
    assert log.header(0, 256)[0] == 64  # the next message is untouched


def test_an_unwritten_hole_before_a_later_frame_becomes_padding(log: Log) -> None:
    log.data(0, 0, 64)
    log.data(0, 64 + 192, 64)  # the dead publisher reserved 64..256 and wrote nothing
    log.tail(0, INITIAL_TERM_ID, 320)
    assert unblock_term(log.meta, log.terms[0], 64, 320, INITIAL_TERM_ID) is TermUnblockStatus.UNBLOCKED
    assert log.header(0, 64)[:5] == (192, 0, 0xC0, HDR_TYPE_PAD, 64)


def test_a_hole_to_the_end_of_the_term_pads_it_and_rotates(log: Log) -> None:
    log.data(0, 0, T - 1024)
    log.tail(0, INITIAL_TERM_ID, T + 64)  # tail past the end: the publisher died before padding and rotating
    assert lbd.active_term_count(log.meta) == 0
    assert unblock(log.terms, log.meta, T - 1024, T)
    assert log.header(0, T - 1024)[:5] == (1024, 0, 0xC0, HDR_TYPE_PAD, T - 1024)
    assert lbd.active_term_count(log.meta) == 1
    assert lbd.term_id(lbd.raw_tail(log.meta, 1)) == INITIAL_TERM_ID + 1


def test_a_log_stuck_at_a_term_boundary_is_rotated(log: Log) -> None:
    log.data(0, 0, T)  # the term is full; whoever filled it died before rotating
    log.tail(0, INITIAL_TERM_ID, T)
    assert unblock(log.terms, log.meta, T, T)
    assert lbd.active_term_count(log.meta) == 1


def test_a_written_frame_or_a_hole_still_being_filled_is_left_alone(log: Log) -> None:
    log.data(0, 0, 64)
    log.tail(0, INITIAL_TERM_ID, 64)
    before = [t.get_bytes(0, T) for t in log.terms]
    assert not unblock(log.terms, log.meta, 0, T)  # a committed frame: nothing blocked
    assert not unblock(log.terms, log.meta, 64, T)  # nothing after the hole yet: it may still be written
    assert [t.get_bytes(0, T) for t in log.terms] == before
    assert lbd.active_term_count(log.meta) == 0
