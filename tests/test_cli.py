"""The ``mediadriver`` command as a user runs it."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from driver.agent.scheduling import restore, use_realtime
from driver.client import Aeron, RegistrationError
from tests.support.wait import wait_for


def mediadriver(*args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "driver", *args], capture_output=True, text=True, timeout=timeout
    )


def test_stat_once_prints_aeron_stat_lines(driver_process) -> None:
    driver = driver_process()
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        aeron.add_counter(1001, "big one").set(1234567)
        result = mediadriver("stat", "--dir", str(driver.aeron_dir), "--once")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert re.fullmatch(rf"\d\d:\d\d:\d\d - Aeron Stat \(CnC v15\), pid {driver.pid}", lines[0])
    assert lines[1] == "=" * 70
    assert lines[2] == "  0:                    0 - Bytes sent"
    assert lines[26] == " 24:                    0 - Client liveness timeouts"
    assert " 41:            1,234,567 - big one" in lines  # after 40 system counters and the heartbeat


def test_errors_prints_the_error_log(driver_process) -> None:
    driver = driver_process()
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        aeron.add_counter(1, "x")
        for _ in range(2):
            with contextlib.suppress(RegistrationError):
                aeron._remove_counter(55555)
    result = mediadriver("errors", "--dir", str(driver.aeron_dir))
    assert result.returncode == 0
    assert "2 observations from" in result.stdout
    assert "Unknown counter: 55555" in result.stdout
    assert "1 distinct errors observed." in result.stdout


def test_stat_without_a_driver_says_what_is_wrong(tmp_path: Path) -> None:
    result = mediadriver("stat", "--dir", str(tmp_path / "nothing"), "--once")
    assert result.returncode == 1
    assert "cnc.dat does not exist" in result.stderr


def test_bad_settings_name_the_setting(tmp_path: Path) -> None:
    result = mediadriver("run", "--dir", str(tmp_path / "a"), "-Daeron.client.liveness.timeout=soon")
    assert result.returncode == 2
    assert "aeron.client.liveness.timeout='soon'" in result.stderr
    result = mediadriver("run", "--dir", str(tmp_path / "a"), "-Dnovalue")
    assert result.returncode == 2
    assert "expected -Dname=value" in result.stderr


def test_env_and_properties_configure_the_driver(driver_process, monkeypatch) -> None:
    monkeypatch.setenv("AERON_CLIENT_LIVENESS_TIMEOUT", "3s")
    driver = driver_process("-Daeron.counters.buffer.length=512k")
    from driver.concurrent.cnc_file import CncFile

    with CncFile.map_existing(driver.aeron_dir / "cnc.dat", writable=False) as cnc:
        assert cnc.client_liveness_timeout_ns == 3_000_000_000
        assert cnc.lengths().counters_values == 512 * 1024


def test_run_help_lists_every_setting() -> None:
    result = mediadriver("run", "--help")
    assert result.returncode == 0
    for prop in (
        "aeron.dir",
        "aeron.client.liveness.timeout",
        "aeron.threading.mode",
        "aeron.timer.interval",
    ):
        assert prop in result.stdout


def test_low_latency_profile_runs_the_driver_real_time_where_permitted(
    driver_process, tmp_path: Path
) -> None:
    driver = driver_process("--profile", "low-latency")
    if not _may_use_realtime():
        pytest.skip("this user may not use SCHED_FIFO (no CAP_SYS_NICE, RLIMIT_RTPRIO 0)")
    wait_for(
        lambda: os.sched_getscheduler(driver.proc.pid) == os.SCHED_FIFO, 10, "the driver to run SCHED_FIFO"
    )
    assert os.sched_getparam(driver.proc.pid).sched_priority == 10
    normal = driver_process(
        "--profile", "low-latency", "-Daeron.driver.realtime.priority=0", directory=tmp_path / "normal"
    )
    with Aeron.connect(aeron_dir=normal.aeron_dir) as aeron:
        aeron.add_counter(1001, "served")
    assert os.sched_getscheduler(normal.proc.pid) == os.SCHED_OTHER
    bad = mediadriver("run", "--dir", str(tmp_path / "bad"), "-Daeron.driver.realtime.priority=100")
    assert bad.returncode == 2
    assert "aeron.driver.realtime.priority='100'" in bad.stderr and "1-99" in bad.stderr


def _may_use_realtime() -> bool:
    before, refused = use_realtime(1)
    if before is not None:
        restore(before)
    return refused is None


def test_low_latency_profile_runs_and_a_property_still_overrides_it(driver_process, tmp_path: Path) -> None:
    driver = driver_process("--profile", "low-latency")
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        assert aeron.add_counter(1001, "served").id >= 0
    bad = mediadriver(
        "run", "--dir", str(tmp_path / "a"), "--profile", "low-latency", "-Daeron.shared.idle.strategy=spinny"
    )
    assert bad.returncode == 2
    assert "aeron.shared.idle.strategy='spinny'" in bad.stderr
    unknown = mediadriver("run", "--dir", str(tmp_path / "b"), "--profile", "fastest")
    assert unknown.returncode == 2
    assert "low-latency" in unknown.stderr
