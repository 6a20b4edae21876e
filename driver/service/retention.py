"""Retention (docs/service.md section 3): which data sets a service keeps, by age, disk use and count. The
choice is a pure function of the data sets, their sizes and the clock; the service applies it as it runs (after
each recording and every ``RETENTION_INTERVAL_S``), deleting the oldest first and never one in use."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from driver.archive.segment_file import NEXT_SEGMENT_SUFFIX, parse_segment_file_name
from driver.service.models import DataSet

RETENTION_INTERVAL_S = 10.0


@dataclass(frozen=True)
class Retention:
    """None: no bound of that kind."""

    max_age_s: float | None = None
    max_bytes: int | None = None
    max_datasets: int | None = None
    interval_s: float = RETENTION_INTERVAL_S
    clock: Callable[[], int] = field(default=time.time_ns, compare=False, repr=False)
    """Epoch ns that ages are measured against (a test's own clock)."""

    @property
    def bounded(self) -> bool:
        return not (self.max_age_s is None and self.max_bytes is None and self.max_datasets is None)


def recording_disk_use(archive_dir: Path) -> tuple[int, dict[int, int]]:
    """Bytes the archive's recording files take on disk (segments as allocated, staged ones too, indexes and
    checksums): in all, and by recording id."""
    total = 0
    by_recording: dict[int, int] = {}
    with os.scandir(archive_dir) as entries:
        for entry in entries:
            parsed = parse_segment_file_name(entry.name.removesuffix(NEXT_SEGMENT_SUFFIX))
            if parsed is not None:
                recording_id = parsed[0]
            else:
                stem, dot, suffix = entry.name.partition(".")
                if not (dot and stem.isdigit() and suffix in ("idx", "crc")):
                    continue
                recording_id = int(stem)
            try:
                used = entry.stat(follow_symlinks=False).st_blocks * 512
            except OSError:  # deleted meanwhile
                continue
            total += used
            by_recording[recording_id] = by_recording.get(recording_id, 0) + used
    return total, by_recording


def beyond_retention(
    datasets: Sequence[DataSet],
    retention: Retention,
    now_ns: int,
    in_use: Collection[str] = (),
    sizes: Mapping[str, int] | None = None,
    other_bytes: int = 0,
) -> list[DataSet]:
    """The data sets to delete, oldest first: those whose last message is older than ``max_age_s``, then the
    oldest until at most ``max_datasets`` remain and their bytes are within ``max_bytes``. A data set in use
    (being recorded or replayed) is kept and still counts. ``sizes``: each data set's bytes by id (else its
    manifest's); ``other_bytes``: what counts towards ``max_bytes`` and no data set here can free."""
    size = (lambda d: d.bytes) if sizes is None else (lambda d: sizes.get(d.id, 0))
    ordered = sorted(datasets, key=lambda d: (d.end_time_ns or d.start_time_ns, d.created, d.id))
    drop: list[DataSet] = []
    kept: list[DataSet] = []
    for dataset in ordered:
        too_old = (
            retention.max_age_s is not None
            and now_ns - (dataset.end_time_ns or dataset.start_time_ns) > retention.max_age_s * 1e9
        )
        (drop if too_old and dataset.id not in in_use else kept).append(dataset)
    total = other_bytes + sum(size(d) for d in kept)
    for dataset in list(kept):
        over_count = retention.max_datasets is not None and len(kept) > retention.max_datasets
        over_bytes = retention.max_bytes is not None and total > retention.max_bytes
        if not (over_count or over_bytes):
            break
        if dataset.id in in_use:
            continue
        kept.remove(dataset)
        total -= size(dataset)
        drop.append(dataset)
    return drop
