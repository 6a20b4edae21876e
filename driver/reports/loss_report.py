"""loss-report.dat (spec/lossreport.md): created with the driver; entries are written by the conductor."""

from __future__ import annotations

from pathlib import Path

from driver.util.bit_util import align

LOSS_REPORT_FILE = "loss-report.dat"


def create_loss_report_file(directory: Path, buffer_length: int, page_size: int) -> Path:
    path = directory / LOSS_REPORT_FILE
    with open(path, "wb") as f:
        f.truncate(align(buffer_length, page_size))
    return path
