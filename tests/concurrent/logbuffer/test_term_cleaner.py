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
