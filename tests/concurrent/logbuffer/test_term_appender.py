"""A concurrent publication's writes to its log: offers (the client's NativeOffer, through tests/support
LogWriter) and claims (TermAppender.claim). Frame layout, the term end (padding once, then rotation), claims,
and the reader seeing exactly what was written, including two processes writing to one term at once."""

from __future__ import annotations

import random
import struct
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from driver._native import lib
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.concurrent.logbuffer.buffer_claim import BufferClaim, BufferClaimError
from driver.concurrent.logbuffer.header import Header
from driver.concurrent.logbuffer.log_buffers import LogBuffers, create_log_file
from driver.concurrent.logbuffer.term_appender import FAILED, TRIPPED, TermAppender, TermIdMismatchError
from driver.concurrent.logbuffer.term_cleaner import clean
from driver.concurrent.logbuffer.term_reader import TermReader
from driver.protocol.frames import DATA_HEADER, HDR_TYPE_DATA, HDR_TYPE_PAD
from driver.util.bit_util import align, to_int32
from tests.support import LogWriter
from tests.support.log_writer import ADMIN_ACTION

T = 64 * 1024
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
SESSION_ID, STREAM_ID = 77, 1001
REPO = Path(__file__).resolve().parents[3]


class Log:
    """An in-memory publication log: three terms and the metadata, as the driver initialises it."""

    def __init__(self, initial_term_id: int = 1000, mtu: int = 1408, term_length: int = T) -> None:
        self.term_length = term_length
        self.initial_term_id = initial_term_id
        self.mtu = mtu
        self.buffer = AtomicBuffer(bytearray(3 * term_length + lbd.LOG_META_DATA_LENGTH))
        self.terms = [self.buffer.slice(i * term_length, term_length) for i in range(3)]
        self.meta = self.buffer.slice(3 * term_length, lbd.LOG_META_DATA_LENGTH)
        lbd.initialise_publication_metadata(
            self.meta,
            session_id=SESSION_ID,
            stream_id=STREAM_ID,
            initial_term_id=initial_term_id,
            mtu_length=mtu,
            term_length=term_length,
            page_size=4096,
            correlation_id=1,
        )
        self.template = lbd.default_frame_header(self.meta)
        self.writer = LogWriter(self.terms, self.meta)

    def start_term(self, term_count: int) -> tuple[int, int]:
        """Make ``term_count`` the active term; (partition index, term id)."""
        index = term_count % 3
        term_id = to_int32(self.initial_term_id + term_count)
        lbd.set_raw_tail(self.meta, index, lbd.pack_tail(term_id, 0))
        lbd.set_active_term_count(self.meta, term_count)
        return index, term_id

    def close(self) -> None:
        self.buffer.close()


@pytest.fixture
def log() -> Iterator[Log]:
    log = Log()
    yield log
    log.close()


def frames(term: AtomicBuffer, offset: int = 0) -> list[tuple]:
    """The frames from ``offset`` (plain walk to the first zero length), as header tuples plus payload."""
    found = []
    while offset < term.capacity:
        fields = DATA_HEADER.unpack_from(term.view, offset)
        length = fields[0]
        if length == 0:
            break
        payload_length = max(0, abs(length) - 32) if fields[3] == HDR_TYPE_DATA else 0
        found.append((offset, *fields, term.get_bytes(offset + 32, payload_length)))
        offset += align(abs(length), 32)
    return found


def test_sentinels_match_the_native_results() -> None:
    assert (TRIPPED, FAILED) == (lib.AMD_APPEND_TRIPPED, lib.AMD_APPEND_FAILED)
    assert lib.AMD_APPEND_TERM_ID_MISMATCH < FAILED


def test_unfragmented_frame_layout_and_tail(log: Log) -> None:
    assert log.writer.offer(b"hello") == 64
    assert log.writer.offer(bytearray(b"x" * 32), reserved_value=-5) == 128
    assert log.writer.offer(b"") == 160
    assert frames(log.terms[0]) == [
        (0, 37, 0, 0xC0, HDR_TYPE_DATA, 0, SESSION_ID, STREAM_ID, 1000, 0, b"hello"),
        (64, 64, 0, 0xC0, HDR_TYPE_DATA, 64, SESSION_ID, STREAM_ID, 1000, -5, b"x" * 32),
        (128, 32, 0, 0xC0, HDR_TYPE_DATA, 128, SESSION_ID, STREAM_ID, 1000, 0, b""),
    ]
    assert lbd.raw_tail(log.meta, 0) == lbd.pack_tail(1000, 160)


def test_any_contiguous_buffer_is_a_source(log: Log) -> None:
    words = memoryview(bytearray(struct.pack("<3i", 1, 2, 3))).cast("i")
    assert log.writer.offer(words) == 64
    assert log.writer.offer(memoryview(b"abcdef")[2:5]) == 128
    assert [f[-1] for f in frames(log.terms[0])] == [struct.pack("<3i", 1, 2, 3), b"cde"]


def test_the_term_id_in_the_template_is_replaced_by_the_active_one(log: Log) -> None:
    index, _ = log.start_term(4)
    assert log.writer.offer(b"abc") == 4 * T + 64
    assert frames(log.terms[index])[0][8] == 1004


def test_crossing_the_term_end_pads_it_once_and_rotates(log: Log) -> None:
    lbd.set_raw_tail(log.meta, 0, lbd.pack_tail(1000, T - 96))
    assert log.writer.offer(b"z" * 100) == ADMIN_ACTION
    pad = frames(log.terms[0], T - 96)
    assert pad == [(T - 96, 96, 0, 0xC0, HDR_TYPE_PAD, T - 96, SESSION_ID, STREAM_ID, 1000, 0, b"")]
    assert lbd.raw_tail(log.meta, 0) & 0xFFFF_FFFF == T - 96 + 160
    assert (lbd.active_term_count(log.meta), lbd.raw_tail(log.meta, 1)) == (1, lbd.pack_tail(1001, 0))
    # A publisher still in the old term (it read the tail before the rotation) finds it full: no second pad.
    appender = TermAppender(log.terms[0], log.meta, 0)
    assert appender.claim(1000, log.template, 8, BufferClaim()) == FAILED
    assert frames(log.terms[0], T - 96) == pad
    assert log.writer.offer(b"z" * 100) == T + 160  # the message goes into the next term


def test_a_term_another_publisher_filled_is_rotated_without_padding(log: Log) -> None:
    lbd.set_raw_tail(log.meta, 0, lbd.pack_tail(1000, T + 64))  # tripped, not yet rotated
    assert log.writer.offer(b"q") == ADMIN_ACTION
    assert frames(log.terms[0]) == []
    assert lbd.active_term_count(log.meta) == 1


def test_an_offer_ending_exactly_at_the_term_end_succeeds_and_the_next_rotates_without_padding(
    log: Log,
) -> None:
    lbd.set_raw_tail(log.meta, 0, lbd.pack_tail(1000, T - 64))
    assert log.writer.offer(b"q" * 32) == T
    assert log.writer.offer(b"q") == ADMIN_ACTION
    assert [f[:5] for f in frames(log.terms[0], T - 64)] == [(T - 64, 64, 0, 0xC0, HDR_TYPE_DATA)]
    assert log.writer.offer(b"q") == T + 64


def test_fragmented_message_as_seen_on_the_wire(log: Log) -> None:
    message = bytes(random.Random(1).randbytes(3000))
    # mtu 1408: frames of 1408 (BEGIN), 1408 (middle) and 280 (END); docs/wire.md section 9.
    assert log.writer.offer(message) == 1408 + 1408 + 288
    found = frames(log.terms[0])
    assert [(f[0], f[1], f[3], f[5]) for f in found] == [
        (0, 1408, 0x80, 0),
        (1408, 1408, 0, 1408),
        (2816, 280, 0x40, 2816),
    ]
    assert b"".join(f[-1] for f in found) == message


def test_fragmented_message_of_whole_fragments(log: Log) -> None:
    message = b"m" * (2 * 1376)
    assert log.writer.offer(memoryview(message), reserved_value=9) == 2816
    assert [(f[1], f[3], f[8], f[9]) for f in frames(log.terms[0])] == [
        (1408, 0x80, 1000, 9),
        (1408, 0x40, 1000, 9),
    ]


def test_fragmented_message_crossing_the_term_end(log: Log) -> None:
    lbd.set_raw_tail(log.meta, 0, lbd.pack_tail(1000, T - 2048))
    assert log.writer.offer(b"f" * 3000) == ADMIN_ACTION
    assert [f[:5] for f in frames(log.terms[0], T - 2048)] == [(T - 2048, 2048, 0, 0xC0, HDR_TYPE_PAD)]


def test_header_template_must_be_32_bytes(log: Log) -> None:
    appender = TermAppender(log.terms[0], log.meta, 0)
    with pytest.raises(TypeError, match="must be bytes"):
        appender.claim(1000, bytearray(log.template), 1, BufferClaim())
    with pytest.raises(ValueError, match="32 bytes, got 31"):
        appender.claim(1000, log.template[:31], 1, BufferClaim())
    assert appender.raw_tail_volatile() == lbd.pack_tail(1000, 0)


def test_bad_partition_index(log: Log) -> None:
    with pytest.raises(ValueError, match="partition 3"):
        TermAppender(log.terms[0], log.meta, 3)


def test_a_publisher_delayed_across_rotations_gets_an_error_and_writes_nothing(log: Log) -> None:
    appender = TermAppender(log.terms[0], log.meta, 0)
    lbd.set_raw_tail(log.meta, 0, lbd.pack_tail(1003, 0))  # partition 0 now holds term 1003
    with pytest.raises(TermIdMismatchError, match="expected term id 1000 but the tail is now in term 1003"):
        appender.claim(1000, log.template, 10, BufferClaim())
    # An offer reads the term count and the tail together: they disagree, so it waits (ADMIN_ACTION).
    assert log.writer.offer(b"late") == ADMIN_ACTION
    assert frames(log.terms[0]) == []


# --- claims ---------------------------------------------------------------------------------------------


def test_claim_is_invisible_until_commit(log: Log) -> None:
    appender = TermAppender(log.terms[0], log.meta, 0)
    claim = BufferClaim()
    assert appender.claim(1000, log.template, 100, claim) == 160
    assert log.writer.offer(b"after") == 224
    assert (claim.frame_offset, claim.offset, claim.length) == (0, 32, 100)
    assert claim.buffer is log.terms[0]
    assert log.terms[0].get_int32(0) == -132
    reader, header, got = TermReader(), Header(1000, 16), []

    def handler(buffer: AtomicBuffer, offset: int, length: int, hdr: Header) -> None:
        got.append(buffer.get_bytes(offset, length))

    assert reader.read(log.terms[0], 0, handler, 10, header) == (0, 0)  # blocked behind the claim
    claim.put_bytes(b"A" * 60).put_bytes(b"B" * 40, 60)
    claim.view[0:1] = b"C"
    claim.reserved_value = 1234
    assert claim.reserved_value == 1234
    assert claim.flags == 0xC0 and claim.header_type == HDR_TYPE_DATA
    claim.commit()
    assert not claim.is_claimed
    assert reader.read(log.terms[0], 0, handler, 10, header) == (2, 224)
    assert got == [b"C" + b"A" * 59 + b"B" * 40, b"after"]
    assert frames(log.terms[0])[0][:11] == (
        0,
        132,
        0,
        0xC0,
        HDR_TYPE_DATA,
        0,
        SESSION_ID,
        STREAM_ID,
        1000,
        1234,
        got[0],
    )


def test_aborted_claim_becomes_padding(log: Log) -> None:
    appender = TermAppender(log.terms[0], log.meta, 0)
    claim = BufferClaim()
    assert appender.claim(1000, log.template, 10, claim) == 64
    claim.flags = 0x80
    claim.header_type = HDR_TYPE_DATA
    claim.abort()
    assert frames(log.terms[0])[0][:5] == (0, 42, 0, 0x80, HDR_TYPE_PAD)
    assert log.writer.offer(b"next") == 128
    got = []
    fragments = TermReader().read(
        log.terms[0], 0, lambda b, o, n, h: got.append(b.get_bytes(o, n)), 10, Header(1000, 16)
    )
    assert fragments == (1, 128)
    assert got == [b"next"]


def test_claim_misuse(log: Log) -> None:
    appender = TermAppender(log.terms[0], log.meta, 0)
    claim = BufferClaim()
    with pytest.raises(BufferClaimError):
        claim.commit()
    assert appender.claim(1000, log.template, 16, claim) == 64
    with pytest.raises(ValueError, match="do not fit a claim of 16 bytes"):
        claim.put_bytes(b"x" * 17)
    with pytest.raises(ValueError, match="do not fit"):
        claim.put_bytes(b"x", -1)
    claim.commit()
    with pytest.raises(BufferClaimError):
        claim.commit()
    with pytest.raises(BufferClaimError):
        claim.abort()
    with pytest.raises(ValueError, match="negative"):
        appender.claim(1000, log.template, -1, claim)


def test_claim_at_the_term_end_leaves_the_claim_untouched(log: Log) -> None:
    appender = TermAppender(log.terms[0], log.meta, 0)
    lbd.set_raw_tail(log.meta, 0, lbd.pack_tail(1000, T - 32))
    claim = BufferClaim()
    assert appender.claim(1000, log.template, 1, claim) == TRIPPED
    assert not claim.is_claimed
    assert [f[:5] for f in frames(log.terms[0], T - 32)] == [(T - 32, 32, 0, 0xC0, HDR_TYPE_PAD)]


# --- appends and reads, interleaved --------------------------------------------------------------------


class Expected:
    """What the reader must deliver: every committed fragment in term order."""

    def __init__(self, term_begin_position: int) -> None:
        self.fragments: list[
            tuple[bytes, int, int, int, int]
        ] = []  # payload, flags, offset, position, reserved
        self.term_begin_position = term_begin_position

    def add(self, payload: bytes, flags: int, frame_offset: int, reserved: int) -> None:
        end = frame_offset + align(len(payload) + 32, 32)
        self.fragments.append((payload, flags, frame_offset, self.term_begin_position + end, reserved))


def add_message(
    expected: Expected, message: bytes, frame_offset: int, max_payload: int, reserved: int
) -> None:
    if len(message) <= max_payload:
        expected.add(message, 0xC0, frame_offset, reserved)
        return
    chunks = [message[i : i + max_payload] for i in range(0, len(message), max_payload)]
    for i, chunk in enumerate(chunks):
        flags = (0x80 if i == 0 else 0) | (0x40 if i == len(chunks) - 1 else 0)
        expected.add(chunk, flags, frame_offset, reserved)
        frame_offset += align(len(chunk) + 32, 32)


def required_length(length: int, max_payload: int) -> int:
    if length <= max_payload:
        return align(length + 32, 32)
    full, rest = divmod(length, max_payload)
    return full * (max_payload + 32) + (align(rest + 32, 32) if rest else 0)


ops_strategy = st.lists(
    st.one_of(
        st.tuples(st.just("offer"), st.integers(0, 6000)),
        st.tuples(st.just("offer"), st.integers(0, 200)),
        st.tuples(st.just("claim"), st.integers(0, 4064), st.booleans()),
        st.tuples(st.just("poll"), st.integers(1, 12)),
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    mtu=st.sampled_from([64, 96, 1408, 4096]),
    initial_term_id=st.sampled_from([0, -5, INT32_MAX - 1, INT32_MIN]) | st.integers(INT32_MIN, INT32_MAX),
    term_count=st.integers(0, 5),
    start_offset=st.one_of(st.just(0), st.integers(0, T // 32), st.integers(T // 32 - 256, T // 32)).map(
        lambda units: units * 32
    ),
    ops=ops_strategy,
    fill_to_end=st.booleans(),
)
def test_the_reader_gets_exactly_what_was_appended(
    mtu: int, initial_term_id: int, term_count: int, start_offset: int, ops: list[tuple], fill_to_end: bool
) -> None:
    log = Log(initial_term_id=initial_term_id, mtu=mtu)
    try:
        index, term_id = log.start_term(term_count)
        lbd.set_raw_tail(log.meta, index, lbd.pack_tail(term_id, start_offset))
        term = log.terms[index]
        appender = TermAppender(term, log.meta, index)
        max_payload = mtu - 32
        expected = Expected(term_count * T)
        delivered: list[tuple] = []
        header = Header(initial_term_id, 16)
        reader = TermReader(batch_capacity=4)  # small, so polls span several native scans
        read_offset = start_offset
        tail = start_offset  # the model of the tail counter's offset
        full = start_offset == T

        def handler(buffer: AtomicBuffer, offset: int, length: int, hdr: Header) -> None:
            assert (hdr.term_id, hdr.session_id, hdr.stream_id, hdr.type) == (
                term_id,
                SESSION_ID,
                STREAM_ID,
                HDR_TYPE_DATA,
            )
            assert offset == hdr.term_offset + 32 and length == hdr.frame_length - 32
            delivered.append(
                (
                    buffer.get_bytes(offset, length),
                    hdr.flags,
                    hdr.term_offset,
                    hdr.position,
                    hdr.reserved_value,
                )
            )

        for i, op in enumerate(ops):
            if op[0] == "poll":
                count, new_offset = reader.read(term, read_offset, handler, op[1], header)
                assert count <= op[1]
                read_offset = new_offset
                assert delivered == expected.fragments[: len(delivered)]
                continue

            if op[0] == "offer":
                if full:  # the offer that found the term full rotated the log: offers go on in the next term
                    continue
                message = random.Random(i).randbytes(op[1])
                needed = required_length(len(message), max_payload)
                result = log.writer.offer(message, reserved_value=i)
                if result > 0:
                    result -= term_count * T  # the position, as the term offset the claims return
                elif tail + needed > T:
                    # ADMIN_ACTION: this offer padded the term (TRIPPED) or found it exactly full, with nothing
                    # to pad (FAILED); either way it rotated the log
                    result = TRIPPED if tail < T else FAILED
            else:
                length = op[1] % (max_payload + 1)
                message = random.Random(i).randbytes(length)
                needed = align(length + 32, 32)
                claim = BufferClaim()
                result = appender.claim(term_id, log.template, length, claim)

            if tail + needed > T:
                assert result == (TRIPPED if tail < T else FAILED), (result, tail, needed)
                full = True
            else:
                assert result == tail + needed
                if op[0] == "offer":
                    add_message(expected, message, tail, max_payload, i)
                elif op[2]:
                    claim.put_bytes(message)
                    claim.commit()
                    expected.add(message, 0xC0, tail, 0)
                else:
                    claim.abort()
            tail += needed
            assert appender.raw_tail_volatile() == lbd.pack_tail(term_id, tail)

        if fill_to_end:  # keep offering until the term is full, so every run with this flag ends in padding
            rng = random.Random(len(ops))
            while not full:
                message = rng.randbytes(rng.choice([0, 1, 31, 33, 200, 1500, 5000]))
                needed = required_length(len(message), max_payload)
                result = log.writer.offer(message)
                if tail + needed > T:
                    assert result == ADMIN_ACTION  # padded (from inside the term) or found full; rotated
                    full = True
                else:
                    assert result == term_count * T + tail + needed
                    add_message(expected, message, tail, max_payload, 0)
                tail += needed

        while True:
            count, read_offset = reader.read(term, read_offset, handler, 1000, header)
            if count == 0:
                break
        assert delivered == expected.fragments
        assert read_offset == (T if full else tail)
        event("term filled" if full else "term not filled")
        event(f"fragmented messages: {min(3, sum(1 for f in delivered if f[1] == 0x80))}+")
    finally:
        log.close()


def test_offers_across_term_rotations_with_cleaning() -> None:
    """A publication's offer loop (rotate on a full term) and a subscriber following across six terms
    while term ids wrap past the int maximum; cleaned partitions are reused."""
    initial = INT32_MAX - 2
    log = Log(initial_term_id=initial, mtu=1408)
    try:
        bits = 16
        header = Header(initial, bits)
        reader = TermReader()
        rng = random.Random(7)
        messages = [rng.randbytes(rng.choice([0, 10, 100, 1376, 1377, 3000, 8000])) for _ in range(300)]
        received: list[bytes] = []
        partial: list[bytes] = []
        positions: list[int] = []
        sub_position = 0
        admin_actions = 0

        def handler(buffer: AtomicBuffer, offset: int, length: int, hdr: Header) -> None:
            partial.append(buffer.get_bytes(offset, length))
            if hdr.flags & 0x40:
                received.append(b"".join(partial))
                partial.clear()
                positions.append(hdr.position)

        def poll() -> None:
            nonlocal sub_position
            term_offset = sub_position & (T - 1)
            index = lbd.index_by_position(sub_position, bits)
            _, new_offset = reader.read(log.terms[index], term_offset, handler, 10, header)
            before = sub_position
            sub_position += new_offset - term_offset
            if sub_position >> bits != before >> bits:  # crossed into a new term: clean the one before
                clean(log.terms[(index + 2) % 3], 0, T)

        for message in messages:
            while True:
                log.writer.set_limit(sub_position + T)  # publisher limit: one term window ahead of the reader
                result = log.writer.offer(message)
                if result > 0:
                    break
                if result == ADMIN_ACTION:
                    admin_actions += 1
                else:  # back pressured at the limit: the subscriber has to move on
                    poll()
            if rng.random() < 0.3:
                poll()
        for _ in range(1000):
            poll()
        assert received == messages
        assert positions == sorted(positions) and positions[-1] == sub_position
        assert admin_actions >= 5 and lbd.active_term_count(log.meta) == admin_actions
        assert lbd.compute_term_id_from_position(sub_position, bits, initial) < 0  # wrapped
    finally:
        log.close()


# --- two processes appending to one term ---------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import struct, sys
    from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
    from driver.concurrent.logbuffer.buffer_claim import BufferClaim
    from driver.concurrent.logbuffer.log_buffers import LogBuffers
    from driver.concurrent.logbuffer.term_appender import TermAppender
    from tests.support import LogWriter

    def message(publisher, seq):
        length = 12 + (seq * 7919 + publisher * 104729) % 1800
        body = bytes([(publisher * 31 + seq) & 0xFF]) * (length - 12)
        return struct.pack("<iii", publisher, seq, length) + body

    path, publisher = sys.argv[1], int(sys.argv[2])
    GO_OFFSET, LIMIT = int(sys.argv[3]), int(sys.argv[4])
    with LogBuffers(path) as log:
        meta = log.meta_data_buffer
        template = lbd.default_frame_header(meta)
        max_payload = lbd.mtu_length(meta) - 32
        term_id = lbd.initial_term_id(meta)
        appender = TermAppender(log.term_buffers[0], meta, 0)
        writer = LogWriter(log.term_buffers, meta)
        term_length = log.term_length
        claim = BufferClaim()
        messages = [message(publisher, seq) for seq in range(LIMIT)]
        meta.get_and_add_int32(GO_OFFSET, 1)  # ready
        while meta.get_int32_volatile(GO_OFFSET) < 100:  # spin, so both start the same instant
            pass
        seq = result = 0
        while seq < LIMIT:
            data = messages[seq]
            if seq % 5 == 0 and len(data) <= max_payload:
                result = appender.claim(term_id, template, len(data), claim)
                if result > 0:
                    claim.put_bytes(data)
                    claim.commit()
            else:
                result = writer.offer(data)
                if result > term_length:  # the other process rotated the log: this went into the next term
                    result = -100
            if result < 0:
                break
            seq += 1
        print(seq, min(result, 0), flush=True)
    """
)


GO_OFFSET = 1024  # a start flag in the unused part of the metadata section (test only)
LIMIT = 3000  # messages per child: ~2.8 MB each, so together they overflow the 4 MiB term


def expected_message(publisher: int, seq: int) -> bytes:
    length = 12 + (seq * 7919 + publisher * 104729) % 1800
    return struct.pack("<iii", publisher, seq, length) + bytes([(publisher * 31 + seq) & 0xFF]) * (
        length - 12
    )


def test_two_processes_appending_to_one_term_never_corrupt_frames(tmp_path: Path) -> None:
    term_length = 4 * 1024 * 1024
    path = tmp_path / "shared.logbuffer"
    create_log_file(path, term_length, 4096, sparse=False)
    with LogBuffers(path) as log:
        lbd.initialise_publication_metadata(
            log.meta_data_buffer,
            session_id=SESSION_ID,
            stream_id=STREAM_ID,
            initial_term_id=-17,
            mtu_length=1408,
            term_length=term_length,
            page_size=4096,
            correlation_id=1,
        )
        children = [
            subprocess.Popen(
                [sys.executable, "-c", CHILD, str(path), str(publisher), str(GO_OFFSET), str(LIMIT)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=REPO,
            )
            for publisher in (1, 2)
        ]
        try:
            meta = log.meta_data_buffer
            deadline = time.monotonic() + 60
            while meta.get_int32_volatile(GO_OFFSET) < 2:
                assert time.monotonic() < deadline and all(c.poll() is None for c in children), [
                    c.communicate(timeout=5) for c in children if c.poll() is not None
                ]
                time.sleep(0.001)
            meta.put_int32_volatile(GO_OFFSET, 100)

            # Read live while both append: the reader must only ever see whole, committed frames.
            term = log.term_buffers[0]
            header = Header(-17, lbd.position_bits_to_shift(term_length))
            reader = TermReader()
            next_seq = {1: 0, 2: 0}
            assembling: dict[int, list[bytes]] = {}
            last_publisher: list[int | None] = [None]

            def handler(buffer: AtomicBuffer, offset: int, length: int, hdr: Header) -> None:
                assert hdr.term_id == -17 and hdr.session_id == SESSION_ID and hdr.type == HDR_TYPE_DATA
                flags = hdr.flags
                chunk = buffer.get_bytes(offset, length)
                if flags & 0x80:
                    assert last_publisher[0] is None, "a message began inside another's fragments"
                    publisher = struct.unpack_from("<i", chunk)[0]
                    assembling[publisher] = [chunk]
                else:
                    publisher = last_publisher[0]
                    assert publisher is not None, "a continuation fragment without its beginning"
                    assembling[publisher].append(chunk)
                last_publisher[0] = None if flags & 0x40 else publisher
                if flags & 0x40:
                    data = b"".join(assembling.pop(publisher))
                    assert data == expected_message(publisher, next_seq[publisher])
                    next_seq[publisher] += 1

            offset = 0
            deadline = time.monotonic() + 60
            while offset < term_length:
                assert time.monotonic() < deadline, f"reader stuck at {offset}"
                failed = [c for c in children if c.poll() not in (None, 0)]
                assert not failed, [c.communicate(timeout=5) for c in failed]
                _, offset = reader.read(term, offset, handler, 1000, header)
                time.sleep(0.001)  # leave the CPUs to the two appenders so that they really overlap
            assert offset == term_length
            log_term_copy = AtomicBuffer(bytearray(term.get_bytes(0, term_length)))

            results = []
            for child in children:
                out, err = child.communicate(timeout=30)
                assert child.returncode == 0, err
                results.append(out.split())
        finally:
            for child in children:
                if child.poll() is None:
                    child.kill()
                    child.communicate()
        # Each child wrote all its messages or stopped at the full term (its offer padded it or found it full:
        # ADMIN_ACTION; a claim: TRIPPED or FAILED; or its offer already went into the next term: -100).
        # However the scheduler ran them, both got in.
        counts = {1: int(results[0][0]), 2: int(results[1][0])}
        outcomes = [int(r[1]) for r in results]
        assert counts == next_seq
        assert all(o in (0, ADMIN_ACTION, TRIPPED, FAILED, -100) for o in outcomes) and min(outcomes) < 0
        assert outcomes.count(TRIPPED) <= 1
        pads = [f for f in frames(log_term_copy) if f[4] == HDR_TYPE_PAD]
        assert len(pads) <= 1 and all(f[0] + f[1] == term_length for f in pads)
        assert all(counts[p] == LIMIT for p, o in zip((1, 2), outcomes, strict=True) if o == 0)
        assert min(counts.values()) >= 1
