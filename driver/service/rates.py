"""A data set's message rate over time (docs/service.md section 2, ``GET /datasets/{id}/rate``), from its
recordings' sidecar indexes (docs/archive.md section 18): each entry gives the messages recorded up to a time,
so the counts at the buckets' edges, interpolated and summed over the recordings, give messages per bucket
without reading a segment."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import BaseModel

from driver.archive.recording_index import NULL_TIME, read_index
from driver.service.models import DataSet


class MessageRate(BaseModel):
    start_time_ns: int
    bucket_s: float
    messages: list[int]
    """Messages recorded in each bucket, oldest first."""


def message_rate(archive_dir: Path, dataset: DataSet, buckets: int) -> MessageRate:
    start = dataset.start_time_ns
    end = max(dataset.end_time_ns, start + 1)
    edges = np.linspace(start, end, buckets + 1)
    total = np.zeros(buckets)
    for rec in dataset.recordings:
        index = read_index(archive_dir, rec.recording_id)
        if index is None:
            continue
        timed = index[index["time_ns"] != NULL_TIME]
        if not len(timed):
            continue
        times = np.concatenate(([min(rec.start_time_ns, int(timed["time_ns"][0]))], timed["time_ns"]))
        counts = np.concatenate(([0], timed["count"]))
        total += np.diff(np.interp(edges, times, counts))
    return MessageRate(
        start_time_ns=start,
        bucket_s=(end - start) / buckets / 1e9,
        messages=[int(n) for n in np.round(total)],
    )
