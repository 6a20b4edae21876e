"""Counters in cnc.dat: Agrona 0.9.31 ``CountersReader``/``CountersManager``/``AtomicCounter``.

Two regions (docs/counters.md): metadata, one 512-byte record per counter id, and values, one 128-byte
record per id (int64 value at offset 0, the rest padding). What Aeron puts in a record's type id, key and
label is in ``counter_types``.
The driver is the only writer of metadata; clients and tools read it concurrently, so every record is
written fully before its state word is release-stored, and readers load the state first.
"""

from __future__ import annotations

from collections.abc import Callable

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.util.bit_util import INT64_MAX, SIZE_OF_INT32, SIZE_OF_INT64

# Metadata record layout (chained: state | type id | deadline | key ... | label length | label).
RECORD_STATE_OFFSET = 0
TYPE_ID_OFFSET = RECORD_STATE_OFFSET + SIZE_OF_INT32
FREE_FOR_REUSE_DEADLINE_OFFSET = TYPE_ID_OFFSET + SIZE_OF_INT32
KEY_OFFSET = FREE_FOR_REUSE_DEADLINE_OFFSET + SIZE_OF_INT64
MAX_KEY_LENGTH = 112
LABEL_OFFSET = KEY_OFFSET + MAX_KEY_LENGTH
LABEL_LENGTH_OFFSET = LABEL_OFFSET
LABEL_BYTES_OFFSET = LABEL_OFFSET + SIZE_OF_INT32
MAX_LABEL_LENGTH = 380
FULL_LABEL_LENGTH = SIZE_OF_INT32 + MAX_LABEL_LENGTH
METADATA_LENGTH = LABEL_OFFSET + FULL_LABEL_LENGTH

# Value record layout: the int64 value, then padding so no two values share a cache line (or its
# prefetch pair) and writers in different processes do not false-share.
COUNTER_VALUE_OFFSET = 0
COUNTER_LENGTH = 128

RECORD_UNUSED = 0
RECORD_ALLOCATED = 1
RECORD_RECLAIMED = -1
NOT_FREE_TO_REUSE = INT64_MAX
NULL_COUNTER_ID = -1
DEFAULT_TYPE_ID = 0



def metadata_offset(counter_id: int) -> int:
    return counter_id * METADATA_LENGTH


def counter_offset(counter_id: int) -> int:
    return counter_id * COUNTER_LENGTH


def java_ascii(value: str) -> bytes:
    """Encode like Agrona's putStringWithoutLengthAscii: one byte per UTF-16 unit, non-ASCII as '?'.

    Characters outside the BMP are two UTF-16 units in Java, hence two '?', so lengths and
    truncation points agree with what the Java driver writes.
    """
    if value.isascii():
        return value.encode("ascii")
    return "".join(c if c < "\x80" else ("??" if c > "\uffff" else "?") for c in value).encode("ascii")


class CountersFullError(RuntimeError):
    """No counter id is free: too many resources for ``aeron.counters.buffer.length``."""


class CountersReader:
    """Read-only view of the counters regions, safe against a concurrently allocating writer."""

    def __init__(self, metadata: AtomicBuffer, values: AtomicBuffer) -> None:
        self._metadata = metadata
        self._values = values
        # Agrona uses values capacity / 128; bounding by the metadata too keeps a reader over a
        # foreign file with a smaller metadata region from reading past its end.
        self._max_counter_id = min(values.capacity // COUNTER_LENGTH, metadata.capacity // METADATA_LENGTH)

    @property
    def max_counter_id(self) -> int:
        """Number of counter ids the buffers hold; valid ids are ``0 .. max_counter_id - 1``."""
        return self._max_counter_id

    @property
    def metadata_buffer(self) -> AtomicBuffer:
        return self._metadata

    @property
    def values_buffer(self) -> AtomicBuffer:
        return self._values

    def for_each(self, fn: Callable[[int, int, bytes, str], None]) -> None:
        """Call ``fn(counter_id, type_id, key, label)`` for each allocated counter, up to the first unused."""
        metadata = self._metadata
        for counter_id in range(self._max_counter_id):
            offset = counter_id * METADATA_LENGTH
            # Acquire: the record body is only complete once the state says ALLOCATED.
            state = metadata.get_int32_acquire(offset + RECORD_STATE_OFFSET)
            if state == RECORD_UNUSED:
                break
            if state == RECORD_ALLOCATED:
                fn(
                    counter_id,
                    metadata.get_int32(offset + TYPE_ID_OFFSET),
                    metadata.get_bytes(offset + KEY_OFFSET, MAX_KEY_LENGTH),
                    self._label_at(offset),
                )

    def get_counter_value(self, counter_id: int) -> int:
        self._validate(counter_id)
        return self._values.get_int64_volatile(counter_offset(counter_id))

    def get_counter_state(self, counter_id: int) -> int:
        self._validate(counter_id)
        return self._metadata.get_int32_volatile(metadata_offset(counter_id) + RECORD_STATE_OFFSET)

    def get_counter_type_id(self, counter_id: int) -> int:
        self._validate(counter_id)
        return self._metadata.get_int32(metadata_offset(counter_id) + TYPE_ID_OFFSET)

    def get_free_for_reuse_deadline(self, counter_id: int) -> int:
        self._validate(counter_id)
        return self._metadata.get_int64_volatile(metadata_offset(counter_id) + FREE_FOR_REUSE_DEADLINE_OFFSET)

    def get_counter_label(self, counter_id: int) -> str:
        self._validate(counter_id)
        return self._label_at(metadata_offset(counter_id))

    def get_counter_key(self, counter_id: int) -> bytes:
        """All ``MAX_KEY_LENGTH`` key bytes; the key's own layout says how many are meaningful."""
        self._validate(counter_id)
        return self._metadata.get_bytes(metadata_offset(counter_id) + KEY_OFFSET, MAX_KEY_LENGTH)

    def _label_at(self, record_offset: int) -> str:
        length = self._metadata.get_int32(record_offset + LABEL_LENGTH_OFFSET)
        # Clamp: the region may belong to another process or be mid-reuse; never read outside the record.
        length = max(0, min(length, MAX_LABEL_LENGTH))
        # Client-added counters (ADD_COUNTER) carry label bytes verbatim, so decode as UTF-8.
        return self._metadata.get_bytes(record_offset + LABEL_BYTES_OFFSET, length).decode("utf-8", "replace")

    def _validate(self, counter_id: int) -> None:
        if not 0 <= counter_id < self._max_counter_id:
            raise ValueError(
                f"counter id {counter_id} out of range: valid ids are 0..{self._max_counter_id - 1}"
            )


class CountersManager(CountersReader):
    """Allocates and frees counter ids; single writer (the driver conductor)."""

    def __init__(
        self,
        metadata: AtomicBuffer,
        values: AtomicBuffer,
        epoch_clock: Callable[[], int],
        free_to_reuse_timeout_ms: int = 0,
    ) -> None:
        if metadata.capacity < values.capacity * (METADATA_LENGTH // COUNTER_LENGTH):
            raise ValueError(
                f"counters metadata buffer of {metadata.capacity} bytes is too small for a values buffer of "
                f"{values.capacity} bytes: it must be at least "
                f"{values.capacity * (METADATA_LENGTH // COUNTER_LENGTH)} bytes "
                f"({METADATA_LENGTH} per {COUNTER_LENGTH}-byte counter)"
            )
        if free_to_reuse_timeout_ms < 0:
            raise ValueError(f"free_to_reuse_timeout_ms={free_to_reuse_timeout_ms} must not be negative")
        super().__init__(metadata, values)
        self._epoch_clock = epoch_clock
        self._free_to_reuse_timeout_ms = free_to_reuse_timeout_ms
        self._id_high_water_mark = -1
        # Freed ids in free order; deadlines are free time + a constant so the oldest comes due first.
        self._free_list: list[int] = []

    @property
    def free_to_reuse_timeout_ms(self) -> int:
        return self._free_to_reuse_timeout_ms

    def allocate(self, label: str | bytes, type_id: int = DEFAULT_TYPE_ID, key: bytes | None = None) -> int:
        """Allocate a counter id and publish its metadata; the value starts at 0.

        ``label`` as ``str`` is written US-ASCII (non-ASCII as '?'); as ``bytes`` it is copied verbatim
        (client ADD_COUNTER). Both are truncated to ``MAX_LABEL_LENGTH``; ``key`` to ``MAX_KEY_LENGTH``.
        """
        label_bytes = (java_ascii(label) if isinstance(label, str) else bytes(label))[:MAX_LABEL_LENGTH]
        key_bytes = bytes(key[:MAX_KEY_LENGTH]) if key is not None else b""

        counter_id = self._next_counter_id()
        metadata = self._metadata
        offset = metadata_offset(counter_id)
        metadata.put_int32(offset + TYPE_ID_OFFSET, type_id)
        metadata.put_int64(offset + FREE_FOR_REUSE_DEADLINE_OFFSET, NOT_FREE_TO_REUSE)
        # Agrona 0.9.31 leaves a reused record's old key bytes behind; clearing them makes keys
        # read the same whether the id is fresh or reused (a fresh record is all zeros).
        metadata.set_zero(offset + KEY_OFFSET, MAX_KEY_LENGTH)
        if key_bytes:
            metadata.put_bytes(offset + KEY_OFFSET, key_bytes)
        metadata.put_int32(offset + LABEL_LENGTH_OFFSET, len(label_bytes))
        metadata.put_bytes(offset + LABEL_BYTES_OFFSET, label_bytes)
        # Publish last: readers that see ALLOCATED see the whole record.
        metadata.put_int32_release(offset + RECORD_STATE_OFFSET, RECORD_ALLOCATED)
        return counter_id

    def new_counter(
        self, label: str | bytes, type_id: int = DEFAULT_TYPE_ID, key: bytes | None = None
    ) -> AtomicCounter:
        return AtomicCounter(self._values, self.allocate(label, type_id, key), self)

    def free(self, counter_id: int) -> None:
        """Mark the id reclaimed; it may be reused once the reuse timeout has passed. The value is kept."""
        self._validate(counter_id)
        offset = metadata_offset(counter_id)
        state = self._metadata.get_int32(offset + RECORD_STATE_OFFSET)
        if state != RECORD_ALLOCATED:
            # A second free would put the id on the free list twice and hand it out twice.
            raise ValueError(f"counter id {counter_id} is not allocated (state {state}); cannot free it")
        deadline_ms = self._epoch_clock() + self._free_to_reuse_timeout_ms
        self._metadata.put_int64(offset + FREE_FOR_REUSE_DEADLINE_OFFSET, deadline_ms)
        self._metadata.put_int32_release(offset + RECORD_STATE_OFFSET, RECORD_RECLAIMED)
        self._free_list.append(counter_id)

    def set_counter_value(self, counter_id: int, value: int) -> None:
        self._validate(counter_id)
        self._values.put_int64_release(counter_offset(counter_id), value)

    def _next_counter_id(self) -> int:
        if self._free_list:
            now_ms = self._epoch_clock()
            for index, counter_id in enumerate(self._free_list):
                deadline_ms = self._metadata.get_int64(
                    metadata_offset(counter_id) + FREE_FOR_REUSE_DEADLINE_OFFSET
                )
                if now_ms >= deadline_ms:
                    del self._free_list[index]
                    self._values.put_int64_release(counter_offset(counter_id), 0)
                    return counter_id
        counter_id = self._id_high_water_mark + 1
        if counter_id >= self._max_counter_id:
            waiting = len(self._free_list)
            raise CountersFullError(
                f"unable to allocate a counter: all {self._max_counter_id} counter ids are in use"
                + (f" ({waiting} freed, waiting out the reuse timeout)" if waiting else "")
                + "; increase aeron.counters.buffer.length or release resources"
            )
        self._id_high_water_mark = counter_id
        return counter_id


class AtomicCounter:
    """One int64 counter value in the values region; optionally owned (and freed) via a manager."""

    __slots__ = ("_closed", "_id", "_manager", "_offset", "_values")

    def __init__(self, values: AtomicBuffer, counter_id: int, manager: CountersManager | None = None) -> None:
        offset = counter_offset(counter_id)
        if counter_id < 0 or offset + SIZE_OF_INT64 > values.capacity:
            raise ValueError(
                f"counter id {counter_id} out of range for a values buffer of {values.capacity} bytes"
            )
        self._values = values
        self._id = counter_id
        self._offset = offset
        self._manager = manager
        self._closed = False

    @property
    def id(self) -> int:
        return self._id

    @property
    def values_buffer(self) -> AtomicBuffer:
        return self._values

    @property
    def is_closed(self) -> bool:
        return self._closed

    def get(self) -> int:
        return self._values.get_int64_volatile(self._offset)

    def word(self) -> tuple[AtomicBuffer, int]:
        """The value's buffer and offset, for a watch over it (driver/concurrent/word_watch.py)."""
        return self._values, self._offset

    def get_weak(self) -> int:
        return self._values.get_int64(self._offset)

    def set(self, value: int) -> None:
        # Agrona's set() is a volatile store: a release store plus a full fence.
        self._values.put_int64_volatile(self._offset, value)

    def set_ordered(self, value: int) -> None:
        self._values.put_int64_release(self._offset, value)

    def set_weak(self, value: int) -> None:
        self._values.put_int64(self._offset, value)

    def increment(self) -> int:
        """Atomically add one; returns the previous value."""
        return self._values.get_and_add_int64(self._offset, 1)

    def increment_ordered(self) -> int:
        """Single-writer increment with a release store; returns the previous value."""
        previous = self._values.get_int64(self._offset)
        self._values.put_int64_release(self._offset, previous + 1)
        return previous

    def get_and_add(self, delta: int) -> int:
        return self._values.get_and_add_int64(self._offset, delta)

    def get_and_add_ordered(self, delta: int) -> int:
        previous = self._values.get_int64(self._offset)
        self._values.put_int64_release(self._offset, previous + delta)
        return previous

    def compare_and_set(self, expected: int, update: int) -> bool:
        return self._values.compare_and_set_int64(self._offset, expected, update)

    def propose_max(self, proposed: int) -> bool:
        """Raise the value to ``proposed`` if larger, safe with concurrent writers."""
        while True:
            current = self._values.get_int64_volatile(self._offset)
            if current >= proposed:
                return False
            if self._values.compare_and_set_int64(self._offset, current, proposed):
                return True

    def propose_max_ordered(self, proposed: int) -> bool:
        """Single-writer version of ``propose_max``."""
        if self._values.get_int64(self._offset) < proposed:
            self._values.put_int64_release(self._offset, proposed)
            return True
        return False

    def close(self) -> None:
        """Free the id through the owning manager, once."""
        if not self._closed:
            self._closed = True
            if self._manager is not None:
                self._manager.free(self._id)

    def __enter__(self) -> AtomicCounter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AtomicCounter(id={self._id}, value={self.get_weak()}, closed={self._closed})"
