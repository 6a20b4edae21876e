"""Allocation of the per-stream counters: the positions of Aeron 1.15.1 (docs/counters.md §3-4) and the event
counts today's Aeron added (§6)."""

from __future__ import annotations

from driver.concurrent.counter_types import (
    FLOW_CONTROL_RECEIVERS_NAME,
    FLOW_CONTROL_RECEIVERS_TYPE_ID,
    PUBLISHER_LIMIT_NAME,
    PUBLISHER_LIMIT_TYPE_ID,
    PUBLISHER_POS_NAME,
    PUBLISHER_POS_TYPE_ID,
    RECEIVER_HWM_NAME,
    RECEIVER_HWM_TYPE_ID,
    RECEIVER_NAKS_SENT_NAME,
    RECEIVER_NAKS_SENT_TYPE_ID,
    RECEIVER_POS_NAME,
    RECEIVER_POS_TYPE_ID,
    SENDER_BPE_NAME,
    SENDER_BPE_TYPE_ID,
    SENDER_LIMIT_NAME,
    SENDER_LIMIT_TYPE_ID,
    SENDER_NAKS_RECEIVED_NAME,
    SENDER_NAKS_RECEIVED_TYPE_ID,
    SENDER_POSITION_NAME,
    SENDER_POSITION_TYPE_ID,
    SUBSCRIBER_POSITION_NAME,
    SUBSCRIBER_POSITION_TYPE_ID,
    stream_position_key,
    stream_position_label,
)
from driver.concurrent.counters import AtomicCounter, CountersManager


def _allocate(
    counters: CountersManager,
    name: str,
    type_id: int,
    registration_id: int,
    session_id: int,
    stream_id: int,
    channel: str,
    join_position: int | None = None,
) -> AtomicCounter:
    return counters.new_counter(
        stream_position_label(name, registration_id, session_id, stream_id, channel, join_position),
        type_id,
        stream_position_key(registration_id, session_id, stream_id, channel),
    )


def publisher_pos(
    counters: CountersManager, registration_id: int, session_id: int, stream_id: int, channel: str
) -> AtomicCounter:
    return _allocate(
        counters, PUBLISHER_POS_NAME, PUBLISHER_POS_TYPE_ID, registration_id, session_id, stream_id, channel
    )


def publisher_limit(
    counters: CountersManager, registration_id: int, session_id: int, stream_id: int, channel: str
) -> AtomicCounter:
    return _allocate(
        counters,
        PUBLISHER_LIMIT_NAME,
        PUBLISHER_LIMIT_TYPE_ID,
        registration_id,
        session_id,
        stream_id,
        channel,
    )


def sender_pos(
    counters: CountersManager, registration_id: int, session_id: int, stream_id: int, channel: str
) -> AtomicCounter:
    return _allocate(
        counters,
        SENDER_POSITION_NAME,
        SENDER_POSITION_TYPE_ID,
        registration_id,
        session_id,
        stream_id,
        channel,
    )


def sender_limit(
    counters: CountersManager, registration_id: int, session_id: int, stream_id: int, channel: str
) -> AtomicCounter:
    return _allocate(
        counters, SENDER_LIMIT_NAME, SENDER_LIMIT_TYPE_ID, registration_id, session_id, stream_id, channel
    )


def subscriber_pos(
    counters: CountersManager,
    registration_id: int,
    session_id: int,
    stream_id: int,
    channel: str,
    join_position: int,
) -> AtomicCounter:
    counter = _allocate(
        counters,
        SUBSCRIBER_POSITION_NAME,
        SUBSCRIBER_POSITION_TYPE_ID,
        registration_id,
        session_id,
        stream_id,
        channel,
        join_position,
    )
    counter.set(join_position)
    return counter


def receiver_hwm(
    counters: CountersManager, registration_id: int, session_id: int, stream_id: int, channel: str
) -> AtomicCounter:
    return _allocate(
        counters, RECEIVER_HWM_NAME, RECEIVER_HWM_TYPE_ID, registration_id, session_id, stream_id, channel
    )


def receiver_pos(
    counters: CountersManager, registration_id: int, session_id: int, stream_id: int, channel: str
) -> AtomicCounter:
    return _allocate(
        counters, RECEIVER_POS_NAME, RECEIVER_POS_TYPE_ID, registration_id, session_id, stream_id, channel
    )


def sender_bpe(
    counters: CountersManager, registration_id: int, session_id: int, stream_id: int, channel: str
) -> AtomicCounter:
    """Times the sender stopped at the receivers' window (back-pressure events)."""
    return _allocate(counters, SENDER_BPE_NAME, SENDER_BPE_TYPE_ID, registration_id, session_id, stream_id, channel)


def sender_naks_received(
    counters: CountersManager, registration_id: int, session_id: int, stream_id: int, channel: str
) -> AtomicCounter:
    return _allocate(
        counters,
        SENDER_NAKS_RECEIVED_NAME,
        SENDER_NAKS_RECEIVED_TYPE_ID,
        registration_id,
        session_id,
        stream_id,
        channel,
    )


def receiver_naks_sent(
    counters: CountersManager, registration_id: int, session_id: int, stream_id: int, channel: str
) -> AtomicCounter:
    return _allocate(
        counters,
        RECEIVER_NAKS_SENT_NAME,
        RECEIVER_NAKS_SENT_TYPE_ID,
        registration_id,
        session_id,
        stream_id,
        channel,
    )


def flow_control_receivers(
    counters: CountersManager, registration_id: int, session_id: int, stream_id: int, channel: str
) -> AtomicCounter:
    """``fc-receivers``: how many receivers a multicast or MDC publication's flow control tracks."""
    return _allocate(
        counters,
        FLOW_CONTROL_RECEIVERS_NAME,
        FLOW_CONTROL_RECEIVERS_TYPE_ID,
        registration_id,
        session_id,
        stream_id,
        channel,
    )
