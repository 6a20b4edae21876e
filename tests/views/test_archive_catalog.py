"""``mediadriver archive list|describe|verify|segments`` on catalogs written with driver/archive/catalog.py and on
a directory 1.15.1's own archive wrote (docs/archive.md sections 7, 10 and 12)."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest

from driver.archive.catalog import Catalog
from driver.archive.segment_file import create_segment_file, segment_path, segment_position
from driver.cli import main
from driver.concurrent.logbuffer.frame_descriptor import DATA_HEADER, HDR_TYPE_DATA, UNFRAGMENTED
from driver.util.bit_util import align
from driver.util.text import printable
from driver.views.archive_catalog import open_catalog, verify_entry
from tests.archive.conftest import archive_java  # noqa: F401  (fixtures of `recorded`)
from tests.archive.test_java_archive_files import START as JAVA_START
from tests.archive.test_java_archive_files import recorded  # noqa: F401  (fixture)

TERM = 64 * 1024
SEGMENT = 64 * 1024
SESSION, STREAM, INITIAL_TERM_ID = -77, 1001, 5
T0_MS = 1_700_000_000_000


def write_frames(archive_dir: Path, recording_id: int, start: int, end: int, frame_length: int) -> int:
    """DATA frames of ``frame_length`` from ``start`` as the recorder lays them out; returns where they end
    (frames never cross a term: the last one of a term is a PAD)."""
    position = start
    while position < end:
        term_offset = position & (TERM - 1)
        length = frame_length
        frame_type = HDR_TYPE_DATA
        if term_offset + align(frame_length, 32) > TERM:
            length, frame_type = TERM - term_offset, 0
        index, offset = segment_position(start, position, TERM, SEGMENT)
        path = segment_path(archive_dir, recording_id, index)
        if not path.exists():
            create_segment_file(path, SEGMENT)
        header = DATA_HEADER.pack(
            length,
            0,
            UNFRAGMENTED,
            frame_type,
            term_offset,
            SESSION,
            STREAM,
            INITIAL_TERM_ID + position // TERM,
            0,
        )
        with open(path, "r+b") as f:
            os.pwrite(f.fileno(), header, offset)
        position += align(length, 32)
    return position


def add(catalog: Catalog, start: int, channel: str = "aeron:udp?endpoint=localhost:40123") -> int:
    return catalog.add_new_recording(
        start_position=start,
        start_timestamp=T0_MS,
        initial_term_id=INITIAL_TERM_ID,
        segment_file_length=SEGMENT,
        term_buffer_length=TERM,
        mtu_length=1408,
        session_id=SESSION,
        stream_id=STREAM,
        stripped_channel=channel,
        original_channel=channel,
        source_identity="127.0.0.1:5555",
    )


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    """Recording 0: late start 10560, three segments, stopped cleanly. Recording 1: open (no stop position)."""
    archive_dir = tmp_path / "aeron-archive"
    archive_dir.mkdir()
    with Catalog(archive_dir) as catalog:
        r0 = add(catalog, 10560)
        stop = write_frames(archive_dir, r0, 10560, 150_000, 1000)
        catalog.recording_stopped(r0, stop, T0_MS + 5000)
        r1 = add(catalog, 0, "aeron:ipc")
        write_frames(archive_dir, r1, 0, 4000, 96)
    return archive_dir


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_is_an_aligned_table_with_local_times(archive: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "archive", "list", "--dir", str(archive))
    assert code == 0
    title, header, row0, row1 = out.splitlines()
    assert "2 recording(s)" in title
    assert header.split()[:6] == ["ID", "VALID", "STREAM", "SESSION", "START", "STOP"]
    with Catalog(archive, read_only=True) as catalog:
        stop = catalog.stop_position(0)
    fields = row0.split()
    assert fields[:6] == ["0", "yes", "1001", "-77", "10560", str(stop)]
    assert str(stop - 10560) in fields and fields[-1] == "aeron:udp?endpoint=localhost:40123"
    assert row1.split()[5] == "-1" and row1.endswith("aeron:ipc")
    # Columns line up: each header starts where its column starts.
    assert row0.index("aeron:udp") == row1.index("aeron:ipc") == header.index("CHANNEL")
    from datetime import datetime

    local = datetime.fromtimestamp(T0_MS / 1000).astimezone().isoformat(timespec="milliseconds")
    assert local in row0


def test_list_csv_and_json(archive: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "archive", "--dir", str(archive), "list", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["id"] for r in rows] == ["0", "1"]
    assert rows[0]["segments"] == "3" and rows[1]["stop_position"] == "-1" and rows[1]["bytes"] == ""
    code, out, _ = run(capsys, "archive", "list", "--dir", str(archive), "--format", "json")
    data = json.loads(out)
    assert [r["channel"] for r in data["recordings"]] == ["aeron:udp?endpoint=localhost:40123", "aeron:ipc"]
    assert data["recordings"][0]["start_position"] == 10560


def test_describe_prints_every_field_and_the_segments(
    archive: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "archive", "describe", "0", "--dir", str(archive))
    assert code == 0
    for field in (
        "controlSessionId",
        "correlationId",
        "startTimestamp",
        "stopTimestamp",
        "initialTermId",
        "segmentFileLength",
        "termBufferLength",
        "mtuLength",
        "strippedChannel",
        "originalChannel",
        "sourceIdentity",
    ):
        assert field in out
    assert "127.0.0.1:5555" in out and "0-0.rec" in out and "0-2.rec" in out


def test_segments_gives_positions_size_and_presence(
    archive: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.remove(segment_path(archive, 0, 1))
    code, out, _ = run(capsys, "archive", "segments", "0", "--dir", str(archive))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["INDEX", "FILE", "FIRST", "END", "SIZE", "STATUS"]
    assert lines[1].split() == ["0", "0-0.rec", "10560", "65536", str(SEGMENT), "ok"]
    assert lines[2].split() == ["1", "0-1.rec", "65536", "131072", "MISSING"]
    with Catalog(archive, read_only=True) as catalog:
        stop = catalog.stop_position(0)
    assert lines[3].split()[:4] == ["2", "0-2.rec", "131072", str(stop)]


def test_verify_passes_a_healthy_archive(archive: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "archive", "verify", "--dir", str(archive))
    assert code == 0, out
    assert "recording 0: OK" in out and "recording 1: OK" in out
    assert "the data reaches 4032" in out  # the open recording: where the recovery scan ends


def test_verify_names_each_problem_and_changes_nothing(
    archive: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.remove(segment_path(archive, 0, 1))
    os.truncate(segment_path(archive, 0, 2), 4096)
    before = (archive / "archive.catalog").read_bytes()
    code, out, _ = run(capsys, "archive", "verify", "0", "--dir", str(archive))
    assert code == 3
    assert "segment file 0-1.rec is missing (positions 65536..131072)" in out
    assert "segment file 0-2.rec is 4096 bytes, expected 65536" in out
    assert (archive / "archive.catalog").read_bytes() == before


def test_verify_finds_stop_positions_that_disagree_with_the_data(tmp_path: Path) -> None:
    with Catalog(tmp_path) as catalog:
        short = add(catalog, 0)
        end = write_frames(tmp_path, short, 0, 20_000, 500)
        catalog.recording_stopped(short, end + 1024, T0_MS)  # claims more than was written
        long = add(catalog, 0)
        end = write_frames(tmp_path, long, 0, 20_000, 500)
        catalog.recording_stopped(long, end - 512, T0_MS)  # data goes on past the stop
        bad = add(catalog, 0)
        write_frames(tmp_path, bad, 0, 2000, 500)
        with open(segment_path(tmp_path, bad, 0), "r+b") as f:  # a foreign session id in the third frame
            os.pwrite(f.fileno(), (12345).to_bytes(4, "little", signed=True), 2 * 512 + 12)
        catalog.recording_stopped(bad, 2048, T0_MS)
    with open_catalog(tmp_path) as catalog:
        results = {e.recording_id: verify_entry(tmp_path, e) for e in catalog}
    assert results[short].problems == [f"data ends at {end}, before the stop position {end + 1024}"]
    assert results[long].problems == [
        f"frames continue past the stop position {end - 512} up to at least {end}"
    ]
    assert results[bad].problems == [
        "frame at 1024 (2-0.rec offset 1024): session/stream 12345/1001, the recording's are -77/1001"
    ]


def test_control_characters_are_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Catalog(tmp_path) as catalog:
        add(catalog, 0, "aeron:ipc?alias=a\x1b[2Jb\nc")
    assert printable("a\x1b[2Jb\nc") == "a\\x1b[2Jb\\nc"
    for tool in (["list"], ["describe", "0"]):
        code, out, _ = run(capsys, "archive", *tool, "--dir", str(tmp_path))
        assert code == 0 and "\x1b" not in out and "alias=a\\x1b[2Jb\\nc" in out


def test_missing_dir_catalog_and_recording(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "archive", "list", "--dir", str(tmp_path / "nope"))
    assert code == 1 and f"no archive directory {tmp_path / 'nope'}" in err and "--dir" in err
    code, _, err = run(capsys, "archive", "verify", "--dir", str(tmp_path))
    assert code == 1 and f"no catalog {tmp_path / 'archive.catalog'}" in err
    with Catalog(tmp_path) as catalog:
        add(catalog, 0)
    code, _, err = run(capsys, "archive", "describe", "7", "--dir", str(tmp_path))
    assert code == 1 and "no recording 7" in err and "0..0" in err


def test_bare_archive_command_runs_the_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No tool: the archive server, which needs a running driver and says how to start one."""
    aeron_dir = tmp_path / "no-driver"
    code, _, err = run(
        capsys, "archive", "--dir", str(tmp_path / "a"), "--aeron-dir", str(aeron_dir), "--driver-timeout", "0.2"
    )
    assert code == 1 and "the archive needs a running driver" in err and f"mediadriver run --dir {aeron_dir}" in err


# --- a directory 1.15.1's own archive wrote (the fixture of tests/archive/test_java_archive_files.py) -----------


@pytest.mark.interop
def test_tools_read_a_directory_1_15_1_wrote(
    recorded: tuple[Path, str, int],  # noqa: F811  (the imported fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    archive_dir, _, stop = recorded
    before = {p.name: p.read_bytes() for p in archive_dir.iterdir() if p.name != "archive-mark.dat"}
    code, out, _ = run(capsys, "archive", "list", "--dir", str(archive_dir))
    assert code == 0
    row = out.splitlines()[2].split()
    assert row[:6] == ["0", "yes", "33", row[3], str(JAVA_START), str(stop)]
    assert row[-1] == "aeron:ipc" and str(stop - JAVA_START) in row
    code, out, _ = run(capsys, "archive", "describe", "0", "--dir", str(archive_dir))
    assert code == 0 and "initialTermId" in out and "0-0.rec" in out
    code, out, _ = run(capsys, "archive", "verify", "--dir", str(archive_dir))
    assert code == 0, out
    assert f"recording 0: OK, frames well formed up to {stop}" in out
    code, out, _ = run(capsys, "archive", "segments", "0", "--dir", str(archive_dir))
    assert code == 0
    assert [line.split()[-1] for line in out.splitlines()[1:]].count("ok") == len(out.splitlines()) - 1
    code, out, _ = run(capsys, "archive", "list", "--dir", str(archive_dir), "--format", "json")
    assert json.loads(out)["recordings"][0]["stop_position"] == stop
    # Read-only: nothing the tools opened changed.
    assert {p.name: p.read_bytes() for p in archive_dir.iterdir() if p.name != "archive-mark.dat"} == before
