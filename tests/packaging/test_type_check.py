"""The public client and archive-client API type-check (mypy, settings in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_client_and_archive_client_are_mypy_clean() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout
