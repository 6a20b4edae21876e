"""UdpTransport over real loopback sockets: unicast and multicast (on ``lo``, host namespace), batched
receive, short sends, error messages, and the event-loop wake-up under asyncio and uvloop.

Multicast works on loopback here without any route or link flag: ``interface=127.0.0.1`` selects ``lo``,
and IP_MULTICAST_IF (by interface index) sends through it even though ``lo`` lacks the MULTICAST flag.
tests/system/test_netns.py checks the same inside a fresh network namespace.
"""

from __future__ import annotations

import asyncio
import errno
import socket
import time
from collections.abc import Callable, Iterator

import pytest
import uvloop

from driver.agent.idle_strategy import Waker
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.counters import AtomicCounter
from driver.media.network_lookup import resolve_host, system_interfaces
from driver.media.receive_channel_endpoint import ReceiveChannelEndpoint
from driver.media.udp_batch import ReceiveBatch, SendBatch
from driver.media.udp_transport import LOOKS_BETWEEN_READS, ChannelEndpointError, UdpTransport
from driver.protocol.control_protocol import ErrorCode
from driver.protocol.udp_channel import UdpChannel
from tests.support import free_port


def channel(uri: str) -> UdpChannel:
    return UdpChannel.parse(uri, resolve=resolve_host, interfaces=system_interfaces)


@pytest.fixture
def transports() -> Iterator[Callable[[UdpTransport], UdpTransport]]:
    opened: list[UdpTransport] = []

    def track(transport: UdpTransport) -> UdpTransport:
        opened.append(transport)
        return transport

    yield track
    for transport in opened:
        transport.close()


@pytest.fixture
def batch() -> Iterator[ReceiveBatch]:
    with ReceiveBatch(max_messages=64, slot_length=2048) as b:
        yield b


def receive_all(transport: UdpTransport, batch: ReceiveBatch, expected: int, timeout_s: float = 2.0) -> list:
    """(bytes, address) of datagrams until ``expected`` arrived (loopback delivers at once, but be kind)."""
    got: list = []
    deadline = time.monotonic() + timeout_s
    while len(got) < expected and time.monotonic() < deadline:
        n = transport.receive_batch(batch)
        got.extend((bytes(batch.data(i)), batch.address(i)) for i in range(n))
        if n == 0:
            time.sleep(0.001)
    return got


def unicast_pair(track: Callable[[UdpTransport], UdpTransport], host: str = "127.0.0.1"):
    bracketed = f"[{host}]" if ":" in host else host
    receiver = track(UdpTransport.open_receive(channel(f"aeron:udp?endpoint={bracketed}:0")))
    port = receiver.local_address[1]
    sender = track(UdpTransport.open_send(channel(f"aeron:udp?endpoint={bracketed}:{port}")))
    return sender, receiver


# --- unicast ---


def test_unicast_send_and_receive_through_a_batch(transports, batch: ReceiveBatch) -> None:
    sender, receiver = unicast_pair(transports)
    assert sender.connected_address == receiver.local_address
    assert sender.send(b"\x01" * 40) == 40
    got = receive_all(receiver, batch, 1)
    assert got == [(b"\x01" * 40, sender.local_address)]
    # the receiver replies to the source, decoded or raw
    assert receiver.send_to(b"sm", got[0][1]) == 2
    assert receiver.send_to(b"sm-raw", batch.raw_address(0)) == 6
    assert [d for d, _ in receive_all(sender, batch, 2)] == [b"sm", b"sm-raw"]
    assert sender.short_sends == receiver.short_sends == 0


def test_many_datagrams_drain_in_one_receive(transports, batch: ReceiveBatch) -> None:
    sender, receiver = unicast_pair(transports)
    for i in range(100):
        sender.send(bytes([i]) * (32 + i))
    time.sleep(0.01)
    assert receiver.receive_batch(batch) == 64  # one recvmmsg fills every slot
    assert [batch.length(i) for i in range(64)] == [32 + i for i in range(64)]
    assert bytes(batch.data(63)) == bytes([63]) * 95
    assert receiver.receive_batch(batch) == 36
    assert bytes(batch.data(0)) == bytes([64]) * 96
    assert receiver.receive_batch(batch) == 0  # would block: 0, no exception


def test_slot_buffer_gives_native_copies_the_datagram_without_a_python_copy(transports, batch) -> None:
    sender, receiver = unicast_pair(transports)
    sender.send(b"a" * 32)
    sender.send(b"b" * 64)
    assert len(receive_all(receiver, batch, 2)) == 2
    term = AtomicBuffer(bytearray(256))
    term.copy_from(64, batch.slot_buffer, batch.slot_offset(1), batch.length(1))
    assert term.get_bytes(64, 64) == b"b" * 64
    assert batch.slot_offset(1) % 32 == 0
    term.close()


def test_ipv6_unicast(transports, batch: ReceiveBatch) -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 in this Python")
    try:
        sender, receiver = unicast_pair(transports, "::1")
    except ChannelEndpointError as ex:
        pytest.skip(f"no IPv6 loopback here: {ex}")
    assert sender.send(b"v6" * 20) == 40
    got = receive_all(receiver, batch, 1)
    assert got == [(b"v6" * 20, sender.local_address)]
    assert got[0][1][0] == "::1"


def test_send_with_an_interface_binds_it(transports) -> None:
    receiver = transports(UdpTransport.open_receive(channel("aeron:udp?endpoint=127.0.0.1:0")))
    port = receiver.local_address[1]
    sender = transports(
        UdpTransport.open_send(channel(f"aeron:udp?endpoint=127.0.0.1:{port}|interface=127.0.0.1"))
    )
    assert sender.local_address[0] == "127.0.0.1"


def test_explicit_control_binds_control_and_does_not_connect(transports, batch) -> None:
    publisher = transports(
        UdpTransport.open_send(channel("aeron:udp?control=127.0.0.1:0|control-mode=manual"))
    )
    assert publisher.connected_address is None
    control = publisher.local_address
    assert control[0] == "127.0.0.1" and control[1] != 0
    # no destination yet: send() is a short send, not an error
    assert publisher.send(b"x" * 32) == 0
    assert publisher.short_sends == 1
    subscriber = transports(UdpTransport.open_receive(channel("aeron:udp?endpoint=127.0.0.1:0")))
    assert publisher.send_to(b"y" * 32, subscriber.local_address) == 32
    assert [d for d, _ in receive_all(subscriber, batch, 1)] == [b"y" * 32]
    # SMs come back to the control address
    subscriber.send_to(b"sm", control)
    assert [d for d, _ in receive_all(publisher, batch, 1)] == [b"sm"]


def test_send_batch_sends_regions_of_a_buffer_in_one_call(transports, batch: ReceiveBatch) -> None:
    sender, receiver = unicast_pair(transports)
    term_bytes = bytearray(4096)
    for i in range(8):
        term_bytes[i * 128 : (i + 1) * 128] = bytes([i]) * 128
    term = AtomicBuffer(term_bytes)
    datagrams = SendBatch(max_messages=8)
    for i in range(8):
        assert datagrams.add(i * 128, 96 + i)
    assert not datagrams.add(0, 1)  # full
    assert sender.send_batch(datagrams, term) == 8
    got = receive_all(receiver, batch, 8)
    assert [d for d, _ in got] == [bytes([i]) * (96 + i) for i in range(8)]
    # to an explicit address, raw or as a tuple
    datagrams.clear()
    datagrams.add(0, 10)
    assert receiver.send_batch(datagrams, term, sender.local_address) == 1
    assert receiver.send_batch(datagrams, term, receiver.encode_address(sender.local_address)) == 1
    assert len(receive_all(sender, batch, 2)) == 2
    datagrams.clear()
    datagrams.add(4000, 200)  # past the end of the buffer: refused before any byte is read
    with pytest.raises(ValueError, match="outside a buffer of 4096 bytes"):
        sender.send_batch(datagrams, term)
    term.close()


# --- short sends and send errors ---


def test_port_unreachable_is_a_short_send_then_ignored_on_receive(transports, batch) -> None:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nobody listens there now
    sender = transports(UdpTransport.open_send(channel(f"aeron:udp?endpoint=127.0.0.1:{port}")))
    sender.send(b"x" * 32)  # goes; the ICMP port unreachable comes back to the connected socket
    time.sleep(0.01)
    results = [sender.send(b"x" * 32) for _ in range(3)]
    assert 0 in results  # the pending ECONNREFUSED turned one send into a short send
    assert sender.short_sends == results.count(0) >= 1
    sender.send(b"x" * 32)
    time.sleep(0.01)
    assert sender.receive_batch(batch) == 0  # ECONNREFUSED on receive is skipped, not raised


class FullSocket:
    """Stands in for a socket whose send buffer is full."""

    def __init__(self, family: socket.AddressFamily = socket.AF_INET) -> None:
        self.family = family

    def send(self, data: object) -> int:
        raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")

    def sendto(self, data: object, address: object) -> int:
        raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")


def test_a_full_send_buffer_counts_short_sends(transports) -> None:
    sender, receiver = unicast_pair(transports)
    real = sender._send_sock
    sender._send_sock = FullSocket()
    try:
        assert sender.send(b"x" * 32) == 0
        assert sender.send_to(b"x" * 32, receiver.local_address) == 0
        assert sender.short_sends == 2
    finally:
        sender._send_sock = real


def test_a_datagram_too_long_raises_naming_the_destination(transports) -> None:
    sender, receiver = unicast_pair(transports)
    with pytest.raises(
        OSError, match=rf"failed to send 70000 bytes to 127\.0\.0\.1:{receiver.local_address[1]}"
    ):
        sender.send(bytes(70000))
    with pytest.raises(OSError, match=r"failed to send 70000 bytes to 127\.0\.0\.1:"):
        sender.send_to(bytes(70000), receiver.encode_address(receiver.local_address))


def test_truncated_datagram_is_reported(transports) -> None:
    sender, receiver = unicast_pair(transports)
    sender.send(b"z" * 100)
    with ReceiveBatch(max_messages=4, slot_length=64) as small:
        deadline = time.monotonic() + 2
        while receiver.receive_batch(small) == 0 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert small.is_truncated(0)
        assert small.length(0) == 64
        assert small.lengths() == [-64]
        assert bytes(small.data(0)) == b"z" * 64


# --- errors opening ---


def test_bind_conflict_names_channel_address_and_what_to_do(transports) -> None:
    first = transports(UdpTransport.open_receive(channel("aeron:udp?endpoint=127.0.0.1:0")))
    port = first.local_address[1]
    uri = f"aeron:udp?endpoint=127.0.0.1:{port}"
    with pytest.raises(ChannelEndpointError) as caught:
        UdpTransport.open_receive(channel(uri))
    error = caught.value
    assert error.channel == uri
    assert error.address == ("127.0.0.1", port)
    assert error.errno == errno.EADDRINUSE
    assert error.error_code == ErrorCode.GENERIC_ERROR
    assert str(error).startswith(f"channel error - cannot bind 127.0.0.1:{port}: Address already in use")
    assert "use another port" in str(error)
    assert str(error).endswith(uri)


def test_an_address_no_interface_has_cannot_be_bound() -> None:
    uri = "aeron:udp?endpoint=198.51.100.254:40999"  # TEST-NET-2, on no interface here
    with pytest.raises(ChannelEndpointError, match=r"cannot bind 198\.51\.100\.254:40999: .*errno 99.*check"):
        UdpTransport.open_receive(channel(uri))


def test_instance_style_open_and_double_open() -> None:
    transport = UdpTransport()
    assert not transport.is_open and transport.fileno() == -1
    assert transport.open_receive(channel("aeron:udp?endpoint=127.0.0.1:0")) is transport
    assert transport.is_open and transport.fileno() >= 0
    with pytest.raises(RuntimeError, match="already open"):
        transport.open_send(channel("aeron:udp?endpoint=127.0.0.1:1"))
    transport.close()
    transport.close()  # idempotent
    assert not transport.is_open and transport.fileno() == -1
    # A lingering publication may still send on a closed endpoint: nothing goes, nothing is raised.
    assert transport.send(b"x") == 0
    assert transport.send_to(b"x", ("127.0.0.1", 1)) == 0
    assert transport.short_sends == 0


def test_a_failed_open_leaves_no_socket_behind() -> None:
    before = _open_fds()
    for _ in range(3):
        with pytest.raises(ChannelEndpointError):
            UdpTransport.open_receive(channel("aeron:udp?endpoint=198.51.100.254:40999"))
    assert _open_fds() == before


def _open_fds() -> int:
    import os

    return len(os.listdir("/proc/self/fd"))


def test_socket_buffer_sizes_are_applied(transports) -> None:
    sender = transports(
        UdpTransport.open_send(channel("aeron:udp?endpoint=127.0.0.1:9"), so_sndbuf=65536, so_rcvbuf=200_000)
    )
    # Linux doubles the value it is given for its own bookkeeping
    assert sender._send_sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) >= 65536
    assert sender._recv_sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) >= 200_000



def test_receiver_window_is_capped_by_the_granted_socket_buffer(transports) -> None:
    """A receive endpoint offers at most half the SO_RCVBUF the kernel granted as a window (a larger one would
    lose datagrams on every full burst); without a socket (a multi-destination slot) there is no cap."""
    udp = channel(f"aeron:udp?endpoint=127.0.0.1:{free_port()}")
    receiver = transports(UdpTransport.open_receive(udp, so_rcvbuf=64 * 1024))
    granted = receiver.receive_buffer_length
    assert granted >= 64 * 1024
    counters = [AtomicCounter(AtomicBuffer(bytearray(256)), i) for i in range(2)]
    endpoint = ReceiveChannelEndpoint(udp, receiver, counters[0], counters[1])
    assert endpoint.receiver_window_cap(0) == granted // 2
    assert endpoint.receiver_window_cap(5) is None

# --- multicast on loopback ---


def test_multicast_on_loopback_data_to_receiver_and_control_back(transports, batch) -> None:
    uri = "aeron:udp?endpoint=224.0.1.1:0|interface=127.0.0.1|ttl=2"
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("0.0.0.0", 0))
    port = probe.getsockname()[1]
    probe.close()
    uri = uri.replace(":0|", f":{port}|")
    ch = channel(uri)
    assert ch.local_interface is not None and ch.local_interface.name == "lo"
    receiver = transports(UdpTransport.open_receive(ch))
    second_receiver = transports(UdpTransport.open_receive(ch))  # SO_REUSEADDR: two on one host
    sender = transports(UdpTransport.open_send(ch))
    assert receiver.local_address == ("224.0.1.1", port)
    assert sender.local_address == ("224.0.1.2", port)  # the control group
    assert sender.send_fileno != sender.fileno()  # two sockets: data out, control in
    assert sender.multicast_ttl == 2
    assert sender.send(b"d" * 40) == 40
    source = sender.send_local_address
    assert receive_all(receiver, batch, 1) == [(b"d" * 40, source)]
    assert receive_all(second_receiver, batch, 1) == [(b"d" * 40, source)]
    # status messages go to the control group and reach the sender's control socket only
    assert receiver.send_to(b"s" * 36, ch.remote_control) == 36
    assert [d for d, _ in receive_all(sender, batch, 1)] == [b"s" * 36]
    time.sleep(0.01)
    assert second_receiver.receive_batch(batch) == 0


# --- the event loop edge ---


@pytest.mark.parametrize(
    "factory", [asyncio.new_event_loop, uvloop.new_event_loop], ids=["asyncio", "uvloop"]
)
def test_register_reader_only_wakes(transports, factory) -> None:
    sender, receiver = unicast_pair(transports)
    loop = factory()
    reached: list = []
    loop.set_exception_handler(lambda _loop, context: reached.append(context))
    woken: asyncio.Event | None = None  # made inside the loop
    wakes = 0

    async def main() -> int:
        nonlocal wakes, woken
        woken = asyncio.Event()
        waker = Waker()

        def wake() -> None:
            nonlocal wakes
            wakes += 1
            woken.set()

        waker.bind(wake)
        receiver.register_reader(asyncio.get_running_loop(), waker)
        sender.send(b"w" * 32)
        await asyncio.wait_for(woken.wait(), 2)
        with ReceiveBatch(4, 64) as b:
            # the callback did not read: the datagram is still there for the agent
            count = receiver.receive_batch(b)
        receiver.unregister_reader(asyncio.get_running_loop())
        woken.clear()
        sender.send(b"w" * 32)
        await asyncio.sleep(0.05)
        assert not woken.is_set()  # unregistered: no more wakes
        return count

    try:
        assert loop.run_until_complete(main()) == 1
        assert wakes >= 1
        assert reached == []
    finally:
        loop.close()


@pytest.mark.parametrize(
    "factory", [asyncio.new_event_loop, uvloop.new_event_loop], ids=["asyncio", "uvloop"]
)
def test_a_socket_watched_with_skip_unready_reads_is_read_only_after_the_loop_says_readable(transports, factory, monkeypatch) -> None:
    """A duty cycle does not spend a system call on a socket the loop has not seen readable since a read left it
    empty; whatever arrives is still read, at the cycle after the loop's next look."""
    sender, receiver = unicast_pair(transports)
    loop = factory()
    calls = 0
    real_receive = ReceiveBatch.receive

    def counting_receive(self: ReceiveBatch, fd: int) -> int:
        nonlocal calls
        calls += 1
        return real_receive(self, fd)

    monkeypatch.setattr(ReceiveBatch, "receive", counting_receive)

    async def main() -> list[int]:
        receiver.register_reader(asyncio.get_running_loop(), Waker(), skip_unready_reads=True)
        counts = []
        with ReceiveBatch(4, 64) as b:
            counts.append(receiver.receive_batch(b))  # nothing there: read once, then known empty
            counts.append(receiver.receive_batch(b))
            counts.append(calls)
            sender.send(b"r" * 32)
            for _ in range(200):  # the loop's turns until it has seen the socket readable
                await asyncio.sleep(0.001)
                if (received := receiver.receive_batch(b)) > 0:
                    counts.append(received)
                    break
            counts.append(receiver.receive_batch(b))  # drained by that read: no call
            receiver.unregister_reader(asyncio.get_running_loop())
            sender.send(b"r" * 32)
            counts.append(receive_all(receiver, b, 1).__len__())  # unwatched: every read looks
        return counts

    try:
        assert loop.run_until_complete(main()) == [0, 0, 1, 1, 0, 1]
    finally:
        loop.close()


@pytest.mark.parametrize(
    "factory", [asyncio.new_event_loop, uvloop.new_event_loop], ids=["asyncio", "uvloop"]
)
def test_a_send_socket_told_port_unreachable_still_wakes_its_agent_and_is_read(transports, factory) -> None:
    """A publication sending where nobody listens yet gets an ICMP port unreachable on its socket; libuv then stops
    watching the socket. The next read skips the error and watches it again, so a status message that comes later
    still ends the sender's park and is read."""
    port = free_port()
    sender = transports(UdpTransport.open_send(channel(f"aeron:udp?endpoint=127.0.0.1:{port}")))
    loop = factory()

    async def main() -> int:
        woken = asyncio.Event()
        waker = Waker()
        waker.bind(woken.set)
        sender.register_reader(asyncio.get_running_loop(), waker, skip_unready_reads=True)
        with ReceiveBatch(4, 64) as b:
            sender.send(b"s" * 32)  # nobody listens: port unreachable
            await asyncio.sleep(0.02)
            for _ in range(LOOKS_BETWEEN_READS):  # whatever the loop said, the error is read within this many
                assert sender.receive_batch(b) == 0
            await asyncio.sleep(0.01)
            woken.clear()
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
                peer.bind(("127.0.0.1", port))
                peer.sendto(b"m" * 32, sender.local_address)  # a status message, say
                await asyncio.wait_for(woken.wait(), 2)
                return sender.receive_batch(b)

    try:
        assert loop.run_until_complete(main()) == 1
    finally:
        loop.close()


def test_close_unregisters_the_reader() -> None:
    loop = uvloop.new_event_loop()
    try:
        transport = UdpTransport.open_receive(channel("aeron:udp?endpoint=127.0.0.1:0"))
        fd = transport.fileno()
        transport.register_reader(loop, Waker())
        transport.close()
        assert not loop.remove_reader(fd)  # already removed by close()
    finally:
        loop.close()
