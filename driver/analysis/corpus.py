"""A synthetic fleet of loss-report.dat files written by our ``LossReport`` writer (tests and benchmarks).

``generate_corpus(root, files=1000, entries=1_000_000)`` writes ``root/host-NNNN/loss-report.dat``, each a
1 MiB file like a driver's (sparse: only the entries are written), deterministic for a seed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.reports.loss_report import LOSS_REPORT_FILE, LossReport

FILE_LENGTH = 1 << 20
BASE_EPOCH_MS = 1_700_000_000_000
SPAN_MS = 7 * 86_400_000  # a week of observations


@dataclass(frozen=True)
class Corpus:
    root: Path
    files: list[Path]
    entries: int


def _channels(rng: np.random.Generator, count: int) -> list[str]:
    channels = []
    for i in range(count):
        a, b = (int(x) for x in rng.integers(0, 256, 2))
        if i % 5 == 4:  # multicast with parameters: a longer, 192-byte entry
            channels.append(f"aeron:udp?endpoint=239.1.{a}.{b}:40456|interface=10.0.{a}.0/24|ttl=8")
        else:
            channels.append(f"aeron:udp?endpoint=10.0.{a}.{b}:{40000 + i}")
    return channels


def file_sizes(files: int, entries: int, rng: np.random.Generator, spread: int = 400) -> list[int]:
    """``files`` entry counts around entries/files, summing exactly to ``entries``."""
    base, extra = divmod(entries, files)
    sizes = np.full(files, base, dtype=np.int64)
    sizes[:extra] += 1
    if files > 1 and spread:
        r = rng.integers(0, min(spread, base // 2) + 1, files)
        sizes += r - np.roll(r, 1)  # differences of a cycle sum to zero
    return [int(s) for s in sizes]


def write_loss_file(
    path: Path, rng: np.random.Generator, count: int, channels: list[str], sources: list[str]
) -> int:
    """One loss file of ``count`` entries, some with repeated observations; returns entries written."""
    buffer = bytearray(FILE_LENGTH)
    atomic = AtomicBuffer(buffer)
    report = LossReport(atomic)
    ch = rng.integers(0, len(channels), count).tolist()
    src = rng.integers(0, len(sources), count).tolist()
    streams = rng.integers(1001, 1011, count).tolist()
    sessions = rng.integers(-(2**31), 2**31, count).tolist()
    lost = (rng.integers(1, 2048, count) * 32).tolist()
    first = (BASE_EPOCH_MS + rng.integers(0, SPAN_MS, count)).tolist()
    repeats = rng.choice(4, count, p=[0.7, 0.2, 0.07, 0.03]).tolist()
    written = 0
    for i in range(count):
        entry = report.create_entry(
            lost[i], first[i], sessions[i], streams[i], channels[ch[i]], sources[src[i]]
        )
        if entry is None:
            break
        written += 1
        for k in range(repeats[i]):
            entry.record_observation(32 * (k + 1) * (i % 7 + 1), first[i] + 1_000 * (k + 1) * (i % 13 + 1))
    end = report.next_record_offset
    atomic.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(memoryview(buffer)[:end])
        f.truncate(FILE_LENGTH)  # the rest reads as zeros, as in a driver's file, without being written
    return written


def generate_corpus(root: Path, files: int = 1000, entries: int = 1_000_000, seed: int = 1) -> Corpus:
    rng = np.random.default_rng(seed)
    channels = _channels(rng, 40)
    sources = [
        f"/10.0.{a}.{b}:{p}" for a, b, p in rng.integers((0, 0, 1024), (256, 256, 65536), (200, 3)).tolist()
    ]
    paths = []
    total = 0
    for n, size in enumerate(file_sizes(files, entries, rng)):
        path = root / f"host-{n:04d}" / LOSS_REPORT_FILE
        total += write_loss_file(path, rng, size, channels, sources)
        paths.append(path)
    return Corpus(root, paths, total)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    corpus = generate_corpus(args.root, args.files, args.entries, args.seed)
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "root": os.fspath(corpus.root),
                "files": len(corpus.files),
                "entries": corpus.entries,
                "seconds": round(seconds, 2),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
