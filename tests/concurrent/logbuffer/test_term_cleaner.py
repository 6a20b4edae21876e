"""Cleaning: zeroing consumed term space."""

from __future__ import annotations

import pytest

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer.term_cleaner import clean


def test_clean_zeroes_exactly_the_range() -> None:
    term = AtomicBuffer(bytearray(b"\xff" * 65536))
    clean(term, 4096, 8192)
    view = term.view
    assert view[4095] == 0xFF and view[4096 + 8192] == 0xFF
    assert bytes(view[4096 : 4096 + 8192]) == bytes(8192)
    clean(term, 0, 65536)
    assert bytes(view) == bytes(65536)
    with pytest.raises(ValueError, match="cannot clean 2 bytes at 65535"):
        clean(term, 65535, 2)
    term.close()


@pytest.mark.parametrize(
    ("offset", "length"),
    [(0, 1 << 20), (3, (1 << 20) + 5), (64, 256 * 1024), (7, 256 * 1024 - 1), (1, 300_001), (4096, 8 << 20)],
)
def test_large_cleans_stream_zeroes_exactly_the_range(offset: int, length: int) -> None:
    """Large cleans use non-temporal stores (native amd_zero): unaligned edges must still be exact."""
    size = offset + length + 128
    term = AtomicBuffer(bytearray(b"\xff" * size))
    term.set_zero(offset, length)
    view = term.view
    assert bytes(view[offset : offset + length]) == bytes(length)
    assert bytes(view[:offset]) == b"\xff" * offset
    assert bytes(view[offset + length :]) == b"\xff" * 128
    term.close()
