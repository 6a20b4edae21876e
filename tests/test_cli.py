"""The ``mediadriver`` command as a user runs it."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from driver.agent.scheduling import restore, use_realtime, use_slice
from driver.cli import FAMILIES, build_parser
from driver.client import Aeron, RegistrationError
from harness.cnc import cnc_ready
from harness.wait import wait_for


def mediadriver(*args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "driver", *args], capture_output=True, text=True, timeout=timeout
    )


# What the driver, the archive server, the service and the exporter import; a command that reads a cnc.dat needs
# none of them, and waited for them all (~0.3 s) when the command line imported every command family.
HEAVY = ("driver.archive.archive", "driver.service", "numpy", "prometheus_client", "asyncio")
# `python -m driver ARGS`, then the HEAVY modules it imported on a last line of stderr (this process has them all).
REPORT_IMPORTS = (
    "import runpy, sys\n"
    "try:\n"
    "    runpy.run_module('driver', run_name='__main__', alter_sys=True)\n"
    "finally:\n"
    f"    print('imported:', *(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
)


def heavy_imports(*args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    result = subprocess.run(
        [sys.executable, "-c", REPORT_IMPORTS, *args], capture_output=True, text=True, timeout=20
    )
    *_, last = result.stderr.splitlines()
    assert last.startswith("imported:"), result.stderr
    return result, last.split()[1:]


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
    assert " 42:            1,234,567 - big one" in lines  # after the driver's 41 counters and the heartbeat


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


def test_driver_asks_for_a_short_scheduler_slice_where_the_kernel_has_custom_slices(
    driver_process, tmp_path: Path
) -> None:
    # Linux 6.6-6.11 show se.slice and accept the request but keep their own slice: only a slice read back counts.
    granted = use_slice(200_000) is None and _slice_ns(os.getpid()) == 200_000
    use_slice(0)
    if not granted:
        pytest.skip("this kernel has no custom slices for normal scheduling (Linux 6.12+)")
    default_ns = _slice_ns(os.getpid())
    driver = driver_process()
    wait_for(lambda: _slice_ns(driver.proc.pid) == 100_000, 10, "the driver's thread to ask for a 100 us slice")
    own = driver_process("-Daeron.driver.scheduler.slice=0", directory=tmp_path / "own")
    with Aeron.connect(aeron_dir=own.aeron_dir) as aeron:
        aeron.add_counter(1001, "served")
    assert _slice_ns(own.proc.pid) == default_ns, "0 leaves the kernel's default slice"
    bad = mediadriver("run", "--dir", str(tmp_path / "bad"), "-Daeron.driver.scheduler.slice=50us")
    assert bad.returncode == 2
    assert "aeron.driver.scheduler.slice=50000 ns" in bad.stderr and "100us and 100ms" in bad.stderr


def test_a_chosen_slice_the_kernel_cannot_give_is_named_in_a_warning(tmp_path: Path) -> None:
    if not _may_use_realtime() or shutil.which("chrt") is None:
        pytest.skip("this user may not use SCHED_FIFO (no CAP_SYS_NICE, RLIMIT_RTPRIO 0), or no chrt")
    directory = tmp_path / "fifo"
    # Started under SCHED_FIFO from outside: a time slice of normal scheduling cannot be had.
    proc = subprocess.Popen(
        ["chrt", "-f", "1", sys.executable, "-m", "driver", "run", "--dir", str(directory),
         "-Daeron.driver.scheduler.slice=200us"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_for(lambda: cnc_ready(directory) or proc.poll() is not None, 20, "the driver's cnc.dat")
        with Aeron.connect(aeron_dir=directory) as aeron:  # served: the driver's agents run
            aeron.add_counter(1001, "served")
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=20)
    assert "aeron.driver.scheduler.slice" in stderr and "not under normal scheduling" in stderr, stderr


def _slice_ns(pid: int) -> int | None:
    """The main thread's time slice under EEVDF (se.slice in /proc/PID/sched), None when not shown."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/sched").read_text().splitlines():
            if line.startswith("se.slice"):
                return int(float(line.split(":")[1]))
    return None


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


def test_commands_that_read_a_cnc_file_import_only_their_own_family(driver_process) -> None:
    driver = driver_process()
    directory = str(driver.aeron_dir)
    for args in (["stat", "--once"], ["streams", "--once"], ["errors"], ["loss"]):
        result, heavy = heavy_imports(*args, "--dir", directory)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip()
        assert heavy == [], f"{args[0]} imported {heavy}"
    result, heavy = heavy_imports("stat", "--once", "--table", "-Daeron.dir=" + directory)
    assert result.returncode == 0 and "Bytes sent" in result.stdout, result.stderr
    assert heavy == []
    # The check sees a family that does import them: the archive's runs the archive server.
    result, heavy = heavy_imports("archive", "--help")
    assert result.returncode == 0
    assert "driver.archive.archive" in heavy and "asyncio" in heavy


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions[0].choices) if actions else {}


def _help_lines(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    """Each subcommand's one line in its parent's help."""
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {a.dest: a.help for a in actions[0]._choices_actions}


def test_the_command_list_shows_each_command_as_its_family_registers_it() -> None:
    everything = build_parser()
    assert list(_subcommands(everything)) == list(FAMILIES)  # `mediadriver --help` lists the table's order
    listed = _help_lines(everything)
    for command, family in FAMILIES.items():
        alone = build_parser(command)
        assert list(_subcommands(alone)) == [c for c, f in FAMILIES.items() if f == family]
        assert _help_lines(alone)[command] == listed[command]


def test_no_known_command_first_lists_every_command() -> None:
    for args in (["--help"], ["-h", "stat"]):
        result = mediadriver(*args)
        assert result.returncode == 0
        assert all(f"    {command}" in result.stdout for command in FAMILIES), result.stdout
    for args in ([], ["bogus", "--once"], ["--once", "stat"]):
        result = mediadriver(*args)
        assert result.returncode == 2
        assert result.stderr.startswith("usage: mediadriver [-h] COMMAND ...\nmediadriver: error: ")
    assert (
        "invalid choice: 'bogus' (choose from " + ", ".join(map(repr, FAMILIES)) + ")"
        in mediadriver("bogus").stderr
    )
