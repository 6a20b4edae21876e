"""loss-report.dat writer and reader against docs/lossreport.md (offsets written out literally here)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driver.analysis.decode import LossFileError, decode_entries
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.reports import loss_report as lr
from driver.reports.loss_report import (
    CorruptLossReportError,
    LossEntry,
    LossReport,
    LossReportFile,
    create_loss_report_file,
    entry_length,
    iter_loss_report,
    read_loss_report,
)

T0 = 1_795_271_087_123
CHANNEL = "aeron:udp?endpoint=localhost:40123"  # 34 chars
SOURCE = "/127.0.0.1:44363"  # 16 chars


def new_report(capacity: int = 4096) -> tuple[LossReport, bytearray, AtomicBuffer]:
    raw = bytearray(capacity)
    buffer = AtomicBuffer(raw)
    return LossReport(buffer), raw, buffer


def entries(buffer: AtomicBuffer) -> list[LossEntry]:
    return list(iter_loss_report(buffer))


def test_layout_constants_match_the_spec() -> None:
    assert (lr.OBSERVATION_COUNT_OFFSET, lr.TOTAL_BYTES_LOST_OFFSET) == (0, 8)
    assert (lr.FIRST_OBSERVATION_OFFSET, lr.LAST_OBSERVATION_OFFSET) == (16, 24)
    assert (lr.SESSION_ID_OFFSET, lr.STREAM_ID_OFFSET, lr.CHANNEL_OFFSET) == (32, 36, 40)
    assert lr.ENTRY_ALIGNMENT == 64
    assert lr.ENTRY_FIXED_LENGTH == 48
    assert lr.LOSS_REPORT_FILE == "loss-report.dat"


def test_first_entry_is_laid_out_at_the_spec_offsets() -> None:
    report, raw, _ = new_report()
    entry = report.create_entry(1408, T0, -7, 1001, CHANNEL, SOURCE)
    assert entry is not None and entry.offset == 0
    assert struct.unpack_from("<qqqqii", raw, 0) == (1, 1408, T0, T0, -7, 1001)
    assert struct.unpack_from("<i", raw, 40) == (34,)
    assert raw[44 : 44 + 34] == CHANNEL.encode()
    assert struct.unpack_from("<i", raw, 44 + 34) == (16,)
    assert raw[48 + 34 : 48 + 34 + 16] == SOURCE.encode()
    assert not any(raw[48 + 34 + 16 :])
    # 48 + 34 + 16 = 98 bytes, aligned to 64: the next entry starts at 128.
    assert entry_length(CHANNEL, SOURCE) == 128
    assert report.next_record_offset == 128
    second = report.create_entry(
        32, T0 + 5, 8, 10, "aeron:udp?endpoint=224.0.1.1:40456|interface=localhost", "/a"
    )
    assert second is not None and second.offset == 128
    assert struct.unpack_from("<q", raw, 128) == (1,)
    # 48 + 54 + 2 = 104 -> 128: the third entry would start at 256.
    assert report.next_record_offset == 256


def test_record_observation_adds_bytes_and_count_and_moves_the_last_timestamp() -> None:
    report, raw, buffer = new_report()
    entry = report.create_entry(100, T0, 1, 2, CHANNEL, SOURCE)
    assert entry is not None
    entry.record_observation(60, T0 + 1_000)
    entry.record_observation(40, T0 + 2_500)
    assert struct.unpack_from("<qqqq", raw, 0) == (3, 200, T0, T0 + 2_500)
    assert entries(buffer) == [LossEntry(3, 200, T0, T0 + 2_500, 1, 2, CHANNEL, SOURCE)]


def test_reader_stops_at_the_first_zero_count_and_counts_entries() -> None:
    report, _, buffer = new_report()
    for i in range(5):
        assert report.create_entry(i + 1, T0 + i, i, 100 + i, f"{CHANNEL}{i}", SOURCE) is not None
    seen: list[LossEntry] = []
    assert read_loss_report(buffer, seen.append) == 5
    assert [e.stream_id for e in seen] == [100, 101, 102, 103, 104]
    assert [e.channel for e in seen] == [f"{CHANNEL}{i}" for i in range(5)]
    assert read_loss_report(AtomicBuffer(bytearray(1024)), seen.append) == 0


def test_a_full_buffer_creates_no_entry_and_later_smaller_entries_may_still_fit() -> None:
    # 192 bytes: one 128-byte entry fits, a second (98 bytes needed, 64 left) does not.
    report, _, buffer = new_report(192)
    assert report.create_entry(1, T0, 1, 1, CHANNEL, SOURCE) is not None
    assert report.create_entry(1, T0, 2, 1, CHANNEL, SOURCE) is None
    assert report.next_record_offset == 128
    # As in 1.15.1 the check is on the unaligned length: exactly 64 bytes needed fit in the 64 left.
    assert report.create_entry(1, T0, 3, 1, "c" * 8, "s" * 8) is not None
    assert report.next_record_offset == 192
    assert report.create_entry(1, T0, 4, 1, "", "") is None
    assert [e.session_id for e in entries(buffer)] == [1, 3]


def test_a_loss_report_fills_its_buffer_with_128_byte_entries() -> None:
    report, _, buffer = new_report(1 << 20)
    created = 0
    while report.create_entry(
        32, T0, created, 10, "aeron:udp?endpoint=10.0.12.34:40123", "/10.0.12.34:40123"
    ):
        created += 1
    assert created == (1 << 20) // 128 == 8192
    assert len(entries(buffer)) == created


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 2**40),
            st.integers(0, 2**45),
            st.integers(-(2**31), 2**31 - 1),
            st.integers(-(2**31), 2**31 - 1),
            st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=200),
            st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=60),
            st.lists(st.tuples(st.integers(0, 2**20), st.integers(0, 10**6)), max_size=3),
        ),
        max_size=30,
    )
)
def test_round_trip_and_both_decoders_agree(specs) -> None:
    report, raw, buffer = new_report(4096)
    expected = []
    for lost, ts, session, stream, channel, source, observations in specs:
        entry = report.create_entry(lost, ts, session, stream, channel, source)
        if entry is None:
            break
        count, last = 1, ts
        for more, dt in observations:
            last = ts + dt
            entry.record_observation(more, last)
            lost += more
            count += 1
        expected.append(LossEntry(count, lost, ts, last, session, stream, channel, source))
    assert entries(buffer) == expected
    assert [LossEntry(*e) for e in decode_entries(bytes(raw))] == expected


def test_non_ascii_is_written_as_question_marks_one_byte_per_char() -> None:
    report, _, buffer = new_report()
    assert report.create_entry(1, T0, 1, 1, "aeron:udp?endpoint=hôst:1", "/é") is not None
    (entry,) = entries(buffer)
    assert (entry.channel, entry.source) == ("aeron:udp?endpoint=h?st:1", "/?")


# --- corrupt and truncated buffers ---------------------------------------------------------------------------


def _two_entries() -> bytearray:
    report, raw, _ = new_report(1024)
    report.create_entry(100, T0, 1, 1, CHANNEL, SOURCE)
    report.create_entry(200, T0, 2, 2, CHANNEL, SOURCE)
    return raw


def _check_corrupt(raw: bytes | bytearray, offset: int, words: str) -> None:
    buffer = AtomicBuffer(bytearray(raw))
    seen: list[LossEntry] = []
    with pytest.raises(CorruptLossReportError, match=rf"offset {offset}: .*{words}") as info:
        read_loss_report(buffer, seen.append)
    assert info.value.offset == offset
    assert len(seen) == offset // 128  # the good entries before it were delivered
    with pytest.raises(LossFileError, match=rf"offset {offset}: .*{words}"):
        decode_entries(bytes(raw))


@pytest.mark.parametrize("cut", [130, 150, 180, 200, 220])
def test_a_truncated_entry_is_reported_with_its_offset(cut: int) -> None:
    _check_corrupt(_two_entries()[:cut], 128, "past the end")


def test_a_cut_inside_the_next_count_is_corrupt_but_a_cut_at_an_entry_boundary_is_the_end() -> None:
    raw = _two_entries()
    _check_corrupt(raw[:260], 256, "observation count runs past the end")
    assert len(entries(AtomicBuffer(bytearray(raw[:256])))) == 2
    assert len(decode_entries(bytes(raw[:256]))) == 2


def test_garbled_lengths_and_counts_are_corrupt() -> None:
    raw = _two_entries()
    struct.pack_into("<i", raw, 128 + 40, 1 << 20)
    _check_corrupt(raw, 128, "channel length 1048576")
    raw = _two_entries()
    struct.pack_into("<i", raw, 128 + 40, -5)
    _check_corrupt(raw, 128, "channel length -5")
    raw = _two_entries()
    struct.pack_into("<i", raw, 128 + 44 + 34, 1 << 30)
    _check_corrupt(raw, 128, "source length")
    raw = _two_entries()
    struct.pack_into("<q", raw, 0, -1)
    _check_corrupt(raw, 0, "negative observation count")


# --- the file ------------------------------------------------------------------------------------------------


def test_loss_report_file_maps_a_drivers_file_read_only(tmp_path: Path) -> None:
    path = create_loss_report_file(tmp_path, 1 << 20, 4096)
    assert path == tmp_path / "loss-report.dat" and path.stat().st_size == 1 << 20
    with LossReportFile.map_existing(tmp_path, writable=True) as f:
        assert f.buffer is not None
        LossReport(f.buffer).create_entry(64, T0, 5, 6, CHANNEL, SOURCE)
    for location in (tmp_path, path):
        with LossReportFile.map_existing(location) as f:
            assert list(f.entries()) == [LossEntry(1, 64, T0, T0, 5, 6, CHANNEL, SOURCE)]
            assert f.buffer is not None
            with pytest.raises(TypeError):
                f.buffer.view[0] = 1  # read-only mapping


def test_loss_report_file_edge_cases(tmp_path: Path) -> None:
    (tmp_path / "loss-report.dat").write_bytes(b"")
    with LossReportFile.map_existing(tmp_path) as f:
        assert list(f.entries()) == []
    with pytest.raises(FileNotFoundError):
        LossReportFile.map_existing(tmp_path / "missing")
    assert LossReportFile.path_for(tmp_path / "missing") == tmp_path / "missing" / "loss-report.dat"
    assert LossReportFile.path_for(tmp_path / "x.dat") == tmp_path / "x.dat"
