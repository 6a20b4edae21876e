"""ExclusiveTermAppender (exclusive publications): the caller tracks the offset, the tail is stored
(release) on every append, frames are committed exactly as the concurrent appender commits them."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.concurrent.logbuffer.buffer_claim import BufferClaim
from driver.concurrent.logbuffer.exclusive_term_appender import FAILED, TRIPPED, ExclusiveTermAppender
from driver.concurrent.logbuffer.header import Header
from driver.concurrent.logbuffer.term_reader import TermReader
from driver.protocol.frames import DATA_HEADER, HDR_TYPE_DATA, HDR_TYPE_PAD
from driver.util.bit_util import align, to_int32

T = 64 * 1024
SESSION_ID, STREAM_ID = -3, 9


class Log:
    def __init__(self, initial_term_id: int = 50, mtu: int = 1408) -> None:
        self.buffer = AtomicBuffer(bytearray(3 * T + lbd.LOG_META_DATA_LENGTH))
        self.terms = [self.buffer.slice(i * T, T) for i in range(3)]
        self.meta = self.buffer.slice(3 * T, lbd.LOG_META_DATA_LENGTH)
        self.initial_term_id = initial_term_id
        lbd.initialise_publication_metadata(
            self.meta,
            session_id=SESSION_ID,
            stream_id=STREAM_ID,
            initial_term_id=initial_term_id,
            mtu_length=mtu,
            term_length=T,
            page_size=4096,
            correlation_id=1,
        )
        self.template = lbd.default_frame_header(self.meta)

    def close(self) -> None:
        self.buffer.close()


@pytest.fixture
def log() -> Iterator[Log]:
    log = Log()
    yield log
    log.close()


def header_at(term: AtomicBuffer, offset: int) -> tuple:
    return DATA_HEADER.unpack_from(term.view, offset)


def test_unfragmented_append_stores_the_tail_and_commits_the_frame(log: Log) -> None:
    appender = ExclusiveTermAppender(log.terms[0], log.meta, 0)
    assert appender.append_unfragmented(50, 0, log.template, b"hello", reserved_value=3) == 64
    assert lbd.raw_tail(log.meta, 0) == lbd.pack_tail(50, 64)
    assert header_at(log.terms[0], 0) == (37, 0, 0xC0, HDR_TYPE_DATA, 0, SESSION_ID, STREAM_ID, 50, 3)
    assert log.terms[0].get_bytes(32, 5) == b"hello"
    assert appender.append_unfragmented(50, 64, log.template, memoryview(b"abc")) == 128
    assert lbd.raw_tail(log.meta, 0) == lbd.pack_tail(50, 128)
    assert appender.term_buffer is log.terms[0]


def test_negative_term_ids_pack_into_the_tail(log: Log) -> None:
    appender = ExclusiveTermAppender(log.terms[2], log.meta, 2)
    assert appender.append_unfragmented(-2, 1024, log.template, b"x") == 1088
    assert lbd.raw_tail(log.meta, 2) == lbd.pack_tail(-2, 1088)
    assert header_at(log.terms[2], 1024)[7] == -2


def test_term_end_pads_then_fails_when_exactly_full(log: Log) -> None:
    appender = ExclusiveTermAppender(log.terms[0], log.meta, 0)
    assert appender.append_unfragmented(50, T - 64, log.template, b"y" * 40) == TRIPPED
    assert header_at(log.terms[0], T - 64)[:4] == (64, 0, 0xC0, HDR_TYPE_PAD)
    assert lbd.raw_tail(log.meta, 0) == lbd.pack_tail(50, T - 64 + 96)
    assert appender.append_unfragmented(50, T - 64, log.template, b"y" * 32) == T
    assert appender.append_unfragmented(50, T, log.template, b"y") == FAILED
    assert lbd.raw_tail(log.meta, 0) == lbd.pack_tail(50, T + 64)


def test_fragmented_append(log: Log) -> None:
    appender = ExclusiveTermAppender(log.terms[1], log.meta, 1)
    message = random.Random(3).randbytes(3000)
    assert (
        appender.append_fragmented(51, 0, log.template, bytearray(message), 1376, reserved_value=-1) == 3104
    )
    assert [header_at(log.terms[1], o)[:3] for o in (0, 1408, 2816)] == [
        (1408, 0, 0x80),
        (1408, 0, 0),
        (280, 0, 0x40),
    ]
    assert header_at(log.terms[1], 2816)[-1] == -1
    payload = b"".join(log.terms[1].get_bytes(o + 32, n) for o, n in ((0, 1376), (1408, 1376), (2816, 248)))
    assert payload == message
    assert appender.append_fragmented(51, T - 1024, log.template, message, 1376) == TRIPPED
    assert header_at(log.terms[1], T - 1024)[:4] == (1024, 0, 0xC0, HDR_TYPE_PAD)
    with pytest.raises(ValueError, match="multiple of 32"):
        appender.append_fragmented(51, 0, log.template, message, 1000)


def test_claim_commit_and_abort(log: Log) -> None:
    appender = ExclusiveTermAppender(log.terms[0], log.meta, 0)
    claim = BufferClaim()
    assert appender.claim(50, 0, log.template, 20, claim) == 64
    assert log.terms[0].get_int32(0) == -52
    assert lbd.raw_tail(log.meta, 0) == lbd.pack_tail(50, 64)
    claim.put_bytes(b"c" * 20)
    claim.commit()
    assert header_at(log.terms[0], 0)[:4] == (52, 0, 0xC0, HDR_TYPE_DATA)
    assert appender.claim(50, 64, log.template, 0, claim) == 96
    claim.abort()
    assert header_at(log.terms[0], 64)[:4] == (32, 0, 0xC0, HDR_TYPE_PAD)
    assert appender.claim(50, T - 32, log.template, 1, claim) == TRIPPED
    assert not claim.is_claimed


def test_append_padding(log: Log) -> None:
    appender = ExclusiveTermAppender(log.terms[0], log.meta, 0)
    assert appender.append_padding(50, 0, log.template, 100) == 160
    assert header_at(log.terms[0], 0)[:5] == (132, 0, 0xC0, HDR_TYPE_PAD, 0)
    assert appender.append_padding(50, T - 64, log.template, 64) == TRIPPED
    assert header_at(log.terms[0], T - 64)[:4] == (64, 0, 0xC0, HDR_TYPE_PAD)


def test_bad_arguments(log: Log) -> None:
    appender = ExclusiveTermAppender(log.terms[0], log.meta, 0)
    with pytest.raises(TypeError):
        appender.append_unfragmented(50, 0, memoryview(log.template), b"x")
    with pytest.raises(ValueError, match="negative"):
        appender.claim(50, 0, log.template, -5, BufferClaim())
    with pytest.raises(ValueError, match="negative"):
        appender.append_padding(50, 0, log.template, -5)
    with pytest.raises(ValueError, match="partition -1"):
        ExclusiveTermAppender(log.terms[0], log.meta, -1)


@settings(max_examples=150, deadline=None)
@given(
    mtu=st.sampled_from([96, 1408, 8192]),
    initial_term_id=st.integers(-(2**31), 2**31 - 1),
    term_count=st.integers(0, 4),
    sizes=st.lists(st.integers(0, 9000), max_size=60),
    poll_every=st.integers(1, 5),
)
def test_reader_sees_every_exclusive_append_in_order(
    mtu: int, initial_term_id: int, term_count: int, sizes: list[int], poll_every: int
) -> None:
    log = Log(initial_term_id=initial_term_id, mtu=mtu)
    try:
        index = term_count % 3
        term_id = to_int32(initial_term_id + term_count)
        term = log.terms[index]
        appender = ExclusiveTermAppender(term, log.meta, index)
        max_payload = mtu - 32
        header = Header(initial_term_id, 16)
        reader = TermReader(batch_capacity=3)
        got: list[tuple] = []
        expected: list[tuple] = []
        term_offset = read_offset = 0
        tripped = False

        def handler(buffer: AtomicBuffer, offset: int, length: int, hdr: Header) -> None:
            got.append((buffer.get_bytes(offset, length), hdr.flags, hdr.position, hdr.term_id))

        for i, size in enumerate(sizes):
            message = random.Random(i).randbytes(size)
            if size <= max_payload:
                result = appender.append_unfragmented(term_id, term_offset, log.template, message)
            else:
                result = appender.append_fragmented(term_id, term_offset, log.template, message, max_payload)
            if result < 0:
                # Padded to the end (TRIPPED), or nothing to pad when the term was exactly full (FAILED).
                assert result == (FAILED if term_offset == T else TRIPPED)
                tripped = True
                break
            chunks = [message[j : j + max_payload] for j in range(0, len(message), max_payload)] or [b""]
            offset = term_offset
            for k, chunk in enumerate(chunks):
                flags = (0x80 if k == 0 else 0) | (0x40 if k == len(chunks) - 1 else 0)
                offset += align(len(chunk) + 32, 32)
                expected.append((chunk, flags, term_count * T + offset, term_id))
            assert result == offset
            term_offset = result
            assert lbd.raw_tail(log.meta, index) == lbd.pack_tail(term_id, term_offset)
            if i % poll_every == 0:
                _, read_offset = reader.read(term, read_offset, handler, 4, header)
                assert got == expected[: len(got)]

        while True:
            count, read_offset = reader.read(term, read_offset, handler, 100, header)
            if not count:
                break
        assert got == expected
        assert read_offset == (T if tripped else term_offset)
    finally:
        log.close()


def recorded_frames(lengths: list[int], session_id: int, stream_id: int, term_id: int) -> bytearray:
    """Frames as a recording holds them (another session and stream), each payload filled with its index."""
    source = Log()
    try:
        appender = ExclusiveTermAppender(source.terms[0], source.meta, 0)
        template = bytearray(source.template)
        DATA_HEADER.pack_into(template, 0, 0, 1, 0xC0, HDR_TYPE_DATA, 0, session_id, stream_id, term_id, 0)
        offset = 0
        for i, length in enumerate(lengths):
            offset = appender.append_unfragmented(term_id, offset, bytes(template), bytes([i]) * length, i)
        return bytearray(source.terms[0].view[:offset])
    finally:
        source.close()


def test_append_block_copies_whole_frames_with_this_session_and_stream(log: Log) -> None:
    appender = ExclusiveTermAppender(log.terms[0], log.meta, 0)
    block = recorded_frames([10, 100, 1000], session_id=77, stream_id=88, term_id=50)
    frames = [align(32 + n, 32) for n in (10, 100, 1000)]
    # The limit lets the frame that begins below it in whole; the next one waits.
    resulting = appender.append_block(50, 0, block, len(block), frames[0] + 1, SESSION_ID, STREAM_ID)
    assert resulting == frames[0] + frames[1]
    assert lbd.raw_tail_volatile(log.meta, 0) == (50 << 32) | resulting
    reader = TermReader()
    seen: list[tuple[int, int, int, int]] = []

    def on_fragment(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        seen.append((length, header.session_id, header.stream_id, header.reserved_value))

    reader.read(log.terms[0], 0, on_fragment, 10, Header(50, 16))
    assert seen == [(10, SESSION_ID, STREAM_ID, 0), (100, SESSION_ID, STREAM_ID, 1)]


def test_append_block_stops_at_a_hole_and_at_a_cut_frame(log: Log) -> None:
    appender = ExclusiveTermAppender(log.terms[0], log.meta, 0)
    block = recorded_frames([10, 10], session_id=77, stream_id=88, term_id=50)
    assert appender.append_block(50, 0, block, len(block) - 1, T, SESSION_ID, STREAM_ID) == 64  # second cut
    holed = block + bytearray(64)  # zeros after the frames: no frame there
    appender2 = ExclusiveTermAppender(log.terms[1], log.meta, 1)
    assert appender2.append_block(51, 0, holed, len(holed), T, SESSION_ID, STREAM_ID) == 128
    assert log.terms[1].get_int32(128) == 0
