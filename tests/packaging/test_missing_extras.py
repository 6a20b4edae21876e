"""Every command that needs an optional extra says which one and how to install it: one line, exit code 2.

The extra's modules are made unimportable for real (a meta-path blocker in a subprocess's sitecustomize), as on
an install without the extra.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from driver.reports.loss_report import create_loss_report_file
from tests.support.blocked_imports import blocked_env

ROOT = Path(__file__).resolve().parents[2]


def mediadriver(tmp_path: Path, blocked: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "driver", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=blocked_env(tmp_path, blocked, ROOT),
        cwd=tmp_path,
    )


def assert_one_line(result: subprocess.CompletedProcess[str], command: str, extra: str, module: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        f"mediadriver: {command} needs the '{extra}' extra ({module} is not installed): "
        f"pip install 'aio-media-driver[{extra}]'"
    ]


@pytest.mark.parametrize("module", ["uvicorn", "fastapi"])
def test_run_with_http_without_the_service_extra(tmp_path: Path, module: str) -> None:
    aeron_dir = tmp_path / "aeron"
    result = mediadriver(
        tmp_path, [module], "run", "--dir", str(aeron_dir), "--archive",
        "--archive-dir", str(tmp_path / "archive"), "--http", "0",
    )  # fmt: skip
    assert_one_line(result, "run --http", "service", module)
    assert not aeron_dir.exists()  # said before the driver started


def test_serve_without_the_service_extra(tmp_path: Path) -> None:
    result = mediadriver(tmp_path, ["uvicorn", "fastapi"], "serve", "--archive-dir", str(tmp_path))
    assert_one_line(result, "serve", "service", "fastapi")


@pytest.mark.parametrize("module", ["pyspark", "pyarrow", "matplotlib"])
def test_analyze_loss_without_the_analysis_extra(tmp_path: Path, module: str) -> None:
    create_loss_report_file(tmp_path, 4096, 4096)
    result = mediadriver(tmp_path, [module], "analyze-loss", str(tmp_path), "--out", str(tmp_path / "out"))
    assert_one_line(result, "analyze-loss", "analysis", module)
    assert not (tmp_path / "out").exists()


def test_commands_without_extras_still_work_when_both_are_missing(tmp_path: Path) -> None:
    create_loss_report_file(tmp_path, 4096, 4096)
    result = mediadriver(tmp_path, ["uvicorn", "fastapi", "pyspark", "matplotlib"], "loss", "--dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
