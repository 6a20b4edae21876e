"""The real AeronStat (Aeron 1.15.1) against our driver shows the same system counters as against the Java driver,
then today's Aeron's after them (ids 25..39) and today's per-stream and endpoint counters, by label."""

from __future__ import annotations

import time

import pytest

from driver.client import Aeron
from driver.status.system_counters import LEGACY_SYSTEM_COUNTER_COUNT, SystemCounterDescriptor
from harness.ports import free_port

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
    # The system counters, then this driver's "Client closes" (the 1.15.1 AeronStat lists it by its label).
    assert list(screen.counters) == [*(d.id for d in SystemCounterDescriptor), 40], screen.raw
    legacy = {i: c.label for i, c in screen.counters.items() if i < LEGACY_SYSTEM_COUNTER_COUNT}
    assert legacy == {i: c.label for i, c in java_screen.counters.items()}
    # Both drivers are fresh and idle: every 1.15.1 system counter is 0, so whole lines (format included) are
    # equal; today's follow with their labels.
    assert screen.raw[:LEGACY_SYSTEM_COUNTER_COUNT] == java_screen.raw
    assert [c.label for i, c in screen.counters.items() if i >= LEGACY_SYSTEM_COUNTER_COUNT] == [
        *(d.label for d in SystemCounterDescriptor if d.id >= LEGACY_SYSTEM_COUNTER_COUNT),
        "Client closes",
    ]
    assert driver.alive()


def test_aeron_stat_1_15_1_reads_todays_counters_of_a_busy_driver(peers, our_driver):
    """A MDC publication with a subscriber: today's per-stream (fc-receivers, snd-bpe, NAK counts) and endpoint
    (local socket address) counters and the duty-cycle system counters, as the 1.15.1 AeronStat shows them."""
    driver = our_driver()
    control = f"127.0.0.1:{free_port()}"
    with Aeron.connect(aeron_dir=str(driver.aeron_dir)) as aeron:
        subscription = aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{free_port()}|control={control}", 77)
        publication = aeron.add_publication(f"aeron:udp?control={control}|control-mode=dynamic", 77)
        deadline = time.monotonic() + 10
        while not (publication.is_connected and subscription.is_connected) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert publication.is_connected and subscription.is_connected
        time.sleep(1.5)  # fc-receivers is sampled on the conductor's timer
        screen = peers.aeron_stat(driver.aeron_dir)
    labels = [c.label for c in screen.counters.values()]
    by_label = {c.label: c.value for c in screen.counters.values()}
    assert by_label["Sender max cycle time doing its work in ns"] > 0, screen.raw
    assert by_label["Conductor max cycle time doing its work in ns"] > 0
    assert by_label["Bytes currently mapped"] > 0
    for prefix in ("snd-bpe: ", "snd-naks-received: ", "rcv-naks-sent: ", "snd-local-sockaddr: ", "rcv-local-sockaddr: "):
        assert any(label.startswith(prefix) for label in labels), (prefix, screen.raw)
    [fc_receivers] = [c for c in screen.counters.values() if c.label.startswith("fc-receivers: ")]
    assert fc_receivers.value == 1 and fc_receivers.label.endswith(f" 77 aeron:udp?control={control}|control-mode=dynamic")


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
