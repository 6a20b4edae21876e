"""LogBufferDescriptor of Aeron 1.15.1: layout, sizes, position arithmetic, metadata, rotation, driver init."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.protocol.frames import HEADER_LENGTH, create_default_header
from driver.util.bit_util import INT64_MAX, to_int32

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
MIB = 1024 * 1024
TERM_LENGTHS = [1 << bits for bits in range(16, 31)]
int32s = st.integers(INT32_MIN, INT32_MAX)


@pytest.fixture
def meta() -> AtomicBuffer:
    buffer = AtomicBuffer(bytearray(lbd.LOG_META_DATA_LENGTH))
    yield buffer
    buffer.close()


def test_metadata_offsets_match_the_1_15_1_layout() -> None:
    assert lbd.TERM_TAIL_COUNTERS_OFFSET == 0
    assert lbd.LOG_ACTIVE_TERM_COUNT_OFFSET == 24
    assert lbd.LOG_END_OF_STREAM_POSITION_OFFSET == 128
    assert lbd.LOG_IS_CONNECTED_OFFSET == 136
    assert lbd.LOG_ACTIVE_TRANSPORT_COUNT_OFFSET == 140  # later Aeron's, in 1.15.1's padding (136+4..255)
    assert lbd.LOG_CORRELATION_ID_OFFSET == 256
    assert lbd.LOG_INITIAL_TERM_ID_OFFSET == 264
    assert lbd.LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET == 268
    assert lbd.LOG_MTU_LENGTH_OFFSET == 272
    assert lbd.LOG_TERM_LENGTH_OFFSET == 276
    assert lbd.LOG_PAGE_SIZE_OFFSET == 280
    assert lbd.LOG_DEFAULT_FRAME_HEADER_OFFSET == 320
    assert lbd.LOG_DEFAULT_FRAME_HEADER_MAX_LENGTH == 128
    assert lbd.LOG_META_DATA_LENGTH == 4096
    assert [lbd.tail_counter_offset(i) for i in range(3)] == [0, 8, 16]


def test_constants() -> None:
    assert lbd.PARTITION_COUNT == 3
    assert (lbd.TERM_MIN_LENGTH, lbd.TERM_MAX_LENGTH) == (64 * 1024, 1024 * MIB)
    assert (lbd.PAGE_MIN_SIZE, lbd.PAGE_MAX_SIZE) == (4096, 1024 * MIB)


@pytest.mark.parametrize("term_length", TERM_LENGTHS)
def test_every_legal_term_length_passes_and_has_its_shift(term_length: int) -> None:
    lbd.check_term_length(term_length)
    assert 1 << lbd.position_bits_to_shift(term_length) == term_length


@pytest.mark.parametrize(
    ("term_length", "rule"),
    [
        (32 * 1024, "less than min length of 65536: length=32768"),
        (2048 * MIB, "more than max length of 1073741824: length=2147483648"),
        (96 * 1024, "not a power of 2: length=98304"),
        (0, "less than min length"),
    ],
)
def test_bad_term_lengths_are_rejected_naming_value_and_rule(term_length: int, rule: str) -> None:
    with pytest.raises(ValueError, match=rule):
        lbd.check_term_length(term_length)
    with pytest.raises(ValueError, match=str(term_length)):
        lbd.position_bits_to_shift(term_length)


@pytest.mark.parametrize(
    ("page_size", "rule"),
    [
        (2048, "less than min size of 4096: page size=2048"),
        (2048 * MIB, "more than max size of 1073741824: page size=2147483648"),
        (12 * 1024, "not a power of 2: page size=12288"),
    ],
)
def test_bad_page_sizes_are_rejected_naming_value_and_rule(page_size: int, rule: str) -> None:
    with pytest.raises(ValueError, match=rule):
        lbd.check_page_size(page_size)


def test_good_page_sizes_pass() -> None:
    for page_size in (4096, 2 * MIB, 1024 * MIB):
        lbd.check_page_size(page_size)


@pytest.mark.parametrize(
    ("term_length", "page_size", "expected"),
    [
        (16 * MIB, 4096, 50_335_744),
        (64 * MIB, 4096, 201_330_688),
        (64 * 1024, 4096, 3 * 64 * 1024 + 4096),
        (64 * 1024, 2 * MIB, 2 * MIB),  # the whole log fits one huge page
        (16 * MIB, 2 * MIB, 50 * MIB),
        (1024 * MIB, 4096, 3 * 1024 * MIB + 4096),
        (1024 * MIB, 2 * MIB, 3 * 1024 * MIB + 2 * MIB),  # 1 GiB: only the metadata is page aligned
    ],
)
def test_compute_log_length(term_length: int, page_size: int, expected: int) -> None:
    assert lbd.compute_log_length(term_length, page_size) == expected


def test_max_message_length() -> None:
    assert lbd.compute_max_message_length(64 * 1024) == 8 * 1024
    assert lbd.compute_max_message_length(16 * MIB) == 2 * MIB
    assert lbd.compute_max_message_length(1024 * MIB) == 16 * MIB


# --- positions -------------------------------------------------------------------------------------------


def test_position_arithmetic_examples() -> None:
    bits = lbd.position_bits_to_shift(64 * 1024)
    assert lbd.compute_position(5, 100, bits, 5) == 100
    assert lbd.compute_position(7, 32, bits, 5) == 2 * 65536 + 32
    assert lbd.compute_term_begin_position(7, bits, 5) == 2 * 65536
    assert lbd.compute_term_id_from_position(2 * 65536 + 32, bits, 5) == 7
    assert lbd.compute_term_offset_from_position(2 * 65536 + 32, bits) == 32
    assert lbd.index_by_position(2 * 65536 + 32, bits) == 2
    assert lbd.index_by_term(5, 7) == 2
    assert lbd.index_by_term_count(7) == 1


def test_term_ids_wrap_around_like_java_ints() -> None:
    bits = 16
    # initial term id at the top of the int range: the next terms are negative ids.
    assert lbd.compute_position(INT32_MIN, 0, bits, INT32_MAX) == 1 << bits
    assert lbd.compute_position(INT32_MIN + 1, 64, bits, INT32_MAX) == (2 << bits) + 64
    assert lbd.compute_term_id_from_position(2 << bits, bits, INT32_MAX) == INT32_MIN + 1
    assert lbd.index_by_term(INT32_MAX, INT32_MIN + 1) == 2
    # negative initial term ids
    assert lbd.compute_position(-3, 32, bits, -5) == (2 << bits) + 32
    assert lbd.compute_term_begin_position(-1, bits, -5) == 4 << bits
    assert lbd.compute_term_id_from_position(4 << bits, bits, -5) == -1


def test_max_position_is_term_length_times_2_to_the_31() -> None:
    bits = 30
    initial = 12345
    last_term_id = to_int32(initial + INT32_MAX)
    end = lbd.compute_position(last_term_id, 1 << bits, bits, initial)
    assert end == (1 << bits) * 2**31
    assert lbd.compute_term_id_from_position(end - 1, bits, initial) == last_term_id


@given(
    initial_term_id=int32s,
    term_count=st.integers(0, INT32_MAX),
    term_length=st.sampled_from(TERM_LENGTHS),
    data=st.data(),
)
def test_position_round_trips(
    initial_term_id: int, term_count: int, term_length: int, data: st.DataObject
) -> None:
    bits = lbd.position_bits_to_shift(term_length)
    term_offset = data.draw(st.integers(0, term_length - 1))
    active_term_id = to_int32(initial_term_id + term_count)
    position = lbd.compute_position(active_term_id, term_offset, bits, initial_term_id)
    assert position == term_count * term_length + term_offset
    assert lbd.compute_term_begin_position(active_term_id, bits, initial_term_id) == position - term_offset
    assert lbd.compute_term_id_from_position(position, bits, initial_term_id) == active_term_id
    assert lbd.compute_term_offset_from_position(position, bits) == term_offset
    index = term_count % 3
    assert lbd.index_by_position(position, bits) == index
    assert lbd.index_by_term(initial_term_id, active_term_id) == index
    assert lbd.index_by_term_count(term_count) == index


# --- tails ------------------------------------------------------------------------------------------------


@given(term_id=int32s, term_offset=st.integers(0, 2**32 - 1))
def test_pack_tail_round_trips(term_id: int, term_offset: int) -> None:
    raw_tail = lbd.pack_tail(term_id, term_offset)
    assert -(2**63) <= raw_tail < 2**63
    assert lbd.term_id(raw_tail) == term_id
    assert raw_tail & 0xFFFF_FFFF == term_offset
    assert lbd.term_offset(raw_tail, 64 * 1024) == min(term_offset, 64 * 1024)


def test_tail_offset_past_the_term_reads_as_the_term_length() -> None:
    raw_tail = lbd.pack_tail(-9, 65536 + 4000)
    assert lbd.term_offset(raw_tail, 65536) == 65536
    assert lbd.term_id(raw_tail) == -9


def test_tail_counter_accessors(meta: AtomicBuffer) -> None:
    lbd.set_raw_tail(meta, 2, lbd.pack_tail(-4, 96))
    assert lbd.raw_tail(meta, 2) == lbd.pack_tail(-4, 96)
    assert meta.get_int64(16) == lbd.pack_tail(-4, 96)
    lbd.set_raw_tail_volatile(meta, 1, lbd.pack_tail(7, 0))
    assert lbd.raw_tail_volatile(meta, 1) == lbd.pack_tail(7, 0)
    assert lbd.cas_raw_tail(meta, 1, lbd.pack_tail(7, 0), lbd.pack_tail(8, 32))
    assert not lbd.cas_raw_tail(meta, 1, lbd.pack_tail(7, 0), lbd.pack_tail(9, 0))
    assert lbd.raw_tail(meta, 1) == lbd.pack_tail(8, 32)
    lbd.set_active_term_count(meta, 4)
    assert lbd.active_raw_tail_volatile(meta) == lbd.pack_tail(8, 32)
    lbd.initialise_tail_with_term_id(meta, 0, INT32_MIN)
    assert lbd.raw_tail(meta, 0) == lbd.pack_tail(INT32_MIN, 0)


# --- other metadata fields ---------------------------------------------------------------------------------


def test_metadata_field_accessors_write_where_the_layout_says(meta: AtomicBuffer) -> None:
    lbd.set_active_term_count(meta, 3)
    assert lbd.active_term_count(meta) == 3 == meta.get_int32(24)
    lbd.set_active_term_count_ordered(meta, 4)
    assert lbd.active_term_count(meta) == 4
    assert lbd.cas_active_term_count(meta, 4, 5)
    assert not lbd.cas_active_term_count(meta, 4, 6)
    assert lbd.active_term_count(meta) == 5

    lbd.set_end_of_stream_position(meta, 1 << 40)
    assert lbd.end_of_stream_position(meta) == 1 << 40 == meta.get_int64(128)

    assert not lbd.is_connected(meta)
    lbd.set_is_connected(meta, True)
    assert lbd.is_connected(meta) and meta.get_int32(136) == 1
    lbd.set_is_connected(meta, False)
    assert not lbd.is_connected(meta) and meta.get_int32(136) == 0

    lbd.set_correlation_id(meta, -(2**40))
    lbd.set_initial_term_id(meta, -77)
    lbd.set_mtu_length(meta, 1408)
    lbd.set_term_length(meta, 65536)
    lbd.set_page_size(meta, 4096)
    assert lbd.correlation_id(meta) == -(2**40) == meta.get_int64(256)
    assert lbd.initial_term_id(meta) == -77 == meta.get_int32(264)
    assert lbd.mtu_length(meta) == 1408 == meta.get_int32(272)
    assert lbd.term_length(meta) == 65536 == meta.get_int32(276)
    assert lbd.page_size(meta) == 4096 == meta.get_int32(280)


def test_default_frame_header_store_read_and_apply(meta: AtomicBuffer) -> None:
    header = create_default_header(11, 22, 33)
    lbd.store_default_frame_header(meta, header)
    assert meta.get_int32(268) == HEADER_LENGTH
    assert meta.get_bytes(320, 32) == header
    assert lbd.default_frame_header(meta) == header
    term = AtomicBuffer(bytearray(64 * 1024))
    lbd.apply_default_header(meta, term, 4096)
    assert term.get_bytes(4096, 32) == header
    assert term.get_bytes(4096 + 32, 32) == bytes(32)
    term.close()
    with pytest.raises(ValueError, match="length=31"):
        lbd.store_default_frame_header(meta, header[:31])


# --- driver initialisation ------------------------------------------------------------------------------


def _fixed_fields(meta: AtomicBuffer) -> tuple:
    return (
        lbd.initial_term_id(meta),
        lbd.mtu_length(meta),
        lbd.term_length(meta),
        lbd.page_size(meta),
        lbd.correlation_id(meta),
        lbd.end_of_stream_position(meta),
        meta.get_int32(lbd.LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET),
        lbd.default_frame_header(meta),
    )


def test_publication_metadata(meta: AtomicBuffer) -> None:
    lbd.initialise_publication_metadata(
        meta,
        session_id=-5,
        stream_id=10,
        initial_term_id=1000,
        mtu_length=1408,
        term_length=16 * MIB,
        page_size=4096,
        correlation_id=42,
    )
    assert _fixed_fields(meta) == (
        1000,
        1408,
        16 * MIB,
        4096,
        42,
        INT64_MAX,
        32,
        create_default_header(-5, 10, 1000),
    )
    tails = [lbd.raw_tail(meta, i) for i in range(3)]
    assert tails == [lbd.pack_tail(1000, 0), lbd.pack_tail(998, 0), lbd.pack_tail(999, 0)]
    assert lbd.active_term_count(meta) == 0
    assert not lbd.is_connected(meta)


def test_publication_metadata_with_initial_term_id_at_the_int_minimum(meta: AtomicBuffer) -> None:
    lbd.initialise_publication_metadata(
        meta,
        session_id=1,
        stream_id=1,
        initial_term_id=INT32_MIN,
        mtu_length=1408,
        term_length=65536,
        page_size=4096,
        correlation_id=1,
    )
    tails = [lbd.term_id(lbd.raw_tail(meta, i)) for i in range(3)]
    assert tails == [INT32_MIN, INT32_MAX - 1, INT32_MAX]


def test_exclusive_publication_metadata_starting_mid_stream(meta: AtomicBuffer) -> None:
    lbd.initialise_publication_metadata(
        meta,
        session_id=1,
        stream_id=2,
        initial_term_id=10,
        mtu_length=4096,
        term_length=65536,
        page_size=4096,
        correlation_id=3,
        term_id=14,
        term_offset=1024,
    )
    # term count 4 -> partition 1 is active; the next partitions hold the terms from three ago.
    assert lbd.active_term_count(meta) == 4
    assert lbd.raw_tail(meta, 1) == lbd.pack_tail(14, 1024)
    assert lbd.raw_tail(meta, 2) == lbd.pack_tail(12, 0)
    assert lbd.raw_tail(meta, 0) == lbd.pack_tail(13, 0)
    assert lbd.default_frame_header(meta) == create_default_header(1, 2, 10)
    assert lbd.end_of_stream_position(meta) == INT64_MAX


def test_exclusive_publication_metadata_rejects_a_term_before_the_initial_one(meta: AtomicBuffer) -> None:
    with pytest.raises(ValueError, match="before the initial term id"):
        lbd.initialise_publication_metadata(
            meta,
            session_id=1,
            stream_id=2,
            initial_term_id=10,
            mtu_length=4096,
            term_length=65536,
            page_size=4096,
            correlation_id=3,
            term_id=9,
        )
    with pytest.raises(ValueError, match="outside a term"):
        lbd.initialise_publication_metadata(
            meta,
            session_id=1,
            stream_id=2,
            initial_term_id=10,
            mtu_length=4096,
            term_length=65536,
            page_size=4096,
            correlation_id=3,
            term_id=10,
            term_offset=65537,
        )


def test_image_metadata_leaves_tails_and_term_count_zero(meta: AtomicBuffer) -> None:
    lbd.initialise_image_metadata(
        meta,
        session_id=9,
        stream_id=8,
        initial_term_id=-100,
        mtu_length=8192,
        term_length=128 * 1024,
        page_size=4096,
        correlation_id=77,
    )
    assert _fixed_fields(meta) == (
        -100,
        8192,
        128 * 1024,
        4096,
        77,
        INT64_MAX,
        32,
        create_default_header(9, 8, -100),
    )
    assert [lbd.raw_tail(meta, i) for i in range(3)] == [0, 0, 0]
    assert lbd.active_term_count(meta) == 0


# --- rotation -------------------------------------------------------------------------------------------


def _publication(meta: AtomicBuffer, initial_term_id: int) -> None:
    lbd.initialise_publication_metadata(
        meta,
        session_id=1,
        stream_id=1,
        initial_term_id=initial_term_id,
        mtu_length=1408,
        term_length=65536,
        page_size=4096,
        correlation_id=1,
    )


def test_rotate_log_moves_to_the_next_partition_once(meta: AtomicBuffer) -> None:
    _publication(meta, 100)
    lbd.set_raw_tail(meta, 0, lbd.pack_tail(100, 65536 + 64))  # tripped
    assert lbd.rotate_log(meta, 0, 100)
    assert lbd.active_term_count(meta) == 1
    assert lbd.raw_tail(meta, 1) == lbd.pack_tail(101, 0)
    # A second publisher that saw the same full term: no change, and it is told it did nothing.
    lbd.set_raw_tail(meta, 1, lbd.pack_tail(101, 512))  # someone already appended to the new term
    assert not lbd.rotate_log(meta, 0, 100)
    assert lbd.active_term_count(meta) == 1
    assert lbd.raw_tail(meta, 1) == lbd.pack_tail(101, 512)


def test_rotate_log_through_many_terms_and_term_id_wrap(meta: AtomicBuffer) -> None:
    initial = INT32_MAX - 4
    _publication(meta, initial)
    for term_count in range(12):
        term_id = to_int32(initial + term_count)
        index = term_count % 3
        assert lbd.active_term_count(meta) == term_count
        assert lbd.term_id(lbd.raw_tail(meta, index)) == term_id
        lbd.set_raw_tail(meta, index, lbd.pack_tail(term_id, 65536))
        assert lbd.rotate_log(meta, term_count, term_id)
        next_index = (term_count + 1) % 3
        assert lbd.raw_tail(meta, next_index) == lbd.pack_tail(to_int32(term_id + 1), 0)
    assert lbd.active_term_count(meta) == 12
