"""Allocation of today's Aeron's local socket address counters (type 14, docs/counters.md §8): one per channel
endpoint socket, naming the address it is bound to, so a channel asked with port 0 shows the port it got."""

from __future__ import annotations

from driver.concurrent.counter_types import (
    LOCAL_SOCKET_ADDRESS_TYPE_ID,
    format_socket_address,
    local_socket_address_key,
    local_socket_address_label,
)
from driver.concurrent.counters import AtomicCounter, CountersManager

CHANNEL_ENDPOINT_ACTIVE = 1
"""The value while the socket is bound (Aeron's ChannelEndpointStatus.ACTIVE), as tools that look up an
endpoint's addresses expect."""


def local_socket_address(
    counters: CountersManager, name: str, channel_status_id: int, address: tuple[str, int]
) -> AtomicCounter:
    text = format_socket_address(*address)
    counter = counters.new_counter(
        local_socket_address_label(name, channel_status_id, text),
        LOCAL_SOCKET_ADDRESS_TYPE_ID,
        local_socket_address_key(channel_status_id, text),
    )
    counter.set(CHANNEL_ENDPOINT_ACTIVE)
    return counter
