"""Local socket address counters (type 14): key and label as today's Aeron writes them, decoded back."""

from __future__ import annotations

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.counter_types import (
    LOCAL_SOCKET_ADDRESS_TYPE_ID,
    decode_counter,
    format_socket_address,
    local_socket_address_key,
    local_socket_address_label,
)
from driver.concurrent.counters import CountersManager
from driver.status.endpoint_counters import local_socket_address


def _manager() -> CountersManager:
    return CountersManager(AtomicBuffer(bytearray(16 * 512)), AtomicBuffer(bytearray(16 * 128)), lambda: 0)


def test_a_local_socket_address_counter_names_its_endpoint_and_address() -> None:
    manager = _manager()
    counter = local_socket_address(manager, "rcv-local-sockaddr", 7, ("::1", 40123))
    assert counter.get() == 1
    key = manager.get_counter_key(counter.id)
    assert key[:8] == (7).to_bytes(4, "little") + len("[::1]:40123").to_bytes(4, "little")
    assert key[8:19] == b"[::1]:40123"
    info = decode_counter(counter.id, LOCAL_SOCKET_ADDRESS_TYPE_ID, key, manager.get_counter_label(counter.id), 1)
    assert (info.channel_status_id, info.local_address, info.label) == (7, "[::1]:40123", "rcv-local-sockaddr: 7 [::1]:40123")
    assert format_socket_address("127.0.0.1", 5) == "127.0.0.1:5"
    assert local_socket_address_label("snd-local-sockaddr", 3, "0.0.0.0:9") == "snd-local-sockaddr: 3 0.0.0.0:9"
    assert local_socket_address_key(3, "0.0.0.0:9") == b"\x03\x00\x00\x00\x09\x00\x00\x000.0.0.0:9"
