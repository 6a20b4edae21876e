"""The driver-wide counters allocated first in cnc.dat: Aeron 1.15.1's 25 (ids 0..24, docs/counters.md §2), then
the ones today's Aeron added after them, at today's Aeron's ids 25..39 (§8), then this driver's own (§9)."""

from __future__ import annotations

import struct
from enum import IntEnum

from driver.concurrent.counter_types import CLIENT_CLOSES_TYPE_ID, SYSTEM_COUNTER_TYPE_ID
from driver.concurrent.counters import AtomicCounter, CountersManager
from driver.util.version import VERSION

_I32 = struct.Struct("<i")
LEGACY_SYSTEM_COUNTER_COUNT = 25
"""Aeron 1.15.1's system counters: ids 0..24 keep their order and labels."""
DRIVER_VERSION = VERSION
DRIVER_COMMIT = "aio-media-driver"
"""What counter 34 names: this driver, not an Aeron release (its value is the same version composed as Aeron's
SemanticVersion: major << 16 | minor << 8 | patch)."""


def semantic_version(version: str) -> int:
    major, minor, patch = (int(part) for part in version.split(".")[:3])
    return (major << 16) | (minor << 8) | patch


class SystemCounterDescriptor(IntEnum):
    """Counter id (the enum value) and exact label of each system counter, in allocation order."""

    label: str

    def __new__(cls, counter_id: int, label: str) -> SystemCounterDescriptor:
        member = int.__new__(cls, counter_id)
        member._value_ = counter_id
        member.label = label
        return member

    BYTES_SENT = 0, "Bytes sent"
    BYTES_RECEIVED = 1, "Bytes received"
    RECEIVER_PROXY_FAILS = 2, "Failed offers to ReceiverProxy"
    SENDER_PROXY_FAILS = 3, "Failed offers to SenderProxy"
    CONDUCTOR_PROXY_FAILS = 4, "Failed offers to DriverConductorProxy"
    NAK_MESSAGES_SENT = 5, "NAKs sent"
    NAK_MESSAGES_RECEIVED = 6, "NAKs received"
    STATUS_MESSAGES_SENT = 7, "Status Messages sent"
    STATUS_MESSAGES_RECEIVED = 8, "Status Messages received"
    HEARTBEATS_SENT = 9, "Heartbeats sent"
    HEARTBEATS_RECEIVED = 10, "Heartbeats received"
    RETRANSMITS_SENT = 11, "Retransmits sent"
    FLOW_CONTROL_UNDER_RUNS = 12, "Flow control under runs"
    FLOW_CONTROL_OVER_RUNS = 13, "Flow control over runs"
    INVALID_PACKETS = 14, "Invalid packets"
    ERRORS = 15, "Errors"
    SHORT_SENDS = 16, "Short sends"
    FREE_FAILS = 17, "Failed attempts to free log buffers"
    SENDER_FLOW_CONTROL_LIMITS = 18, "Sender flow control limits applied"
    UNBLOCKED_PUBLICATIONS = 19, "Unblocked Publications"
    UNBLOCKED_COMMANDS = 20, "Unblocked Control Commands"
    POSSIBLE_TTL_ASYMMETRY = 21, "Possible TTL Asymmetry"
    CONTROLLABLE_IDLE_STRATEGY = 22, "ControllableIdleStrategy status"
    LOSS_GAP_FILLS = 23, "Loss gap fills"
    CLIENT_TIMEOUTS = 24, "Client liveness timeouts"
    # today's Aeron (1.18-1.45), same ids and labels; 1.15.1 tools read ids 0..24 and list these by label
    RESOLUTION_CHANGES = 25, "Resolution changes"
    CONDUCTOR_MAX_CYCLE_TIME = 26, "Conductor max cycle time doing its work in ns"
    CONDUCTOR_CYCLE_TIME_THRESHOLD_EXCEEDED = 27, "Conductor work cycle exceeded threshold count"
    SENDER_MAX_CYCLE_TIME = 28, "Sender max cycle time doing its work in ns"
    SENDER_CYCLE_TIME_THRESHOLD_EXCEEDED = 29, "Sender work cycle exceeded threshold count"
    RECEIVER_MAX_CYCLE_TIME = 30, "Receiver max cycle time doing its work in ns"
    RECEIVER_CYCLE_TIME_THRESHOLD_EXCEEDED = 31, "Receiver work cycle exceeded threshold count"
    NAME_RESOLVER_MAX_TIME = 32, "NameResolver max time in ns"
    NAME_RESOLVER_TIME_THRESHOLD_EXCEEDED = 33, "NameResolver exceeded threshold count"
    AERON_VERSION = 34, f"Aeron software: version={DRIVER_VERSION} commit={DRIVER_COMMIT}"
    BYTES_CURRENTLY_MAPPED = 35, "Bytes currently mapped"
    RETRANSMITTED_BYTES = 36, "Retransmitted bytes"
    RETRANSMIT_OVERFLOW = 37, "Retransmit Pool Overflow count"
    ERROR_FRAMES_RECEIVED = 38, "Error Frames received"
    ERROR_FRAMES_SENT = 39, "Error Frames sent"

    @property
    def id(self) -> int:
        return self.value

    def new_counter(self, manager: CountersManager) -> AtomicCounter:
        # Key: the descriptor id as an int32 at key offset 0, as the Java driver writes it.
        return manager.new_counter(self.label, SYSTEM_COUNTER_TYPE_ID, _I32.pack(self.value))


CLIENT_CLOSES_LABEL = "Client closes"
FIRST_FREE_COUNTER_ID = len(SystemCounterDescriptor) + 1
"""The first counter id after the system counters and the driver's client-closes counter (docs/counters.md §9)."""


class SystemCounters:
    """Allocates every system counter in order; must run on a fresh manager so ids equal descriptor ids."""

    def __init__(self, manager: CountersManager) -> None:
        self._counters: dict[SystemCounterDescriptor, AtomicCounter] = {}
        for descriptor in SystemCounterDescriptor:
            counter = descriptor.new_counter(manager)
            self._counters[descriptor] = counter
            if counter.id != descriptor.id:
                # Tools identify system counters by id; a shifted id would mislabel every one of them.
                self.close()
                raise ValueError(
                    f"system counter {descriptor.name} got id {counter.id}, expected {descriptor.id}: "
                    "SystemCounters must be created first, on an empty CountersManager"
                )
        self._counters[SystemCounterDescriptor.AERON_VERSION].set(semantic_version(DRIVER_VERSION))
        self.client_closes = manager.new_counter(CLIENT_CLOSES_LABEL, CLIENT_CLOSES_TYPE_ID)
        """Clients that closed with CLIENT_CLOSE; "Client liveness timeouts" counts only those that went silent
        (1.15.1 counts both there)."""

    def get(self, descriptor: SystemCounterDescriptor) -> AtomicCounter:
        return self._counters[descriptor]

    def __getitem__(self, descriptor: SystemCounterDescriptor) -> AtomicCounter:
        return self._counters[descriptor]

    def close(self) -> None:
        for counter in self._counters.values():
            counter.close()
        if hasattr(self, "client_closes"):
            self.client_closes.close()
