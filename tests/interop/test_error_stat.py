"""Bad commands written straight into the to-driver ring end up in the error log that the real ErrorStat reads.

Aeron 1.15.1 itself silently skips records of an unknown type id (``ClientCommandAdapter`` has no default
branch), so the unknown-type case is checked against our driver only (it answers with ON_ERROR and logs it) and
pinned as "ignored" for the Java driver. A REMOVE_COUNTER with a garbage registration id is an error in both.
"""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.interop

ERRORS_COUNTER_ID = 15
UNKNOWN_TYPE_ID = 0x77
REMOVE_COUNTER_TYPE_ID = 0x0A
BAD_COMMAND = re.compile(r"0x77|\b119\b|unknown (command|msg|message|type)", re.IGNORECASE)


def _write_garbage(run_java, cnc, driver, type_id: int, count: int) -> None:
    result = run_java(
        "RingGarbage", driver.aeron_dir, "--type", hex(type_id), "--count", count, timeout=30, check=True
    )
    assert result.stdout.startswith(f"WROTE {count} "), result.stdout
    cnc.wait_for(lambda: cnc.ring_drained(driver.aeron_dir), 10.0, what=f"{driver} to consume the ring")


def _counter_client_works(run_java, driver) -> None:
    result = run_java("CounterClient", driver.aeron_dir, "--label", "after-garbage", timeout=30)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}\n{driver.log()}"
    assert "LABEL after-garbage" in result.stdout and "CLOSED" in result.stdout


def test_our_driver_logs_unknown_command_and_keeps_running(our_driver, peers, run_java, cnc):
    driver = our_driver()
    _write_garbage(run_java, cnc, driver, UNKNOWN_TYPE_ID, 1)
    cnc.wait_for(
        lambda: driver.counters()[ERRORS_COUNTER_ID].value >= 1,
        5.0,
        what="the Errors counter to count the bad command",
    )

    report = peers.error_stat(driver.aeron_dir)
    assert report.entries, report.raw
    assert report.distinct == len(report.entries)
    assert any(BAD_COMMAND.search(entry.text) for entry in report.entries), report.raw
    assert driver.alive(), driver.log()
    _counter_client_works(run_java, driver)


def test_java_driver_ignores_unknown_command_type(java_driver_factory, peers, run_java, cnc):
    driver = java_driver_factory()
    _write_garbage(run_java, cnc, driver, UNKNOWN_TYPE_ID, 1)
    report = peers.error_stat(driver.aeron_dir)
    assert report.entries == [] and report.distinct == 0, report.raw
    assert driver.counters()[ERRORS_COUNTER_ID].value == 0
    _counter_client_works(run_java, driver)


@pytest.mark.parametrize("kind", ["java", "ours"])
def test_remove_unknown_counter_is_logged(kind, drivers, peers, run_java, cnc):
    driver = drivers.start(kind)
    _write_garbage(run_java, cnc, driver, REMOVE_COUNTER_TYPE_ID, 3)
    cnc.wait_for(
        lambda: driver.counters()[ERRORS_COUNTER_ID].value >= 3, 5.0, what="Errors counter to reach 3"
    )

    report = peers.error_stat(driver.aeron_dir)
    assert len(report.entries) == 1 and report.distinct == 1, report.raw
    (entry,) = report.entries
    assert entry.count == 3
    assert "counter" in entry.text.lower(), entry.text
    assert driver.counters()[ERRORS_COUNTER_ID].value == 3
    assert driver.alive(), driver.log()
    _counter_client_works(run_java, driver)


@pytest.mark.parametrize("kind", ["java", "ours"])
def test_our_errors_tool_matches_error_stat(kind, drivers, peers, run_java, run_driver_cli, cnc):
    driver = drivers.start(kind)
    _write_garbage(run_java, cnc, driver, REMOVE_COUNTER_TYPE_ID, 2)
    cnc.wait_for(
        lambda: driver.counters()[ERRORS_COUNTER_ID].value >= 2, 5.0, what="Errors counter to reach 2"
    )

    java_report = peers.error_stat(driver.aeron_dir)
    ours = run_driver_cli("errors", "--dir", driver.aeron_dir)
    assert ours.returncode == 0, ours.stderr
    our_report = cnc.parse_errors(ours.stdout)
    assert our_report.distinct == java_report.distinct == 1
    assert our_report.entries == java_report.entries
