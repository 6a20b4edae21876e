from __future__ import annotations

import struct
from datetime import UTC, timedelta, timezone

from driver.concurrent import error_log as el
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.error_log import (
    DistinctErrorLog,
    ErrorLogReader,
    format_error_log,
    format_timestamp_ms,
)
from tests.support import ManualClock

# 2026-11-21 14:24:47.123 UTC
T0 = 1_795_271_087_123


def make_log(capacity: int = 64 * 1024) -> tuple[DistinctErrorLog, bytearray, AtomicBuffer, ManualClock]:
    raw = bytearray(capacity)
    buffer = AtomicBuffer(raw)
    clock = ManualClock(epoch_ms=T0)
    return DistinctErrorLog(buffer, clock.epoch_clock_ms), raw, buffer, clock


def read_all(buffer: AtomicBuffer, since: int = 0) -> list[tuple[int, int, int, str]]:
    records: list[tuple[int, int, int, str]] = []
    ErrorLogReader.read(buffer, lambda *args: records.append(args), since)
    return records


def site_a(message: str = "boom") -> None:
    raise ValueError(message)


def site_b() -> None:
    raise ValueError("boom")


def caught(fn, *args) -> BaseException:  # type: ignore[no-untyped-def]
    try:
        fn(*args)
    except BaseException as error:
        return error
    raise AssertionError("did not raise")


def test_layout_constants() -> None:
    assert el.LENGTH_OFFSET == 0 and el.OBSERVATION_COUNT_OFFSET == 4
    assert el.LAST_OBSERVATION_TIMESTAMP_OFFSET == 8 and el.FIRST_OBSERVATION_TIMESTAMP_OFFSET == 16
    assert el.ENCODED_ERROR_OFFSET == 24 and el.RECORD_ALIGNMENT == 8


def test_same_site_twice_is_one_record() -> None:
    log, _, buffer, clock = make_log()
    assert log.record(caught(site_a))
    clock.epoch_ms += 500
    # Same frames, different message: Agrona's rule (class + stack) still calls it the same error.
    assert log.record(caught(site_a, "other message"))
    records = read_all(buffer)
    assert len(records) == 1
    count, first, last, text = records[0]
    assert (count, first, last) == (2, T0, T0 + 500)
    assert "Traceback (most recent call last)" in text
    assert "in site_a" in text and text.endswith("ValueError: boom\n")


def test_different_sites_are_distinct() -> None:
    log, _, buffer, _ = make_log()
    log.record(caught(site_a))
    log.record(caught(site_b))
    log.record(caught(site_a))
    log.record(KeyError("not raised"))
    log.record(KeyError("another, not raised"))
    records = read_all(buffer)
    assert [r[0] for r in records] == [2, 1, 1, 1]
    assert "in site_b" in records[1][3]


def test_cause_chain_distinguishes() -> None:
    def wrap(inner) -> None:  # type: ignore[no-untyped-def]
        try:
            inner()
        except ValueError as error:
            raise RuntimeError("wrapped") from error

    log, _, buffer, _ = make_log()
    log.record(caught(wrap, site_a))
    log.record(caught(wrap, site_b))
    log.record(caught(wrap, site_a))
    records = read_all(buffer)
    assert [r[0] for r in records] == [2, 1]
    assert "direct cause" in records[0][3] and "in site_a" in records[0][3]


def test_record_layout_bytes() -> None:
    log, raw, buffer, clock = make_log()
    assert log.record_message("first")
    clock.epoch_ms = T0 + 7
    assert log.record_message("second!")
    length = 24 + len("first")
    assert struct.unpack_from("<iiqq", raw, 0) == (length, 1, T0, T0)
    assert raw[24:29] == b"first"
    second = 32  # align(29, 8)
    assert struct.unpack_from("<iiqq", raw, second) == (24 + 7, 1, T0 + 7, T0 + 7)
    assert raw[second + 24 : second + 31] == b"second!"
    assert raw[second + 31 :] == bytes(len(raw) - second - 31)
    clock.epoch_ms = T0 + 9
    log.record_message("first")
    assert struct.unpack_from("<iiqq", raw, 0) == (length, 2, T0 + 9, T0)
    assert ErrorLogReader.has_errors(buffer)


def test_empty_log() -> None:
    _, _, buffer, _ = make_log()
    assert not ErrorLogReader.has_errors(buffer)
    assert read_all(buffer) == []
    assert format_error_log(buffer) == "\n0 distinct errors observed.\n"


def test_buffer_full_returns_false() -> None:
    log, _, buffer, _ = make_log(capacity=64)
    assert log.record_message("x" * 40)  # 64 bytes exactly
    assert not log.record_message("y")
    assert log.record_message("x" * 40)  # a repeat needs no space
    assert [r[0] for r in read_all(buffer)] == [2]
    big, _, _, _ = make_log(capacity=128)
    assert not big.record(ValueError("z" * 200))


def test_text_is_utf8() -> None:
    log, raw, buffer, _ = make_log()
    log.record_message("caf\u00e9 \u2603")
    assert raw[24:33] == "caf\u00e9 \u2603".encode()
    assert read_all(buffer)[0][3] == "caf\u00e9 \u2603"


def test_reader_since_filter() -> None:
    log, _, buffer, clock = make_log()
    log.record_message("old")
    clock.epoch_ms += 1_000
    log.record_message("new")
    clock.epoch_ms += 1_000
    log.record_message("old")  # seen again: its last timestamp moves past the filter
    assert [r[3] for r in read_all(buffer, since=T0 + 1_000)] == ["old", "new"]
    assert [r[3] for r in read_all(buffer, since=T0 + 1_001)] == ["old"]
    assert ErrorLogReader.read(buffer, lambda *args: None, T0 + 5_000) == 0


def test_reader_stops_at_corrupt_length() -> None:
    raw = bytearray(256)
    struct.pack_into("<iiqq", raw, 0, 24 + 3, 1, T0, T0)
    raw[24:27] = b"abc"
    struct.pack_into("<i", raw, 32, 10_000)  # runs past the end: not a record
    assert [r[3] for r in read_all(AtomicBuffer(raw))] == ["abc"]


def test_format_timestamp_like_java() -> None:
    assert format_timestamp_ms(T0, UTC) == "2026-11-21 14:24:47.123+0000"
    assert (
        format_timestamp_ms(5, timezone(timedelta(hours=-5, minutes=-30))) == "1969-12-31 18:30:00.005-0530"
    )
    local = format_timestamp_ms(T0)
    assert len(local) == len("2026-11-21 14:24:47.123+0000") and local[19:23] == ".123"


def test_format_error_log_matches_error_stat() -> None:
    log, _, buffer, clock = make_log()
    log.record_message("java.lang.IllegalStateException: one\n\tat X.y(X.java:1)\n")
    clock.epoch_ms += 1_001
    log.record_message("two")
    log.record_message("two")
    expected = (
        "***\n1 observations from 2026-11-21 14:24:47.123+0000 to 2026-11-21 14:24:47.123+0000 for:\n"
        " java.lang.IllegalStateException: one\n\tat X.y(X.java:1)\n\n"
        "***\n2 observations from 2026-11-21 14:24:48.124+0000 to 2026-11-21 14:24:48.124+0000 for:\n"
        " two\n"
        "\n2 distinct errors observed.\n"
    )
    assert format_error_log(buffer, tz=UTC) == expected
    assert format_error_log(buffer, since_epoch_ms=T0 + 1, tz=UTC).endswith("\n1 distinct errors observed.\n")


def test_exception_group_members_distinguish() -> None:
    def group(fn) -> None:  # type: ignore[no-untyped-def]
        raise ExceptionGroup("many", [caught(fn)])

    log, _, buffer, _ = make_log()
    log.record(caught(group, site_a))
    log.record(caught(group, site_b))
    log.record(caught(group, site_a))
    assert [r[0] for r in read_all(buffer)] == [2, 1]
