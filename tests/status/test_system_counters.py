from __future__ import annotations

import struct

import pytest

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.counter_types import CLIENT_CLOSES_TYPE_ID
from driver.concurrent.counters import RECORD_RECLAIMED, CountersManager
from driver.status.system_counters import (
    DRIVER_VERSION,
    FIRST_FREE_COUNTER_ID,
    SystemCounterDescriptor,
    SystemCounters,
    semantic_version,
)

# Ids and labels from docs/counters.md §2 (Aeron 1.15.1 SystemCounterDescriptor).
EXPECTED = [
    (0, "BYTES_SENT", "Bytes sent"),
    (1, "BYTES_RECEIVED", "Bytes received"),
    (2, "RECEIVER_PROXY_FAILS", "Failed offers to ReceiverProxy"),
    (3, "SENDER_PROXY_FAILS", "Failed offers to SenderProxy"),
    (4, "CONDUCTOR_PROXY_FAILS", "Failed offers to DriverConductorProxy"),
    (5, "NAK_MESSAGES_SENT", "NAKs sent"),
    (6, "NAK_MESSAGES_RECEIVED", "NAKs received"),
    (7, "STATUS_MESSAGES_SENT", "Status Messages sent"),
    (8, "STATUS_MESSAGES_RECEIVED", "Status Messages received"),
    (9, "HEARTBEATS_SENT", "Heartbeats sent"),
    (10, "HEARTBEATS_RECEIVED", "Heartbeats received"),
    (11, "RETRANSMITS_SENT", "Retransmits sent"),
    (12, "FLOW_CONTROL_UNDER_RUNS", "Flow control under runs"),
    (13, "FLOW_CONTROL_OVER_RUNS", "Flow control over runs"),
    (14, "INVALID_PACKETS", "Invalid packets"),
    (15, "ERRORS", "Errors"),
    (16, "SHORT_SENDS", "Short sends"),
    (17, "FREE_FAILS", "Failed attempts to free log buffers"),
    (18, "SENDER_FLOW_CONTROL_LIMITS", "Sender flow control limits applied"),
    (19, "UNBLOCKED_PUBLICATIONS", "Unblocked Publications"),
    (20, "UNBLOCKED_COMMANDS", "Unblocked Control Commands"),
    (21, "POSSIBLE_TTL_ASYMMETRY", "Possible TTL Asymmetry"),
    (22, "CONTROLLABLE_IDLE_STRATEGY", "ControllableIdleStrategy status"),
    (23, "LOSS_GAP_FILLS", "Loss gap fills"),
    (24, "CLIENT_TIMEOUTS", "Client liveness timeouts"),
]
# Today's Aeron's (AeronCounters.SYSTEM_COUNTER_ID_*, SystemCounterDescriptor), after 1.15.1's.
TODAYS = [
    (25, "RESOLUTION_CHANGES", "Resolution changes"),
    (26, "CONDUCTOR_MAX_CYCLE_TIME", "Conductor max cycle time doing its work in ns"),
    (27, "CONDUCTOR_CYCLE_TIME_THRESHOLD_EXCEEDED", "Conductor work cycle exceeded threshold count"),
    (28, "SENDER_MAX_CYCLE_TIME", "Sender max cycle time doing its work in ns"),
    (29, "SENDER_CYCLE_TIME_THRESHOLD_EXCEEDED", "Sender work cycle exceeded threshold count"),
    (30, "RECEIVER_MAX_CYCLE_TIME", "Receiver max cycle time doing its work in ns"),
    (31, "RECEIVER_CYCLE_TIME_THRESHOLD_EXCEEDED", "Receiver work cycle exceeded threshold count"),
    (32, "NAME_RESOLVER_MAX_TIME", "NameResolver max time in ns"),
    (33, "NAME_RESOLVER_TIME_THRESHOLD_EXCEEDED", "NameResolver exceeded threshold count"),
    (34, "AERON_VERSION", f"Aeron software: version={DRIVER_VERSION} commit=aio-media-driver"),
    (35, "BYTES_CURRENTLY_MAPPED", "Bytes currently mapped"),
    (36, "RETRANSMITTED_BYTES", "Retransmitted bytes"),
    (37, "RETRANSMIT_OVERFLOW", "Retransmit Pool Overflow count"),
    (38, "ERROR_FRAMES_RECEIVED", "Error Frames received"),
    (39, "ERROR_FRAMES_SENT", "Error Frames sent"),
]


def make_manager(counters: int = 64) -> CountersManager:
    return CountersManager(
        AtomicBuffer(bytearray(counters * 512)), AtomicBuffer(bytearray(counters * 128)), lambda: 0
    )


def test_descriptors_match_aeron() -> None:
    assert [(d.id, d.name, d.label) for d in SystemCounterDescriptor] == EXPECTED + TODAYS
    assert SystemCounterDescriptor(15) is SystemCounterDescriptor.ERRORS
    assert SystemCounterDescriptor.ERRORS == 15


def test_all_counters_allocated_in_order() -> None:
    manager = make_manager()
    counters = SystemCounters(manager)
    seen: list[tuple[int, int, bytes, str]] = []
    manager.for_each(lambda *args: seen.append(args))
    assert [(counter_id, label) for counter_id, _, _, label in seen] == [
        (i, label) for i, _, label in EXPECTED + TODAYS
    ] + [(40, "Client closes")]
    # This driver's own: not type 0, so no tool takes it for today's Aeron's system counter 40.
    assert seen.pop()[1] == CLIENT_CLOSES_TYPE_ID
    assert counters.client_closes.id == 40
    assert FIRST_FREE_COUNTER_ID == 41
    for counter_id, type_id, key, _ in seen:
        assert type_id == 0
        assert key == struct.pack("<i", counter_id) + bytes(108)
    for descriptor in SystemCounterDescriptor:
        assert counters.get(descriptor).id == descriptor.id
        assert counters[descriptor] is counters.get(descriptor)


def test_counters_count_into_the_values_region() -> None:
    manager = make_manager()
    counters = SystemCounters(manager)
    counters.get(SystemCounterDescriptor.BYTES_SENT).get_and_add(1408)
    counters.get(SystemCounterDescriptor.ERRORS).increment()
    assert manager.get_counter_value(0) == 1408
    assert manager.get_counter_value(15) == 1
    assert manager.get_counter_value(24) == 0
    assert manager.get_counter_value(34) == semantic_version(DRIVER_VERSION)  # as Aeron's SemanticVersion


def test_close_frees_all() -> None:
    manager = make_manager()
    counters = SystemCounters(manager)
    counters.close()
    assert all(manager.get_counter_state(i) == RECORD_RECLAIMED for i in range(len(EXPECTED + TODAYS)))
    counters.close()  # idempotent


def test_must_be_first_on_the_manager() -> None:
    manager = make_manager()
    manager.allocate("someone else")
    with pytest.raises(ValueError, match="got id 1, expected 0"):
        SystemCounters(manager)
    assert manager.get_counter_state(1) == RECORD_RECLAIMED
