"""``mediadriver analyze-loss`` before Spark starts: missing pyspark, missing or old Java, bad paths."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from driver.analysis.command import PreflightError, resolve_inputs
from driver.reports.loss_report import create_loss_report_file
from harness import install

ROOT = Path(__file__).resolve().parents[2]


def _peer_java_home() -> Path:
    """JAVA_HOME of the Java 11 runtime harness/install.py installs for the Aeron peer."""
    return install.JAVA.parent.parent


PEER_JAVA_HOME = _peer_java_home()


def analyze_loss(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "driver", "analyze-loss", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=ROOT,
    )


def _env_without_java(tmp_path: Path) -> dict[str, str]:
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir(exist_ok=True)
    env = {
        k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "PATH") and not k.startswith("AERON_")
    }
    env["PATH"] = str(empty_bin)  # no java anywhere on it
    return env


def test_missing_java_says_how_to_get_one(tmp_path: Path) -> None:
    create_loss_report_file(tmp_path, 4096, 4096)
    result = analyze_loss(str(tmp_path), "--out", str(tmp_path / "out"), env=_env_without_java(tmp_path))
    assert result.returncode == 1
    assert "no Java runtime found for Spark" in result.stderr
    assert "apt-get install openjdk-17-jre-headless" in result.stderr
    assert "JAVA_HOME" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_java_home_without_java_is_named(tmp_path: Path) -> None:
    create_loss_report_file(tmp_path, 4096, 4096)
    env = _env_without_java(tmp_path)
    env["JAVA_HOME"] = str(tmp_path / "no-jdk")
    result = analyze_loss(str(tmp_path), env=env)
    assert result.returncode == 1
    assert f"JAVA_HOME={tmp_path / 'no-jdk'} has no bin/java" in result.stderr
    assert "openjdk-17-jre-headless" in result.stderr


@pytest.mark.skipif(
    not (PEER_JAVA_HOME / "bin" / "java").exists(), reason="needs the Java 11 peer (make peers)"
)
def test_a_java_too_old_for_spark_4_is_named(tmp_path: Path) -> None:
    import pyspark

    if int(pyspark.__version__.split(".")[0]) < 4:
        pytest.skip("Spark < 4 runs on Java 11")
    create_loss_report_file(tmp_path, 4096, 4096)
    env = _env_without_java(tmp_path)
    env["JAVA_HOME"] = str(PEER_JAVA_HOME)
    result = analyze_loss(str(tmp_path), env=env)
    assert result.returncode == 1
    assert "needs Java 17 or newer" in result.stderr and "is Java 11" in result.stderr


def test_inputs_are_resolved_before_spark_starts(tmp_path: Path) -> None:
    aeron_dir = tmp_path / "aeron"
    aeron_dir.mkdir()
    create_loss_report_file(aeron_dir, 4096, 4096)
    loose = tmp_path / "collected"
    loose.mkdir()
    (loose / "a.loss-report.dat").write_bytes(b"")
    assert resolve_inputs(
        [str(aeron_dir), str(loose), f"{tmp_path}/*/loss-report.dat", "s3a://b/x/*.dat"]
    ) == [
        str(aeron_dir / "loss-report.dat"),
        str(loose),
        f"{tmp_path}/*/loss-report.dat",
        "s3a://b/x/*.dat",
    ]
    with pytest.raises(PreflightError, match="does not exist"):
        resolve_inputs([str(tmp_path / "typo")])
    with pytest.raises(PreflightError, match="matches no files"):
        resolve_inputs([f"{tmp_path}/*/nothing.dat"])


def test_a_bad_path_is_reported_without_starting_spark(tmp_path: Path) -> None:
    result = analyze_loss(str(tmp_path / "typo"), env=_env_without_java(tmp_path))
    assert result.returncode == 1
    assert "typo does not exist" in result.stderr


def test_a_spark_setting_that_is_not_key_value_is_named(tmp_path: Path) -> None:
    env = dict(os.environ)
    report = str(tmp_path / "loss-report.dat")  # the settings are read before the inputs are looked at
    result = analyze_loss(report, "--out", str(tmp_path / "out"), "--conf", "spark.driver.memory", env=env)
    assert result.returncode == 1
    assert result.stderr == "mediadriver analyze-loss: --conf 'spark.driver.memory': expected KEY=VALUE\n"
    archive_dir = tmp_path / "archive"
    archive_dir.mkdir()
    export = subprocess.run(
        [
            sys.executable,
            "-m",
            "driver",
            "archive",
            "--dir",
            str(archive_dir),
            "export",
            "--out",
            str(tmp_path / "o"),
            "--conf",
            "x",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert export.returncode != 0 and "--conf 'x': expected KEY=VALUE" in export.stderr, export.stderr
