"""The distinct error log in cnc.dat: Agrona 0.9.31 DistinctErrorLog/ErrorLogReader (docs/errorlog.md).

Records are appended from offset 0 and never removed. A record becomes visible to readers in other
processes when its length is release-stored; an error seen again only bumps the observation count
(atomic add) and release-stores the last-seen timestamp, so the log stays small however often an error
repeats. Aeron's tools (ErrorStat, ``CommonContext.saveErrorLog``) read the same bytes.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable, Hashable
from datetime import UTC, datetime, tzinfo
from types import TracebackType

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.util.bit_util import SIZE_OF_INT32, SIZE_OF_INT64, align
from driver.util.text import printable

LENGTH_OFFSET = 0
OBSERVATION_COUNT_OFFSET = LENGTH_OFFSET + SIZE_OF_INT32
LAST_OBSERVATION_TIMESTAMP_OFFSET = OBSERVATION_COUNT_OFFSET + SIZE_OF_INT32
FIRST_OBSERVATION_TIMESTAMP_OFFSET = LAST_OBSERVATION_TIMESTAMP_OFFSET + SIZE_OF_INT64
ENCODED_ERROR_OFFSET = FIRST_OBSERVATION_TIMESTAMP_OFFSET + SIZE_OF_INT64
RECORD_ALIGNMENT = 8

ErrorConsumer = Callable[[int, int, int, str], None]


def _frames(tb: TracebackType | None) -> tuple[tuple[str, str, int | None], ...]:
    # Python's analogue of Java's StackTraceElement (file, class.method, line): the traceback of the
    # raise site up to where it was caught. Code objects only, so no source lines are read.
    frames = []
    while tb is not None:
        code = tb.tb_frame.f_code
        frames.append((code.co_filename, code.co_qualname, tb.tb_lineno))
        tb = tb.tb_next
    return tuple(frames)


def _render(error: BaseException) -> str:
    """The traceback, with control characters in the message escaped: messages quote client input
    (channels, labels), and the error log is printed to operators' terminals."""
    text = "".join(traceback.format_exception(error))
    message = str(error)
    safe = printable(message)
    return text if safe == message else text.replace(message, safe)


def _distinct_key(error: BaseException, seen: set[int] | None = None) -> Hashable:
    """Equal for errors Agrona would call the same: same type, same frames, and the same causes."""
    if seen is None:
        seen = set()
    if id(error) in seen:  # cause/context cycles are possible in Python
        return ("cycle",)
    seen.add(id(error))
    frames = _frames(error.__traceback__)
    # A never-raised exception has no frames (Java's always has its construction site); the message
    # then keeps unrelated errors of one type apart.
    detail = str(error) if not frames else None
    cause = error.__cause__
    if cause is None and not error.__suppress_context__:
        cause = error.__context__
    nested: tuple[Hashable, ...] = ()
    if isinstance(error, BaseExceptionGroup):
        nested = tuple(_distinct_key(e, seen) for e in error.exceptions)
    return (
        type(error),
        frames,
        detail,
        nested,
        _distinct_key(cause, seen) if cause is not None else None,
    )


class DistinctErrorLog:
    """Writer of the error log. One per process (the driver); readers may run concurrently anywhere."""

    def __init__(self, buffer: AtomicBuffer, epoch_clock: Callable[[], int]) -> None:
        self._buffer = buffer
        self._epoch_clock = epoch_clock
        self._next_offset = 0
        self._offsets_by_key: dict[Hashable, int] = {}
        # Agents may share the process with threads (exporter, embedders): the find-or-append step
        # must not interleave, as Java's synchronized block guarantees.
        self._lock = threading.Lock()

    @property
    def buffer(self) -> AtomicBuffer:
        return self._buffer

    def record(self, error: BaseException) -> bool:
        """Log ``error``; False if it is new and no longer fits in the buffer."""
        return self._observe(_distinct_key(error), lambda: _render(error))

    def record_message(self, text: str) -> bool:
        """Log an error that is only a message; messages are distinct by their text."""
        return self._observe(("message", text), lambda: text)

    def _observe(self, key: Hashable, render: Callable[[], str]) -> bool:
        timestamp_ms = self._epoch_clock()
        with self._lock:
            offset = self._offsets_by_key.get(key)
            if offset is None:
                offset = self._append(timestamp_ms, render().encode("utf-8", "backslashreplace"))
                if offset is None:
                    return False
                self._offsets_by_key[key] = offset
        buffer = self._buffer
        buffer.get_and_add_int32(offset + OBSERVATION_COUNT_OFFSET, 1)
        buffer.put_int64_release(offset + LAST_OBSERVATION_TIMESTAMP_OFFSET, timestamp_ms)
        return True

    def _append(self, timestamp_ms: int, encoded: bytes) -> int | None:
        length = ENCODED_ERROR_OFFSET + len(encoded)
        offset = self._next_offset
        if offset + length > self._buffer.capacity:
            return None
        buffer = self._buffer
        buffer.put_bytes(offset + ENCODED_ERROR_OFFSET, encoded)
        buffer.put_int64(offset + FIRST_OBSERVATION_TIMESTAMP_OFFSET, timestamp_ms)
        # Publishes the record with count 0; the caller then counts this first observation.
        buffer.put_int32_release(offset + LENGTH_OFFSET, length)
        self._next_offset = align(offset + length, RECORD_ALIGNMENT)
        return offset


class ErrorLogReader:
    """Reads an error log written by this driver or a Java one, e.g. from a mapped cnc.dat."""

    @staticmethod
    def has_errors(buffer: AtomicBuffer) -> bool:
        return buffer.capacity >= SIZE_OF_INT32 and buffer.get_int32_volatile(LENGTH_OFFSET) != 0

    @staticmethod
    def read(buffer: AtomicBuffer, consumer: ErrorConsumer, since_epoch_ms: int = 0) -> int:
        """Call ``consumer(count, first_ms, last_ms, text)`` per record last seen at or after
        ``since_epoch_ms``; returns how many were reported."""
        reported = 0
        offset = 0
        capacity = buffer.capacity
        while offset + ENCODED_ERROR_OFFSET <= capacity:
            length = buffer.get_int32_volatile(offset + LENGTH_OFFSET)
            if length == 0:
                break
            if length < ENCODED_ERROR_OFFSET or offset + length > capacity:
                break  # not a record we (or Agrona) could have written: stop rather than misread
            last_ms = buffer.get_int64_volatile(offset + LAST_OBSERVATION_TIMESTAMP_OFFSET)
            if last_ms >= since_epoch_ms:
                reported += 1
                consumer(
                    buffer.get_int32_volatile(offset + OBSERVATION_COUNT_OFFSET),
                    buffer.get_int64(offset + FIRST_OBSERVATION_TIMESTAMP_OFFSET),
                    last_ms,
                    buffer.get_bytes(offset + ENCODED_ERROR_OFFSET, length - ENCODED_ERROR_OFFSET).decode(
                        "utf-8", "replace"
                    ),
                )
            offset += align(length, RECORD_ALIGNMENT)
        return reported


def format_timestamp_ms(epoch_ms: int, tz: tzinfo | None = None) -> str:
    """Like Java's ``SimpleDateFormat("yyyy-MM-dd HH:mm:ss.SSSZ")``; local time unless ``tz`` is given."""
    try:
        moment = datetime.fromtimestamp(epoch_ms // 1000, UTC).astimezone(tz)
    except (OverflowError, OSError, ValueError):
        return str(epoch_ms)  # outside datetime's range: a corrupt or foreign value, show it raw
    return f"{moment:%Y-%m-%d %H:%M:%S}.{epoch_ms % 1000:03d}{moment:%z}"


def format_error_log(buffer: AtomicBuffer, since_epoch_ms: int = 0, tz: tzinfo | None = None) -> str:
    """The text Aeron's ErrorStat prints for this log (without its "Command `n Control file" header)."""
    parts: list[str] = []

    def append(count: int, first_ms: int, last_ms: int, text: str) -> None:
        parts.append(
            f"***\n{count} observations from {format_timestamp_ms(first_ms, tz)} "
            f"to {format_timestamp_ms(last_ms, tz)} for:\n {text}\n"
        )

    distinct = ErrorLogReader.read(buffer, append, since_epoch_ms)
    parts.append(f"\n{distinct} distinct errors observed.\n")
    return "".join(parts)
