"""The recorder's message count for the sidecar index (docs/archive.md section 18): one native walk per block."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from driver.archive.recording_index import count_messages
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.protocol.frames import DATA_HEADER, HDR_TYPE_DATA, HDR_TYPE_PAD
from driver.util.bit_util import align

T = 64 * 1024
FLAG_CASES = (0xC0, 0x80, 0x40, 0x00)  # unfragmented, BEGIN, END, middle


@given(
    st.lists(
        st.tuples(st.integers(32, 3000), st.sampled_from(FLAG_CASES), st.booleans()), min_size=0, max_size=40
    ),
    st.integers(0, 40),
    st.integers(0, 40),
)
def test_native_count_matches_the_python_walk(
    frames: list[tuple[int, int, bool]], first: int, last: int
) -> None:
    """DATA frames with BEGIN set are counted, padding never, and the walk stops at the first uncommitted
    frame, whatever block of whole frames the recorder hands it."""
    term = AtomicBuffer(bytearray(T))
    try:
        offset = 0
        ends = [0]
        for length, flags, padding in frames:
            if offset + align(length, 32) > T:
                break
            frame_type = HDR_TYPE_PAD if padding else HDR_TYPE_DATA
            DATA_HEADER.pack_into(term.view, offset, length, 0, flags, frame_type, offset, 1, 2, 3, 0)
            offset += align(length, 32)
            ends.append(offset)
        start = ends[min(first, len(ends) - 1)]
        end = max(start, ends[min(last, len(ends) - 1)])
        assert term.count_messages(start, end) == count_messages(term.view, start, end - start)
        assert term.count_messages(0, T) == count_messages(term.view, 0, offset)
    finally:
        term.close()
