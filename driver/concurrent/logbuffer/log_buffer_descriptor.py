"""Aeron 1.15.1 LogBufferDescriptor: log file layout, metadata fields, position arithmetic, term rotation.

A log is three terms back to back followed by a 4096-byte metadata section at the end of the file
(docs/logbuffer.md sections 1, 2 and 4). Term ids and term counts are Java ints: every difference of term
ids wraps to 32 bits before it is widened, so positions stay right when term ids roll over.
The metadata accessors take an ``AtomicBuffer`` over the 4096-byte metadata section.
"""

from __future__ import annotations

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer.frame_descriptor import (
    FRAME_LENGTH_OFFSET,
    HEADER_LENGTH,
    create_default_header,
)
from driver.util.bit_util import (
    CACHE_LINE_LENGTH,
    INT64_MAX,
    SIZE_OF_INT32,
    SIZE_OF_INT64,
    align,
    is_power_of_two,
    to_int32,
)

PARTITION_COUNT = 3
LOG_META_DATA_SECTION_INDEX = PARTITION_COUNT

TERM_MIN_LENGTH = 64 * 1024
TERM_MAX_LENGTH = 1024 * 1024 * 1024
PAGE_MIN_SIZE = 4 * 1024
PAGE_MAX_SIZE = 1024 * 1024 * 1024

# Largest message a publication accepts (FrameDescriptor.MAX_MESSAGE_LENGTH); also capped at term / 8.
MAX_MESSAGE_LENGTH = 16 * 1024 * 1024

# Metadata layout. Writers of different fields sit in different 128-byte slots (no false sharing).
TERM_TAIL_COUNTERS_OFFSET = 0
LOG_ACTIVE_TERM_COUNT_OFFSET = TERM_TAIL_COUNTERS_OFFSET + SIZE_OF_INT64 * PARTITION_COUNT
LOG_END_OF_STREAM_POSITION_OFFSET = CACHE_LINE_LENGTH * 2
LOG_IS_CONNECTED_OFFSET = LOG_END_OF_STREAM_POSITION_OFFSET + SIZE_OF_INT64
LOG_ACTIVE_TRANSPORT_COUNT_OFFSET = LOG_IS_CONNECTED_OFFSET + SIZE_OF_INT32
"""Later Aeron's field in 1.15.1's padding (0 there): how many sources (destinations) an image heard from lately."""
LOG_CORRELATION_ID_OFFSET = LOG_END_OF_STREAM_POSITION_OFFSET + CACHE_LINE_LENGTH * 2
LOG_INITIAL_TERM_ID_OFFSET = LOG_CORRELATION_ID_OFFSET + SIZE_OF_INT64
LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET = LOG_INITIAL_TERM_ID_OFFSET + SIZE_OF_INT32
LOG_MTU_LENGTH_OFFSET = LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET + SIZE_OF_INT32
LOG_TERM_LENGTH_OFFSET = LOG_MTU_LENGTH_OFFSET + SIZE_OF_INT32
LOG_PAGE_SIZE_OFFSET = LOG_TERM_LENGTH_OFFSET + SIZE_OF_INT32
LOG_DEFAULT_FRAME_HEADER_OFFSET = LOG_CORRELATION_ID_OFFSET + CACHE_LINE_LENGTH
LOG_DEFAULT_FRAME_HEADER_MAX_LENGTH = CACHE_LINE_LENGTH * 2
LOG_META_DATA_LENGTH = align(
    LOG_DEFAULT_FRAME_HEADER_OFFSET + LOG_DEFAULT_FRAME_HEADER_MAX_LENGTH, PAGE_MIN_SIZE
)

_ONE_GIB = 1024 * 1024 * 1024
_UINT32_MASK = 0xFFFF_FFFF
_UINT64_MASK = 0xFFFF_FFFF_FFFF_FFFF
_POSITION_BITS_BY_TERM_LENGTH = {1 << bits: bits for bits in range(16, 31)}


# --- validation and sizes --------------------------------------------------------------------------------


def check_term_length(term_length: int) -> None:
    if term_length < TERM_MIN_LENGTH:
        raise ValueError(f"term length less than min length of {TERM_MIN_LENGTH}: length={term_length}")
    if term_length > TERM_MAX_LENGTH:
        raise ValueError(f"term length more than max length of {TERM_MAX_LENGTH}: length={term_length}")
    if not is_power_of_two(term_length):
        raise ValueError(f"term length not a power of 2: length={term_length}")


def check_page_size(page_size: int) -> None:
    if page_size < PAGE_MIN_SIZE:
        raise ValueError(f"page size less than min size of {PAGE_MIN_SIZE}: page size={page_size}")
    if page_size > PAGE_MAX_SIZE:
        raise ValueError(f"page size more than max size of {PAGE_MAX_SIZE}: page size={page_size}")
    if not is_power_of_two(page_size):
        raise ValueError(f"page size not a power of 2: page size={page_size}")


def compute_log_length(term_length: int, page_size: int) -> int:
    """File length of a log: 1 GiB terms align only the metadata, as each term is mapped on its own in Java."""
    if term_length < _ONE_GIB:
        return align(term_length * PARTITION_COUNT + LOG_META_DATA_LENGTH, page_size)
    return PARTITION_COUNT * term_length + align(LOG_META_DATA_LENGTH, page_size)


def compute_max_message_length(term_length: int) -> int:
    return min(term_length // 8, MAX_MESSAGE_LENGTH)


# --- positions ---------------------------------------------------------------------------------------------


def position_bits_to_shift(term_length: int) -> int:
    """log2(term length), for the 15 legal term lengths only."""
    bits = _POSITION_BITS_BY_TERM_LENGTH.get(term_length)
    if bits is None:
        raise ValueError(f"invalid term buffer length: {term_length} (a power of 2 from 64 KiB to 1 GiB)")
    return bits


def compute_position(
    active_term_id: int, term_offset: int, position_bits_to_shift: int, initial_term_id: int
) -> int:
    term_count = to_int32(active_term_id - initial_term_id)
    return (term_count << position_bits_to_shift) + term_offset


def compute_term_begin_position(
    active_term_id: int, position_bits_to_shift: int, initial_term_id: int
) -> int:
    return to_int32(active_term_id - initial_term_id) << position_bits_to_shift


def compute_term_id_from_position(position: int, position_bits_to_shift: int, initial_term_id: int) -> int:
    return to_int32(((position & _UINT64_MASK) >> position_bits_to_shift) + initial_term_id)


def compute_term_offset_from_position(position: int, position_bits_to_shift: int) -> int:
    return position & ((1 << position_bits_to_shift) - 1)


def index_by_term(initial_term_id: int, active_term_id: int) -> int:
    return to_int32(active_term_id - initial_term_id) % PARTITION_COUNT


def index_by_term_count(term_count: int) -> int:
    return term_count % PARTITION_COUNT


def index_by_position(position: int, position_bits_to_shift: int) -> int:
    return ((position & _UINT64_MASK) >> position_bits_to_shift) % PARTITION_COUNT


def next_partition_index(current_index: int) -> int:
    return (current_index + 1) % PARTITION_COUNT


# --- tail counters: term id in the high 32 bits, term offset in the low 32 -----------------------------------


def pack_tail(term_id: int, term_offset: int) -> int:
    return (to_int32(term_id) << 32) | (term_offset & _UINT32_MASK)


def term_id(raw_tail: int) -> int:
    return to_int32(raw_tail >> 32)


def term_offset(raw_tail: int, term_length: int) -> int:
    """The tail offset, capped at the term length: a failed append leaves the tail past the end."""
    tail = raw_tail & _UINT32_MASK
    return tail if tail < term_length else term_length


def tail_counter_offset(partition_index: int) -> int:
    return TERM_TAIL_COUNTERS_OFFSET + partition_index * SIZE_OF_INT64


def raw_tail(meta: AtomicBuffer, partition_index: int) -> int:
    return meta.get_int64(TERM_TAIL_COUNTERS_OFFSET + partition_index * SIZE_OF_INT64)


def set_raw_tail(meta: AtomicBuffer, partition_index: int, value: int) -> None:
    meta.put_int64(TERM_TAIL_COUNTERS_OFFSET + partition_index * SIZE_OF_INT64, value)


def raw_tail_volatile(meta: AtomicBuffer, partition_index: int) -> int:
    return meta.get_int64_volatile(TERM_TAIL_COUNTERS_OFFSET + partition_index * SIZE_OF_INT64)


def set_raw_tail_volatile(meta: AtomicBuffer, partition_index: int, value: int) -> None:
    meta.put_int64_volatile(TERM_TAIL_COUNTERS_OFFSET + partition_index * SIZE_OF_INT64, value)


def active_raw_tail_volatile(meta: AtomicBuffer) -> int:
    """The tail of the active partition (by the active term count)."""
    return raw_tail_volatile(meta, index_by_term_count(active_term_count(meta)))


def producer_position(meta: AtomicBuffer, term_length: int, position_bits: int, initial_term_id: int) -> int:
    """The stream position of the active partition's tail: where the next append goes."""
    raw_tail = active_raw_tail_volatile(meta)
    return compute_position(
        term_id(raw_tail), term_offset(raw_tail, term_length), position_bits, initial_term_id
    )


def cas_raw_tail(meta: AtomicBuffer, partition_index: int, expected: int, update: int) -> bool:
    return meta.compare_and_set_int64(
        TERM_TAIL_COUNTERS_OFFSET + partition_index * SIZE_OF_INT64, expected, update
    )


def initialise_tail_with_term_id(meta: AtomicBuffer, partition_index: int, term_id: int) -> None:
    set_raw_tail(meta, partition_index, pack_tail(term_id, 0))


# --- other metadata fields ----------------------------------------------------------------------------------


def active_term_count(meta: AtomicBuffer) -> int:
    return meta.get_int32_volatile(LOG_ACTIVE_TERM_COUNT_OFFSET)


def set_active_term_count(meta: AtomicBuffer, term_count: int) -> None:
    meta.put_int32(LOG_ACTIVE_TERM_COUNT_OFFSET, term_count)


def set_active_term_count_ordered(meta: AtomicBuffer, term_count: int) -> None:
    meta.put_int32_release(LOG_ACTIVE_TERM_COUNT_OFFSET, term_count)


def cas_active_term_count(meta: AtomicBuffer, expected_term_count: int, update_term_count: int) -> bool:
    return meta.compare_and_set_int32(LOG_ACTIVE_TERM_COUNT_OFFSET, expected_term_count, update_term_count)


def end_of_stream_position(meta: AtomicBuffer) -> int:
    return meta.get_int64_volatile(LOG_END_OF_STREAM_POSITION_OFFSET)


def set_end_of_stream_position(meta: AtomicBuffer, position: int) -> None:
    meta.put_int64_release(LOG_END_OF_STREAM_POSITION_OFFSET, position)


def is_connected(meta: AtomicBuffer) -> bool:
    return meta.get_int32_volatile(LOG_IS_CONNECTED_OFFSET) == 1


def set_is_connected(meta: AtomicBuffer, connected: bool) -> None:
    meta.put_int32_release(LOG_IS_CONNECTED_OFFSET, 1 if connected else 0)


def active_transport_count(meta: AtomicBuffer) -> int:
    return meta.get_int32_volatile(LOG_ACTIVE_TRANSPORT_COUNT_OFFSET)


def set_active_transport_count(meta: AtomicBuffer, count: int) -> None:
    meta.put_int32_release(LOG_ACTIVE_TRANSPORT_COUNT_OFFSET, count)


def correlation_id(meta: AtomicBuffer) -> int:
    return meta.get_int64(LOG_CORRELATION_ID_OFFSET)


def set_correlation_id(meta: AtomicBuffer, value: int) -> None:
    meta.put_int64(LOG_CORRELATION_ID_OFFSET, value)


def initial_term_id(meta: AtomicBuffer) -> int:
    return meta.get_int32(LOG_INITIAL_TERM_ID_OFFSET)


def set_initial_term_id(meta: AtomicBuffer, value: int) -> None:
    meta.put_int32(LOG_INITIAL_TERM_ID_OFFSET, value)


def mtu_length(meta: AtomicBuffer) -> int:
    return meta.get_int32(LOG_MTU_LENGTH_OFFSET)


def set_mtu_length(meta: AtomicBuffer, value: int) -> None:
    meta.put_int32(LOG_MTU_LENGTH_OFFSET, value)


def term_length(meta: AtomicBuffer) -> int:
    return meta.get_int32(LOG_TERM_LENGTH_OFFSET)


def set_term_length(meta: AtomicBuffer, value: int) -> None:
    meta.put_int32(LOG_TERM_LENGTH_OFFSET, value)


def page_size(meta: AtomicBuffer) -> int:
    return meta.get_int32(LOG_PAGE_SIZE_OFFSET)


def set_page_size(meta: AtomicBuffer, value: int) -> None:
    meta.put_int32(LOG_PAGE_SIZE_OFFSET, value)


def store_default_frame_header(meta: AtomicBuffer, default_header: bytes | bytearray | memoryview) -> None:
    if len(default_header) != HEADER_LENGTH:
        raise ValueError(
            f"default header length not equal to HEADER_LENGTH ({HEADER_LENGTH}): length={len(default_header)}"
        )
    meta.put_int32(LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET, HEADER_LENGTH)
    meta.put_bytes(LOG_DEFAULT_FRAME_HEADER_OFFSET, default_header)


def default_frame_header(meta: AtomicBuffer) -> bytes:
    """A copy of the default header: what the appenders take as ``header_template``."""
    return meta.get_bytes(LOG_DEFAULT_FRAME_HEADER_OFFSET, HEADER_LENGTH)


def apply_default_header(meta: AtomicBuffer, term_buffer: AtomicBuffer, frame_offset: int) -> None:
    term_buffer.copy_from(
        frame_offset + FRAME_LENGTH_OFFSET, meta, LOG_DEFAULT_FRAME_HEADER_OFFSET, HEADER_LENGTH
    )


# --- rotation and driver initialisation ---------------------------------------------------------------------


def rotate_log(meta: AtomicBuffer, current_term_count: int, current_term_id: int) -> bool:
    """Move the log to the next term (spec section 5.5); True if this call advanced the active term count.

    The next partition's tail is reset only while it still holds the term from three terms ago, so of all
    the publishers that race here exactly one resets it and one advances the count; the rest are no-ops.
    """
    next_term_id = to_int32(current_term_id + 1)
    next_term_count = to_int32(current_term_count + 1)
    next_index = index_by_term_count(next_term_count)
    expected_term_id = to_int32(next_term_id - PARTITION_COUNT)
    tail_offset = TERM_TAIL_COUNTERS_OFFSET + next_index * SIZE_OF_INT64
    new_tail = pack_tail(next_term_id, 0)

    while True:
        tail = meta.get_int64_volatile(tail_offset)
        if term_id(tail) != expected_term_id:
            break
        if meta.compare_and_set_int64(tail_offset, tail, new_tail):
            break

    return cas_active_term_count(meta, current_term_count, next_term_count)


def _initialise_fixed_fields(
    meta: AtomicBuffer,
    session_id: int,
    stream_id: int,
    initial_term_id: int,
    mtu_length: int,
    term_length: int,
    page_size: int,
    correlation_id: int,
) -> None:
    store_default_frame_header(meta, create_default_header(session_id, stream_id, initial_term_id))
    set_initial_term_id(meta, initial_term_id)
    set_mtu_length(meta, mtu_length)
    set_term_length(meta, term_length)
    set_page_size(meta, page_size)
    set_correlation_id(meta, correlation_id)
    set_end_of_stream_position(meta, INT64_MAX)


def initialise_publication_metadata(
    meta: AtomicBuffer,
    *,
    session_id: int,
    stream_id: int,
    initial_term_id: int,
    mtu_length: int,
    term_length: int,
    page_size: int,
    correlation_id: int,
    term_id: int | None = None,
    term_offset: int = 0,
) -> None:
    """The driver's set-up of a new publication log (DriverConductor.initPublicationMetadata).

    With ``term_id`` (an exclusive publication given init-term-id, term-id and term-offset) the log starts
    at (term_id, term_offset) instead of (initial_term_id, 0).
    """
    _initialise_fixed_fields(
        meta, session_id, stream_id, initial_term_id, mtu_length, term_length, page_size, correlation_id
    )
    if term_id is None:
        initialise_tail_with_term_id(meta, 0, initial_term_id)
        for i in range(1, PARTITION_COUNT):
            initialise_tail_with_term_id(meta, i, initial_term_id + i - PARTITION_COUNT)
        return

    term_count = to_int32(term_id - initial_term_id)
    if term_count < 0:
        raise ValueError(f"term id {term_id} is before the initial term id {initial_term_id}")
    if not 0 <= term_offset <= term_length:
        raise ValueError(f"term offset {term_offset} is outside a term of {term_length} bytes")
    active_index = index_by_term_count(term_count)
    set_raw_tail(meta, active_index, pack_tail(term_id, term_offset))
    for i in range(1, PARTITION_COUNT):
        active_index = next_partition_index(active_index)
        initialise_tail_with_term_id(meta, active_index, term_id + i - PARTITION_COUNT)
    set_active_term_count(meta, term_count)


def initialise_image_metadata(
    meta: AtomicBuffer,
    *,
    session_id: int,
    stream_id: int,
    initial_term_id: int,
    mtu_length: int,
    term_length: int,
    page_size: int,
    correlation_id: int,
) -> None:
    """The driver's set-up of a new image log (DriverConductor.newPublicationImageLog); the tails and the
    active term count stay 0, as images do not use them. ``mtu_length`` is the sender's, from its SETUP."""
    _initialise_fixed_fields(
        meta, session_id, stream_id, initial_term_id, mtu_length, term_length, page_size, correlation_id
    )
