"""ReceiveBatch / SendBatch / sockaddr codecs of driver/concurrent/udp_batch.py (the native recvmmsg and
sendmmsg wrappers). Sockets come from the test; the module itself never imports socket."""

from __future__ import annotations

import socket
import time

import pytest

from driver.concurrent import udp_batch
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.udp_batch import ReceiveBatch, SendBatch, decode_sockaddr, encode_sockaddr


def test_constants_match_the_platform() -> None:
    assert udp_batch.AF_INET == socket.AF_INET
    assert udp_batch.AF_INET6 == socket.AF_INET6
    assert udp_batch.ADDRESS_SLOT_LENGTH == 128
    assert udp_batch.MAX_BATCH == 256


@pytest.mark.parametrize(
    ("address", "raw_length"),
    [
        (("127.0.0.1", 40123), 16),
        (("10.1.2.3", 0), 16),
        (("::1", 65535), 28),
        (("fe80::1%2", 40123), 28),
    ],
)
def test_sockaddr_round_trip(address, raw_length) -> None:
    raw = encode_sockaddr(*address)
    assert len(raw) == raw_length
    assert decode_sockaddr(raw) == address


def test_sockaddr_rejects_what_it_cannot_encode() -> None:
    with pytest.raises(ValueError, match="interface index"):
        encode_sockaddr("fe80::1%eth0", 1)
    with pytest.raises(ValueError, match="out of range"):
        encode_sockaddr("127.0.0.1", 70000)
    with pytest.raises(ValueError, match="family"):
        decode_sockaddr(bytes(16))


@pytest.mark.parametrize(("max_messages", "slot_length"), [(0, 64), (257, 64), (1, 0), (1, 33)])
def test_receive_batch_validates_its_shape(max_messages: int, slot_length: int) -> None:
    with pytest.raises(ValueError):
        ReceiveBatch(max_messages, slot_length)


def test_receive_from_a_bad_descriptor_raises_oserror() -> None:
    with ReceiveBatch(2, 64) as batch, pytest.raises(OSError) as caught:
        batch.receive(-1)
    assert caught.value.errno == 9  # EBADF


def test_receive_fills_slots_with_lengths_and_sources() -> None:
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.bind(("127.0.0.1", 0))
    try:
        for i in range(5):
            sender.sendto(bytes([i]) * (i + 1), receiver.getsockname())
        time.sleep(0.01)
        with ReceiveBatch(8, 64) as batch:
            assert batch.capacity == 8
            assert batch.receive(receiver.fileno()) == 5
            assert batch.count == 5
            assert batch.lengths() == [1, 2, 3, 4, 5]
            assert [bytes(batch.data(i)) for i in range(5)] == [bytes([i]) * (i + 1) for i in range(5)]
            assert batch.address(4) == sender.getsockname()
            assert decode_sockaddr(batch.raw_address(4)) == sender.getsockname()
            assert batch.slot_buffer.get_bytes(batch.slot_offset(2), 3) == b"\x02\x02\x02"
            assert batch.receive(receiver.fileno()) == 0
    finally:
        receiver.close()
        sender.close()


def test_sendto_and_send_batch_return_negative_errno() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        # not connected, no address: EDESTADDRREQ
        assert udp_batch.sendto(sock.fileno(), b"x") == -89
        buffer = AtomicBuffer(bytearray(64))
        try:
            batch = SendBatch(2)
            assert batch.send(sock.fileno(), buffer) == 0  # nothing queued
            batch.add(0, 8)
            assert batch.send(sock.fileno(), buffer) == -89
        finally:
            buffer.close()
    finally:
        sock.close()
