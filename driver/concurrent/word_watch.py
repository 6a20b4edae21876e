"""WordWatch: did any of these 64-bit words in mapped memory move since the last look? (native/include/amd_watch.h)

The one owner of ``amd_watch_changed``. The words are fields other processes write (a publication's term
tails, a subscriber's position counter, the to-driver ring's tail); an idle agent runner uses the answer to
skip a duty cycle that would find nothing to do (driver/agent/work_probe.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from driver._native import ffi, lib
from driver.concurrent.atomic_buffer import AtomicBuffer

Word = tuple[AtomicBuffer, int]
"""A buffer and the offset of an aligned 64-bit field in it."""


class WatchVersion:
    """Bumped by whoever changes what a watch should hold (a subscriber joins or leaves a stream, a
    publication comes or goes): the watcher rebuilds its word list when the value differs from its own."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    def bump(self) -> None:
        self.value += 1


class WordWatch:
    """Watches a set of words; :meth:`watch` replaces the set, :meth:`changed` compares and remembers."""

    __slots__ = ("_count", "_seen", "_words")

    def __init__(self, words: Sequence[Word] = ()) -> None:
        self._count = 0
        self._words = ffi.new("int64_t *[]", 0)
        self._seen = ffi.new("int64_t[]", 0)
        self.watch(words)

    def watch(self, words: Sequence[Word]) -> None:
        """Watch ``words`` from now on (their current values count as seen). The buffers must stay open until
        the next ``watch`` call: call it with the new set before closing any of them."""
        count = len(words)
        pointers = ffi.new("int64_t *[]", count)
        for i, (buffer, offset) in enumerate(words):
            if offset & 7:
                raise ValueError(f"a watched word must be 8-byte aligned, not at offset {offset}")
            pointers[i] = ffi.cast("int64_t *", buffer.address(offset))
        seen = ffi.new("int64_t[]", count)
        lib.amd_watch_changed(pointers, seen, count)
        self._words, self._seen, self._count = pointers, seen, count

    def __len__(self) -> int:
        return self._count

    def changed(self) -> bool:
        """Whether any watched word differs from what the last call (or ``watch``) saw; remembers the values."""
        return lib.amd_watch_changed(self._words, self._seen, self._count) != 0

    def moved(self) -> int:
        """How far the watched words moved since the last look, summed over them (bytes, for positions);
        remembers the values like :meth:`changed`."""
        return lib.amd_watch_moved(self._words, self._seen, self._count)

    def spin(self, spin_ns: int) -> bool:
        """:meth:`changed`, repeated without giving up the CPU for at most ``spin_ns``, until something moves."""
        return lib.amd_watch_spin(self._words, self._seen, self._count, spin_ns) != 0
