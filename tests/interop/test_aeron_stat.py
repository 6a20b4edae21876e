"""The real AeronStat (Aeron 1.15.1) against our driver shows the same system counters as against the Java driver."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.interop

# counters.md §2, cross-checked below against the Java driver's own AeronStat output in the same session.
SPEC_SYSTEM_COUNTER_LABELS = [
    "Bytes sent",
    "Bytes received",
    "Failed offers to ReceiverProxy",
    "Failed offers to SenderProxy",
    "Failed offers to DriverConductorProxy",
    "NAKs sent",
    "NAKs received",
    "Status Messages sent",
    "Status Messages received",
    "Heartbeats sent",
    "Heartbeats received",
    "Retransmits sent",
    "Flow control under runs",
    "Flow control over runs",
    "Invalid packets",
    "Errors",
    "Short sends",
    "Failed attempts to free log buffers",
    "Sender flow control limits applied",
    "Unblocked Publications",
    "Unblocked Control Commands",
    "Possible TTL Asymmetry",
    "ControllableIdleStrategy status",
    "Loss gap fills",
    "Client liveness timeouts",
]


@pytest.fixture(scope="module")
def java_screen(peers, java_driver):
    """AeronStat's first screen against a fresh, idle Java 1.15.1 driver."""
    return peers.aeron_stat(java_driver.aeron_dir)


def test_java_driver_aeron_stat_lists_system_counters(java_screen):
    assert java_screen.version == 15
    assert list(java_screen.counters) == list(range(25))
    assert [line.label for line in java_screen.counters.values()] == SPEC_SYSTEM_COUNTER_LABELS
    assert all(line.value == 0 for line in java_screen.counters.values())


def test_our_driver_aeron_stat_matches_java(peers, our_driver, java_screen):
    driver = our_driver()
    screen = peers.aeron_stat(driver.aeron_dir)
    assert screen.version == 15
    assert list(screen.counters) == list(range(25)), screen.raw
    assert {i: c.label for i, c in screen.counters.items()} == {
        i: c.label for i, c in java_screen.counters.items()
    }
    # Both drivers are fresh and idle: every system counter is 0, so whole lines (format included) are equal.
    assert screen.raw == java_screen.raw
    assert driver.alive()


def test_our_cnc_header_matches_java(our_driver, java_driver):
    ours, java = our_driver(), java_driver
    our_header, java_header = ours.header(), java.header()
    assert our_header is not None and java_header is not None
    assert our_header.file_length == java_header.file_length == 8_392_704
    for name in (
        "version",
        "to_driver_length",
        "to_clients_length",
        "counters_metadata_length",
        "counters_values_length",
        "error_log_length",
        "client_liveness_timeout_ns",
    ):
        assert getattr(our_header, name) == getattr(java_header, name), name
    assert our_header.pid == ours.pid
    assert java_header.pid == java.pid
    assert abs(our_header.start_timestamp_ms - java_header.start_timestamp_ms) < 600_000
    for driver in (ours, java):
        assert (driver.aeron_dir / "loss-report.dat").stat().st_size == 1_048_576
        assert (driver.aeron_dir / "publications").is_dir()
        assert (driver.aeron_dir / "images").is_dir()
