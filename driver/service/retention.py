"""Retention (docs/service.md section 3): which data sets a service keeps, by age, total size and count. The
choice is a pure function of the data sets and the clock; the service applies it as it runs (after each
recording and every ``RETENTION_INTERVAL_S``), deleting the oldest first and never one in use."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

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


def beyond_retention(
    datasets: Sequence[DataSet], retention: Retention, now_ns: int, in_use: Collection[str] = ()
) -> list[DataSet]:
    """The data sets to delete, oldest first: those whose last message is older than ``max_age_s``, then the
    oldest until at most ``max_datasets`` remain and their bytes are within ``max_bytes``. A data set in use
    (being recorded or replayed) is kept and still counts."""
    ordered = sorted(datasets, key=lambda d: (d.end_time_ns or d.start_time_ns, d.created, d.id))
    drop: list[DataSet] = []
    kept: list[DataSet] = []
    for dataset in ordered:
        too_old = (
            retention.max_age_s is not None
            and now_ns - (dataset.end_time_ns or dataset.start_time_ns) > retention.max_age_s * 1e9
        )
        (drop if too_old and dataset.id not in in_use else kept).append(dataset)
    total = sum(d.bytes for d in kept)
    for dataset in list(kept):
        over_count = retention.max_datasets is not None and len(kept) > retention.max_datasets
        over_bytes = retention.max_bytes is not None and total > retention.max_bytes
        if not (over_count or over_bytes):
            break
        if dataset.id in in_use:
            continue
        kept.remove(dataset)
        total -= dataset.bytes
        drop.append(dataset)
    return drop
