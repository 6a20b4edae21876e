"""A small tmpfs the test mounts, for running out of space for real (tests run as root; elsewhere they skip)."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def mounted_tmpfs(mount_point: Path, size: str, options: str = "") -> Iterator[Path]:
    """Mount a tmpfs of ``size`` (as mount's ``size=``: 1m, 16m) on ``mount_point``, with more of mount's
    ``options`` (``uid=..,mode=0700``); unmounted after. Skips the test, saying why, where mounting is not
    permitted."""
    mount_point.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", ",".join(filter(None, (f"size={size}", options))), "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip() or result.returncode}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)
