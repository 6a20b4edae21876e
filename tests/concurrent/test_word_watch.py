"""WordWatch over a real mapped file, written by another process as a client would."""

from __future__ import annotations

import mmap
import multiprocessing
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.word_watch import WatchVersion, WordWatch


@pytest.fixture
def mapped(tmp_path: Path) -> Iterator[AtomicBuffer]:
    path = tmp_path / "words"
    path.write_bytes(bytes(4096))
    with open(path, "r+b") as f:
        mem = mmap.mmap(f.fileno(), 4096)
    buffer = AtomicBuffer(mem)
    yield buffer
    buffer.close()
    mem.close()


def _write_later(path: str, offset: int, value: int, delay_s: float) -> None:
    with open(path, "r+b") as f:
        mem = mmap.mmap(f.fileno(), 4096)
        time.sleep(delay_s)
        mem[offset : offset + 8] = value.to_bytes(8, "little", signed=True)
        mem.close()


def test_only_a_moved_word_is_news_and_only_once(mapped: AtomicBuffer) -> None:
    watch = WordWatch([(mapped, 0), (mapped, 64)])
    assert len(watch) == 2
    assert not watch.changed()  # what was there when watching began counts as seen
    mapped.put_int64_release(64, 7)
    assert watch.changed()
    assert not watch.changed()  # remembered
    mapped.put_int64_release(8, 9)  # not watched
    assert not watch.changed()


def test_moved_sums_how_far_the_words_went_either_way(mapped: AtomicBuffer) -> None:
    watch = WordWatch([(mapped, 0), (mapped, 64)])
    assert watch.moved() == 0
    mapped.put_int64_release(0, 64)
    mapped.put_int64_release(64, 1024)
    assert watch.moved() == 1088
    assert watch.moved() == 0  # remembered
    mapped.put_int64_release(64, 1000)  # a word reused for another counter may go back
    assert watch.moved() == 24
    mapped.put_int64_release(0, -(2**63))
    mapped.put_int64_release(64, 2**63 - 1)
    assert watch.moved() == 2**63 - 1  # saturates
    assert not watch.changed()


def test_a_new_word_set_replaces_the_old_one(mapped: AtomicBuffer) -> None:
    watch = WordWatch([(mapped, 0)])
    watch.watch([(mapped, 128)])
    mapped.put_int64_release(0, 1)
    assert not watch.changed()
    mapped.put_int64_release(128, 1)
    assert watch.changed()
    watch.watch([])
    assert len(watch) == 0 and not watch.changed() and not watch.spin(1_000)


def test_an_unaligned_word_is_refused_naming_its_offset(mapped: AtomicBuffer) -> None:
    with pytest.raises(ValueError, match="offset 12"):
        WordWatch([(mapped, 12)])


def test_spin_sees_another_process_write_and_gives_up_after_its_budget(
    mapped: AtomicBuffer, tmp_path: Path
) -> None:
    watch = WordWatch([(mapped, 256)])
    started = time.monotonic_ns()
    assert not watch.spin(2_000_000)  # nothing moves: returns after ~2 ms
    assert time.monotonic_ns() - started >= 2_000_000
    writer = multiprocessing.get_context("spawn").Process(
        target=_write_later, args=(str(tmp_path / "words"), 256, -3, 0.2)
    )
    writer.start()
    try:
        started = time.monotonic_ns()
        assert watch.spin(10_000_000_000)  # the other process's write ends the spin
        assert time.monotonic_ns() - started < 5_000_000_000
        assert mapped.get_int64_volatile(256) == -3
    finally:
        writer.join(10)


def test_a_watch_version_only_grows() -> None:
    version = WatchVersion()
    version.bump()
    version.bump()
    assert version.value == 2
