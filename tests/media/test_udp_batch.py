"""ReceiveBatch / SendBatch / sockaddr codecs of driver/media/udp_batch.py (the native recvmmsg and
sendmmsg wrappers). Sockets come from the test; the module itself never imports socket."""

from __future__ import annotations

import errno
import socket
import time

import pytest

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.media import udp_batch
from driver.media.udp_batch import ReceiveBatch, SendBatch, TermBurst, decode_sockaddr, encode_sockaddr
from driver.protocol import frames as f
from driver.util.bit_util import align


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


# --- TermBurst: the sender's scan + sendmmsg in one call ---------------------------------------------------

T = 64 * 1024
TEMPLATE = f.create_default_header(7, 1001, 5)


def build_term(payload_lengths: list[int], pad_to_end: bool = False) -> tuple[AtomicBuffer, list[int]]:
    """A term of committed DATA frames (and, optionally, padding to its end); returns it and the frame offsets
    followed by the end offset."""
    term = AtomicBuffer(bytearray(T))
    offsets = [0]
    for i, length in enumerate(payload_lengths):
        term.write_frame(offsets[-1], length + 32, TEMPLATE, 5, -1, i, bytes([i % 256]) * length)
        offsets.append(offsets[-1] + align(length + 32, 32))
    if pad_to_end:
        term.write_padding_frame(offsets[-1], T - offsets[-1], TEMPLATE, 5)
        offsets.append(T)
    return term, offsets


@pytest.fixture
def udp_pair():
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.setblocking(False)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.connect(receiver.getsockname())
    yield sender, receiver
    sender.close()
    receiver.close()


def drain(sock: socket.socket) -> list[bytes]:
    datagrams = []
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        try:
            datagrams.append(sock.recv(65536))
        except BlockingIOError:
            if datagrams:
                break
            time.sleep(0.001)
    return datagrams


def expected_burst(term: AtomicBuffer, offset: int, window: int, mtu: int, max_datagrams: int):
    """What repeated scan_for_availability + send would put on the wire: (datagrams, bytes, advance)."""
    datagrams, advance = [], 0
    while len(datagrams) < max_datagrams and window - advance > 0 and offset + advance < T:
        available, padding = term.scan_for_availability(offset + advance, min(mtu, window - advance))
        if available <= 0:
            break
        datagrams.append(bytes(term.view[offset + advance : offset + advance + available]))
        advance += available + padding
    return datagrams, sum(map(len, datagrams)), advance


@pytest.mark.parametrize(
    ("payloads", "pad", "offset_index", "window", "mtu", "max_datagrams"),
    [
        ([32] * 100, False, 0, 1 << 20, 1408, 64),  # MTU-sized datagrams of small frames
        ([1024] * 20, False, 0, 1 << 20, 1408, 64),  # one frame per datagram
        ([32] * 100, False, 3, 5000, 1408, 64),  # the window ends the burst (partial last datagram)
        ([32] * 100, False, 0, 1 << 20, 1408, 2),  # max_datagrams ends it
        ([100] * 30, True, 0, 1 << 20, 1408, 64),  # PAD travels as its header; advance skips to the end
        ([2000, 32], False, 0, 1 << 20, 1408, 64),  # a frame longer than the MTU is never split or sent
    ],
)
def test_term_burst_sends_what_scans_would_and_advances_past_padding(
    udp_pair, payloads, pad, offset_index, window, mtu, max_datagrams
) -> None:
    sender, receiver = udp_pair
    term, offsets = build_term(payloads, pad)
    try:
        offset = offsets[offset_index]
        datagrams, total, advance = expected_burst(term, offset, window, mtu, max_datagrams)
        sent, bytes_sent, moved, scanned = TermBurst().send(
            sender.fileno(), term, offset, window, mtu, max_datagrams
        )
        assert (sent, bytes_sent, moved, scanned) == (len(datagrams), total, advance, len(datagrams))
        if datagrams:
            assert drain(receiver) == datagrams
        if pad:
            assert offset + moved == T
    finally:
        term.close()


def test_term_burst_of_nothing_committed_sends_nothing(udp_pair) -> None:
    sender, _ = udp_pair
    term = AtomicBuffer(bytearray(T))
    try:
        assert TermBurst().send(sender.fileno(), term, 0, 1 << 20, 1408, 64) == (0, 0, 0, 0)
        assert TermBurst().send(sender.fileno(), term, T, 1 << 20, 1408, 64) == (0, 0, 0, 0)  # at the end
        assert TermBurst().send(sender.fileno(), term, 0, 0, 1408, 64) == (0, 0, 0, 0)  # no window
    finally:
        term.close()


def test_term_burst_to_an_address_and_errors_as_negative_errno(udp_pair) -> None:
    _, receiver = udp_pair
    term, _ = build_term([32] * 3)
    unconnected = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        burst = TermBurst()
        # not connected, no address: EDESTADDRREQ, and nothing moves
        assert burst.send(unconnected.fileno(), term, 0, 1 << 20, 1408, 64) == (-89, 0, 0, 1)
        address = encode_sockaddr(*receiver.getsockname())
        assert burst.send(unconnected.fileno(), term, 0, 1 << 20, 1408, 64, address) == (1, 192, 192, 1)
        assert drain(receiver) == [bytes(term.view[0:192])]
        with pytest.raises(ValueError):
            burst.send(unconnected.fileno(), term, 16, 1 << 20, 1408, 64)  # not a frame offset
        with pytest.raises(ValueError):
            burst.send(unconnected.fileno(), term, T + 32, 1 << 20, 1408, 64)
    finally:
        unconnected.close()
        term.close()


# --- Offloads: UDP_SEGMENT bursts and UDP_GRO receives (docs/wire.md section 10) ----------------------------

SOL_UDP, UDP_SEGMENT, UDP_GRO = 17, 103, 104


@pytest.mark.parametrize(
    ("payloads", "pad", "offset_index", "window", "mtu", "max_datagrams"),
    [
        ([32] * 100, False, 0, 1 << 20, 1408, 64),
        ([1024] * 20, False, 0, 1 << 20, 1408, 64),
        ([32] * 100, False, 3, 5000, 1408, 64),  # a shorter last datagram closes the run
        ([32] * 100, False, 0, 1 << 20, 1408, 2),
        ([100] * 30, True, 0, 1 << 20, 1408, 64),  # PAD: its header goes, the run ends
        ([32] * 30 + [1024] * 5 + [32] * 70 + [2000] * 2 + [32] * 40, False, 0, 1 << 20, 1408, 500),
        ([32] * 900, False, 0, 1 << 20, 1408, 4096),  # more than one segmented send's 64 datagrams
        ([32] * 900, False, 0, 1 << 20, 256, 4096),  # small MTU: many runs in one sendmmsg
    ],
)
def test_segmented_burst_puts_the_same_datagrams_on_the_wire(
    udp_pair, payloads, pad, offset_index, window, mtu, max_datagrams
) -> None:
    """A receiver without UDP_GRO (a Java driver, any other peer) gets exactly the datagrams, in order, that
    the plain burst sends: the kernel cuts each segmented send at the segment size."""
    sender, receiver = udp_pair
    receiver.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    term, offsets = build_term(payloads, pad)
    try:
        offset = offsets[offset_index]
        datagrams, total, advance = expected_burst(term, offset, window, mtu, max_datagrams)
        result = TermBurst().send(sender.fileno(), term, offset, window, mtu, max_datagrams, gso=True)
        assert result == (len(datagrams), total, advance, len(datagrams))
        assert drain(receiver) == datagrams
    finally:
        term.close()


def test_gro_batch_splits_what_the_kernel_coalesced(udp_pair) -> None:
    """With UDP_GRO on, one recvmmsg slot may hold a whole segmented send: the batch hands out its datagrams
    one by one (offsets, lengths, source), and a plain datagram from another sender stays one."""
    sender, receiver = udp_pair
    receiver.setsockopt(SOL_UDP, UDP_GRO, 1)
    other = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    other.bind(("127.0.0.1", 0))
    term, _ = build_term([32] * 200)  # 12,800 bytes: nine 1408-byte datagrams and one of 128
    try:
        datagrams, total, _ = expected_burst(term, 0, 1 << 20, 1408, 64)
        assert TermBurst().send(sender.fileno(), term, 0, 1 << 20, 1408, 64, gso=True)[:2] == (10, total)
        other.sendto(b"\x00" * 32, receiver.getsockname())
        with ReceiveBatch(max_messages=1, slot_length=65536, gro=True) as batch:
            deadline = time.monotonic() + 1.0
            while batch.receive(receiver.fileno()) == 0 and time.monotonic() < deadline:
                time.sleep(0.001)
            assert batch.count == len(datagrams)  # one slot, ten datagrams
            assert not batch.drained
            assert [bytes(batch.data(i)) for i in range(batch.count)] == datagrams
            assert [batch.slot_offset(i) for i in range(batch.count)] == [1408 * i for i in range(10)]
            assert {batch.address(i) for i in range(batch.count)} == {sender.getsockname()}
            assert batch.receive(receiver.fileno()) == 1
            assert bytes(batch.data(0)) == b"\x00" * 32
            assert batch.address(0) == other.getsockname()
            assert batch.receive(receiver.fileno()) == 0
            assert batch.drained
    finally:
        other.close()
        term.close()


def test_gro_batch_keeps_a_run_of_unaligned_segments_whole(udp_pair) -> None:
    """Segments that are not whole 32-byte multiples never come from an Aeron sender: the coalesced buffer
    stays one datagram, which the receiver's checks then reject, rather than splitting at odd offsets."""
    sender, receiver = udp_pair
    receiver.setsockopt(SOL_UDP, UDP_GRO, 1)
    data = bytes(range(100)) * 5
    sender.sendmsg([data], [(SOL_UDP, UDP_SEGMENT, (100).to_bytes(2, "little"))])
    with ReceiveBatch(max_messages=4, slot_length=65536, gro=True) as batch:
        deadline = time.monotonic() + 1.0
        while batch.receive(receiver.fileno()) == 0 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert batch.count == 1
        assert bytes(batch.data(0)) == data


def test_one_list_of_short_send_errnos_for_the_transport_and_the_native_cycle() -> None:
    """A full buffer, a port unreachable on a connected socket, no destination yet: short sends to count, in the
    Python send paths and the native cycle's bursts alike (amd_udp_is_short_send is the one list)."""
    assert {
        errno.EAGAIN,
        errno.EWOULDBLOCK,
        errno.ENOBUFS,
        errno.ECONNREFUSED,
        errno.EDESTADDRREQ,
        errno.ENOTCONN,
    } == udp_batch.SHORT_SEND_ERRNOS
