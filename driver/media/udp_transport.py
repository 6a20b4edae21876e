"""The socket under a send or receive channel endpoint, as Aeron 1.15.1's ``UdpChannelTransport`` opens it.

One transport holds one non-blocking UDP socket, or two for a multicast send endpoint (a send socket
connected to the data group and a receive socket joined to the control group)::

    open_send(channel)     unicast:   bind local_control (``interface``/``control``, default 0.0.0.0:0) and,
                                      without explicit ``control``, connect to remote_data (the endpoint)
                           multicast: send socket with IP_MULTICAST_IF / TTL / LOOP, connected to the data
                                      group; receive socket bound to the control group:port (SO_REUSEADDR)
                                      and joined to it on the channel's interface
    open_receive(channel)  unicast:   bind remote_data (the endpoint)
                           multicast: bind the data group:port (SO_REUSEADDR), join it on the interface;
                                      the same socket sends SM/NAK to the control group (IP_MULTICAST_IF)

Differences from 1.15.1: an IPv4 multicast socket binds the group address instead of the wildcard (Linux
then delivers only that group's datagrams to it, so on one host a sender's control socket does not also
get every DATA datagram of a receiver on the same port; IPv6 binds the wildcard as Java does); ECONNREFUSED (ICMP port unreachable on a connected
socket) is ignored on receive and counted as a short send on send, as Java ignores PortUnreachableException.

Reading is batched (:class:`driver.media.udp_batch.ReceiveBatch`, one recvmmsg); the event loop only
wakes the agent that owns the transport (:meth:`UdpTransport.register_reader`, design.md section 6 rule 3).

Offloads (docs/wire.md section 10), both on unless the driver's settings turn them off: a send transport
hands bursts to the kernel as UDP_SEGMENT sends (the same datagrams on the wire; falls back to plain
sendmmsg for good if the socket cannot), and a receive transport turns UDP_GRO on the first time a batch
that can split coalesced buffers reads it.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import socket
import struct
from typing import Any

from driver.agent.idle_strategy import Waker
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.media import udp_batch
from driver.media.udp_batch import ReceiveBatch, SendBatch, TermBurst
from driver.protocol.control_protocol import ErrorCode
from driver.protocol.udp_channel import Address, UdpChannel

DEFAULT_SO_RCVBUF = 128 * 1024
"""SO_RCVBUF when a caller gives none (Java's ``aeron.socket.so_rcvbuf`` default; the driver's own default is
larger, see driver/context.py); ``so_sndbuf`` defaults to 0 (= the OS default)."""

SOL_UDP = 17
UDP_GRO = 104
"""Linux <netinet/udp.h>; the socket module names neither on every Python."""
GSO_SEND_BURST = udp_batch.MAX_GSO_DATAGRAMS
"""Datagrams per publication per sender duty cycle when the kernel segments: flow control bounds it."""

if (socket.AF_INET, socket.AF_INET6) != (udp_batch.AF_INET, udp_batch.AF_INET6):  # pragma: no cover
    raise ImportError("udp_batch's address family numbers do not match this platform's socket module")

_SHORT_SEND_ERRNOS = udp_batch.SHORT_SEND_ERRNOS
"""Send failures that are a short send to count, not an error: a full socket buffer, an ICMP port unreachable
left on a connected socket, or a send before any destination is known (Java ignores PortUnreachableException
and NotYetConnectedException in SendChannelEndpoint.send). One list with the native cycle's:
native/include/amd_udp.h's amd_udp_is_short_send."""


class ChannelEndpointError(Exception):
    """A channel's socket could not be opened or set up. The conductor refuses the ADD with ON_ERROR
    GENERIC_ERROR: the 1.15.1 client reads CHANNEL_ENDPOINT_ERROR as the error of an endpoint already open,
    never as an answer to the ADD (docs/commands.md section 3).

    ``channel`` is the original URI; ``address`` the (host, port) being bound, connected or joined; ``errno``
    that of the OSError underneath (None when the request itself is impossible).
    """

    error_code = ErrorCode.GENERIC_ERROR

    def __init__(self, channel: str, address: Address | None, action: str, cause: OSError | str) -> None:
        self.channel = channel
        self.address = address
        self.action = action
        self.errno = cause.errno if isinstance(cause, OSError) else None
        where = "" if address is None else f" {format_address(address)}"
        if isinstance(cause, OSError):
            reason = cause.strerror or str(cause)
            if cause.errno is not None:
                reason = f"{reason} (errno {cause.errno})"
        else:
            reason = cause
        hint = _HINTS.get(self.errno, "")
        super().__init__(f"channel error - cannot {action}{where}: {reason}{hint}: {channel}")


_HINTS = {
    errno.EADDRINUSE: "; another socket holds this address: use another port or close the other endpoint",
    errno.EADDRNOTAVAIL: "; no local interface has this address: check interface=/endpoint= of the channel",
    errno.EACCES: "; not permitted (a port below 1024 needs privileges, broadcast needs SO_BROADCAST)",
    errno.ENODEV: "; no such interface for multicast: check interface= of the channel",
}


def format_address(address: Address) -> str:
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(host.partition("%")[0])


def _family_of(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if _ip(host).version == 6 else socket.AF_INET


def _sock_address(family: socket.AddressFamily, address: Address) -> Any:
    """``address`` in the form a socket of ``family`` takes; the IPv4 wildcard becomes ``::`` for IPv6."""
    host, port = address
    if family == socket.AF_INET6 and _ip(host).version == 4:
        if not _ip(host).is_unspecified:
            raise ValueError(f"{format_address(address)} is IPv4 but the channel's socket is IPv6")
        host = "::"
    return (host, port)


def _scope_id(host: str) -> int:
    _, percent, scope = host.partition("%")
    if not percent:
        return 0
    return int(scope) if scope.isdigit() else socket.if_nametoindex(scope)


class _Hybrid:
    """``UdpTransport.open_send(channel)`` makes a new transport; ``transport.open_send(channel)`` opens
    that (unopened) instance. Both return the opened transport."""

    def __init__(self, function: Any) -> None:
        self.function = function
        self.__doc__ = function.__doc__

    def __get__(self, instance: Any, owner: type) -> Any:
        target = instance if instance is not None else owner()

        def bound(*args: Any, **kwargs: Any) -> Any:
            return self.function(target, *args, **kwargs)

        bound.__doc__ = self.function.__doc__
        return bound


LOOKS_BETWEEN_READS = 64
"""A socket the loop has not seen readable is still read every this many looks, in case the loop stopped watching
it (libuv stops a watch whose socket reported an error before the read that clears it)."""


class UdpTransport:
    """A non-blocking UDP socket (or two, multicast send) for one channel endpoint. Not thread safe."""

    def __init__(self) -> None:
        self.channel: UdpChannel | None = None
        self._send_sock: socket.socket | None = None
        self._recv_sock: socket.socket | None = None
        self.send_fd = -1
        """The send socket's descriptor (-1 once closed), read by the publications' send steps each send."""
        self._recv_fd = -1
        self.connected_address: Address | None = None
        """Where :meth:`send` goes: the endpoint of a unicast/multicast send channel, else None."""
        self.multicast_ttl = 0
        """The TTL set on a multicast send socket (0: the OS default was kept)."""
        self.short_sends = 0
        """Sends that did not go whole (counted here; the agent adds them to the SHORT_SENDS counter)."""
        self._reader_loop: asyncio.AbstractEventLoop | None = None
        # While a loop watches the socket: whether it may hold a datagram (the loop said readable since the last
        # read that left it empty). A duty cycle skips the read of an empty socket, a syscall of ~1 µs each.
        self._may_hold_data = True
        self._unread_looks = 0
        self._skip_unready_reads = False
        self._reader_waker: Waker | None = None
        self._term_burst = TermBurst()
        self.gso = False
        """Bursts go as UDP_SEGMENT sends (set by ``open_send(gso=True)``, cleared if the socket refuses)."""
        self.gro = False
        """UDP_GRO is on: only a batch that splits coalesced buffers may read (see :meth:`receive_batch`)."""
        self._gro_wanted = False

    # --- opening ---

    @_Hybrid
    def open_send(
        self,
        channel: UdpChannel,
        so_sndbuf: int = 0,
        so_rcvbuf: int = DEFAULT_SO_RCVBUF,
        ttl: int = 0,
        gso: bool = False,
    ) -> UdpTransport:
        """Open for a send channel endpoint (publications): see the module doc. ``ttl`` (0 = the channel's
        ``multicast_ttl``, itself 0 = OS default) applies to multicast only; ``gso`` sends bursts with
        UDP generic segmentation offload. Raises ChannelEndpointError."""
        self._check_unopened(channel)
        uri = channel.original_uri_string
        try:
            if channel.is_multicast:
                family = _family_of(channel.remote_data[0])
                self._send_sock = send_sock = self._socket(family, uri)
                self._set_multicast_send_options(send_sock, channel, ttl or channel.multicast_ttl)
                self._recv_sock = self._socket(family, uri)
                self._bind_multicast(self._recv_sock, channel, channel.remote_control)
                self._connect(send_sock, channel.remote_data, uri)
            else:
                bind_host = channel.local_control[0]
                family = _family_of(
                    bind_host
                    if channel.has_explicit_control or not _ip(bind_host).is_unspecified
                    else channel.remote_data[0]
                )
                self._send_sock = self._recv_sock = sock = self._socket(family, uri)
                self._bind(sock, channel.local_control, uri)
                if not channel.has_explicit_control:
                    self._connect(sock, channel.remote_data, uri)
            self._set_buffers(so_sndbuf, so_rcvbuf, uri)
        except BaseException:
            self.close()
            raise
        self.send_fd = self._send_sock.fileno()
        self._recv_fd = self._recv_sock.fileno()
        self.gso = gso
        return self

    @_Hybrid
    def open_receive(
        self,
        channel: UdpChannel,
        so_rcvbuf: int = DEFAULT_SO_RCVBUF,
        so_sndbuf: int = 0,
        ttl: int = 0,
        gro: bool = False,
    ) -> UdpTransport:
        """Open for a receive channel endpoint (subscriptions): see the module doc. ``gro``: let the kernel
        coalesce datagrams once a batch that splits them reads. Raises ChannelEndpointError."""
        self._check_unopened(channel)
        uri = channel.original_uri_string
        try:
            family = _family_of(channel.remote_data[0])
            self._send_sock = self._recv_sock = sock = self._socket(family, uri)
            if channel.is_multicast:
                self._set_multicast_send_options(sock, channel, ttl or channel.multicast_ttl)
                self._bind_multicast(sock, channel, channel.remote_data)
            else:
                self._bind(sock, channel.remote_data, uri)
            self._set_buffers(so_sndbuf, so_rcvbuf, uri)
        except BaseException:
            self.close()
            raise
        self.send_fd = self._send_sock.fileno()
        self._recv_fd = self._recv_sock.fileno()
        self._gro_wanted = gro
        return self

    def _check_unopened(self, channel: UdpChannel) -> None:
        if self.channel is not None:
            raise RuntimeError(f"this transport is already open for {self.channel.original_uri_string}")
        self.channel = channel

    def _socket(self, family: socket.AddressFamily, uri: str) -> socket.socket:
        try:
            sock = socket.socket(family, socket.SOCK_DGRAM)
        except OSError as ex:
            raise ChannelEndpointError(uri, None, "open a UDP socket", ex) from ex
        sock.setblocking(False)
        return sock

    @staticmethod
    def _bind(sock: socket.socket, address: Address, uri: str) -> None:
        try:
            sock.bind(_sock_address(sock.family, address))
        except (OSError, ValueError) as ex:
            cause = ex if isinstance(ex, OSError) else str(ex)
            raise ChannelEndpointError(uri, address, "bind", cause) from ex

    def _connect(self, sock: socket.socket, address: Address, uri: str) -> None:
        try:
            sock.connect(_sock_address(sock.family, address))
        except (OSError, ValueError) as ex:
            cause = ex if isinstance(ex, OSError) else str(ex)
            raise ChannelEndpointError(uri, address, "connect to", cause) from ex
        self.connected_address = address

    def reconnect(self, address: Address) -> None:
        """Send to ``address`` from now on (a re-resolved endpoint); raises ChannelEndpointError."""
        self._connect(self._send_sock, address, self._uri())

    def _set_buffers(self, so_sndbuf: int, so_rcvbuf: int, uri: str) -> None:
        try:
            if so_sndbuf:
                self._send_sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, so_sndbuf)
            if so_rcvbuf:
                self._recv_sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, so_rcvbuf)
        except OSError as ex:
            raise ChannelEndpointError(
                uri, None, f"set SO_SNDBUF={so_sndbuf} / SO_RCVBUF={so_rcvbuf}", ex
            ) from ex

    def _interface_index(self, channel: UdpChannel) -> int:
        interface = channel.local_interface
        return 0 if interface is None else interface.index

    def _set_multicast_send_options(self, sock: socket.socket, channel: UdpChannel, ttl: int) -> None:
        uri = channel.original_uri_string
        interface_host = channel.local_data[0]
        try:
            if sock.family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, self._interface_index(channel))
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, 1)
                if ttl:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, ttl)
                    self.multicast_ttl = sock.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS)
            else:
                # struct ip_mreqn (Linux): the interface by index, its address as a fallback
                mreqn = struct.pack(
                    "=4s4si", bytes(4), _ip(interface_host).packed, self._interface_index(channel)
                )
                sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, mreqn)
                sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
                if ttl:
                    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, ttl)
                    self.multicast_ttl = sock.getsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL)
        except OSError as ex:
            raise ChannelEndpointError(
                uri, channel.local_data, f"set the multicast interface/TTL {ttl} on", ex
            ) from ex

    def _bind_multicast(self, sock: socket.socket, channel: UdpChannel, group: Address) -> None:
        """SO_REUSEADDR, bind group:port (IPv6: [::]:port, as Linux refuses a multicast bind without a
        scope), join the group on the channel's interface."""
        uri = channel.original_uri_string
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        group_ip = _ip(group[0])
        self._bind(sock, ("::", group[1]) if group_ip.version == 6 else group, uri)
        index = self._interface_index(channel)
        try:
            if sock.family == socket.AF_INET6:
                sock.setsockopt(
                    socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, struct.pack("=16sI", group_ip.packed, index)
                )
            else:
                mreqn = struct.pack("=4s4si", group_ip.packed, _ip(channel.local_data[0]).packed, index)
                sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreqn)
        except OSError as ex:
            interface = channel.local_interface.name if channel.local_interface else "?"
            raise ChannelEndpointError(
                uri, group, f"join multicast group on interface {interface} ({channel.local_data[0]})", ex
            ) from ex

    # --- I/O ---

    def fileno(self) -> int:
        """The descriptor to read (the control socket of a multicast send endpoint); -1 once closed."""
        return self._recv_fd

    @property
    def send_fileno(self) -> int:
        return self.send_fd

    @property
    def is_open(self) -> bool:
        return self._recv_sock is not None

    @property
    def local_address(self) -> Address:
        """The bound (host, port) of the socket that reads, e.g. to learn the port of a ``:0`` bind."""
        return self._recv_sock.getsockname()[:2]

    @property
    def receive_buffer_length(self) -> int:
        """SO_RCVBUF as the kernel granted it (capped by net.core.rmem_max, then doubled for its own
        bookkeeping); 0 once closed."""
        if self._recv_sock is None:
            return 0
        return self._recv_sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)

    @property
    def send_local_address(self) -> Address:
        return self._send_sock.getsockname()[:2]

    def send(self, data: Any) -> int:
        """One datagram to the connected destination; returns bytes sent (0 when it could not go).

        Anything short of the whole datagram is counted in :attr:`short_sends`. Raises OSError (naming
        the destination) for failures other than a full buffer, port unreachable or no destination. A
        closed transport sends nothing and returns 0: a lingering publication may still try it."""
        sock = self._send_sock
        if sock is None:
            return 0  # closed (its endpoint is closing): as 1.15.1, nothing goes and nothing is reported
        try:
            sent = sock.send(data)
        except OSError as ex:
            if ex.errno not in _SHORT_SEND_ERRNOS:
                raise OSError(
                    ex.errno, f"failed to send {len(data)} bytes to {self._destination()}: {ex.strerror}"
                ) from ex
            sent = 0
        if sent != len(data):
            self.short_sends += 1
        return sent

    def send_to(self, data: Any, address: Address | bytes) -> int:
        """One datagram to ``address``: (host, port), or raw sockaddr bytes (``ReceiveBatch.raw_address``,
        :func:`encode_address`) which skip the address parsing. Returns bytes sent; short sends counted."""
        sock = self._send_sock
        if sock is None:
            return 0  # closed: nothing goes and nothing is reported (see send)
        if isinstance(address, bytes):
            sent = udp_batch.sendto(self.send_fd, data, address)
            if sent < 0:
                if -sent not in _SHORT_SEND_ERRNOS:
                    where = format_address(udp_batch.decode_sockaddr(address))
                    raise OSError(
                        -sent, f"failed to send {len(data)} bytes to {where}: {errno.errorcode[-sent]}"
                    )
                sent = 0
        else:
            try:
                sent = sock.sendto(data, _sock_address(sock.family, address))
            except OSError as ex:
                if ex.errno not in _SHORT_SEND_ERRNOS:
                    raise OSError(
                        ex.errno,
                        f"failed to send {len(data)} bytes to {format_address(address)}: {ex.strerror}",
                    ) from ex
                sent = 0
        if sent != len(data):
            self.short_sends += 1
        return sent

    def send_batch(
        self, batch: SendBatch, buffer: AtomicBuffer, address: Address | bytes | None = None
    ) -> int:
        """The datagrams queued in ``batch`` (regions of ``buffer``) in one sendmmsg, to ``address`` or the
        connected destination. Returns how many went; a batch that did not go whole is one short send."""
        if self._send_sock is None:
            return 0  # closed: nothing goes and nothing is reported (see send)
        raw = address if address is None or isinstance(address, bytes) else self.encode_address(address)
        sent = batch.send(self.send_fd, buffer, raw)
        if sent < 0:
            if -sent not in _SHORT_SEND_ERRNOS:
                raise OSError(
                    -sent,
                    f"failed to send {batch.count} datagrams to {self._destination(address)}: "
                    f"{errno.errorcode.get(-sent, -sent)}",
                )
            sent = 0
        if sent != batch.count:
            self.short_sends += 1
        return sent

    def send_term_burst(
        self, term_buffer: AtomicBuffer, term_offset: int, window: int, mtu_length: int, max_datagrams: int
    ) -> tuple[int, int, int, bool]:
        """Up to ``max_datagrams`` datagrams of ``term_buffer``'s committed frames from ``term_offset`` to the
        connected destination in one sendmmsg (:class:`driver.media.udp_batch.TermBurst`).

        Returns (datagrams sent, bytes sent, sender position advance, short): ``short`` when fewer went than
        were scanned (counted in :attr:`short_sends`, as :meth:`send` counts one). Raises OSError as
        :meth:`send` does."""
        if self._send_sock is None:
            return 0, 0, 0, False  # closed: nothing goes and nothing is reported (see send)
        if self.gso:
            sent, bytes_sent, advance, scanned = self._term_burst.send(
                self.send_fd, term_buffer, term_offset, window, mtu_length, max_datagrams, gso=True
            )
            if sent < 0 and -sent in udp_batch.GSO_UNSUPPORTED_ERRNOS:
                self.gso = False  # this socket or route cannot segment: plain datagrams from now on
        if not self.gso:
            sent, bytes_sent, advance, scanned = self._term_burst.send(
                self.send_fd,
                term_buffer,
                term_offset,
                window,
                mtu_length,
                min(max_datagrams, udp_batch.MAX_BATCH),
            )
        if sent < 0:
            if -sent not in _SHORT_SEND_ERRNOS:
                raise OSError(
                    -sent,
                    f"failed to send {scanned} datagrams to {self._destination()}: "
                    f"{errno.errorcode.get(-sent, -sent)}",
                )
            sent = bytes_sent = advance = 0
        if sent != scanned:
            self.short_sends += 1
            return sent, bytes_sent, advance, True
        return sent, bytes_sent, advance, False

    def encode_address(self, address: Address) -> bytes:
        """(host, port) as raw sockaddr bytes for this transport's family (an IPv6 scope name resolved)."""
        family = self._send_sock.family if self._send_sock is not None else _family_of(address[0])
        host, port = _sock_address(family, address)
        if family == socket.AF_INET6:
            return udp_batch.encode_sockaddr(host.partition("%")[0], port, _scope_id(host))
        return udp_batch.encode_sockaddr(host, port)

    @property
    def send_burst(self) -> int | None:
        """Datagrams a publication may hand :meth:`send_term_burst` per duty cycle (None: its default)."""
        return GSO_SEND_BURST if self.gso else None

    def describe_send_failure(self, error: int) -> str:
        """The message of an OSError for a send to the connected destination that failed with ``error``."""
        return f"failed to send datagrams to {self._destination()}: {errno.errorcode.get(error, error)}"

    def native_receive_fd(self) -> int | None:
        """The receive socket once UDP_GRO is settled (on, or refused), for the native steady-state cycle; None
        before the first batch read or once closed."""
        if self._recv_sock is None or self._gro_wanted:
            return None
        return self._recv_fd

    @property
    def may_hold_data(self) -> bool:
        """Watched with ``skip_unready_reads``: the loop saw the socket readable since a read left it empty."""
        return self._may_hold_data

    def receive_batch(self, batch: ReceiveBatch) -> int:
        """Drain up to ``batch.max_messages`` datagrams into ``batch`` (one recvmmsg); 0 when none waits.

        ECONNREFUSED (an ICMP port unreachable reported on a connected socket) is skipped, as Java does.
        A transport opened with ``gro`` turns UDP_GRO on when first read by a batch that splits. Watched with
        ``skip_unready_reads``, a socket a read left empty is read again only once the loop saw it readable (or
        after ``LOOKS_BETWEEN_READS`` looks)."""
        if not self._may_hold_data:
            self._unread_looks += 1
            if self._unread_looks < LOOKS_BETWEEN_READS:
                return 0
        self._unread_looks = 0
        if self._gro_wanted and getattr(batch, "gro", False):
            self._enable_gro()
        try:
            received = batch.receive(self._recv_fd)
        except ConnectionRefusedError:
            # The socket reported an error (an ICMP port unreachable): libuv stops watching such a socket, so
            # watch it again or no readiness would end a park or say it holds data.
            self._rewatch()
            received = batch.receive(self._recv_fd)
        if self._skip_unready_reads and batch.drained:
            # Empty now; the loop's level-triggered watch says readable again before the next cycle reads.
            self._may_hold_data = False
        return received

    def _rewatch(self) -> None:
        loop, waker = self._reader_loop, self._reader_waker
        if loop is not None and waker is not None and not loop.is_closed():
            loop.remove_reader(self._recv_fd)
            loop.add_reader(self._recv_fd, self._on_readable, waker)

    def _enable_gro(self) -> None:
        self._gro_wanted = False
        if self._recv_sock is None:
            return
        try:
            self._recv_sock.setsockopt(SOL_UDP, UDP_GRO, 1)
        except OSError:
            return  # an older kernel: datagrams arrive one by one, as without the option
        self.gro = True

    # --- the event loop edge ---

    def register_reader(
        self, loop: asyncio.AbstractEventLoop, waker: Waker, skip_unready_reads: bool = False
    ) -> None:
        """Wake ``waker`` when the socket becomes readable. The callback only wakes and notes the socket readable
        (``skip_unready_reads``: reads between are skipped); the agent reads (``receive_batch``) and decodes in
        its duty cycle (docs/design.md section 3)."""
        if self._recv_sock is None:
            raise RuntimeError(f"register_reader on a closed transport for {self._uri()}")
        if self._reader_loop is not None:
            self._reader_loop.remove_reader(self._recv_fd)
        loop.add_reader(self._recv_fd, self._on_readable, waker)
        self._reader_loop = loop
        self._reader_waker = waker
        self._may_hold_data = True
        self._skip_unready_reads = skip_unready_reads

    def _on_readable(self, waker: Waker) -> None:
        self._may_hold_data = True
        waker.wake()

    def unregister_reader(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        loop = loop or self._reader_loop
        if loop is not None and self._recv_fd >= 0 and not loop.is_closed():
            loop.remove_reader(self._recv_fd)
        self._reader_loop = None
        self._may_hold_data = True  # nobody says when it is readable now: every read looks
        self._skip_unready_reads = False

    def close(self) -> None:
        """Stop the reader (if registered) and close the socket(s). Idempotent."""
        if self._reader_loop is not None:
            self.unregister_reader(self._reader_loop)
        send_sock, recv_sock = self._send_sock, self._recv_sock
        self._send_sock = self._recv_sock = None
        self.send_fd = self._recv_fd = -1
        if send_sock is not None:
            send_sock.close()
        if recv_sock is not None and recv_sock is not send_sock:
            recv_sock.close()

    def __enter__(self) -> UdpTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "open" if self.is_open else "closed"
        return f"UdpTransport({self._uri()}, {state})"

    def _uri(self) -> str:
        return "<unopened>" if self.channel is None else self.channel.original_uri_string

    def _destination(self, address: Address | bytes | None = None) -> str:
        if isinstance(address, bytes):
            return format_address(udp_batch.decode_sockaddr(address))
        if address is not None:
            return format_address(address)
        if self.connected_address is not None:
            return format_address(self.connected_address)
        return "(no destination)"
