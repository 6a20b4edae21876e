"""Recordings compared by their segment files (docs/archive.md section 7), for replication tests: the same
descriptor geometry and the same bytes over the recorded range [start, stop)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHUNK = 1 << 22
GEOMETRY = ("start_position", "stop_position", "initial_term_id", "term_buffer_length", "mtu_length")
IDENTITY = ("session_id", "stream_id")


def assert_same_recording(a_dir: Path, a: Any, b_dir: Path, b: Any) -> tuple[int, int]:
    """Descriptors ``a`` and ``b`` (RecordingDescriptor) describe the same stream and their segment files hold the
    same bytes from start to stop; returns (start, stop)."""
    for name in (*GEOMETRY, *IDENTITY):
        assert getattr(a, name) == getattr(b, name), f"{name}: {getattr(a, name)} != {getattr(b, name)}"
    segment = a.segment_file_length
    assert segment == b.segment_file_length
    base = a.start_position - (a.start_position & (a.term_buffer_length - 1))
    position = a.start_position
    while position < a.stop_position:
        index, offset = divmod(position - base, segment)
        end = min(a.stop_position, base + (index + 1) * segment)
        with (
            (a_dir / f"{a.recording_id}-{index}.rec").open("rb") as fa,
            (b_dir / f"{b.recording_id}-{index}.rec").open("rb") as fb,
        ):
            fa.seek(offset)
            fb.seek(offset)
            while position < end:
                chunk = min(end - position, CHUNK)
                assert fa.read(chunk) == fb.read(chunk), f"segment {index} differs in [{position}, +{chunk})"
                position += chunk
    return a.start_position, a.stop_position
