"""Batched UDP I/O over ``driver._native`` (recvmmsg / sendmmsg; native/include/amd_udp.h).

Offloads (docs/wire.md section 10): a ``ReceiveBatch(gro=True)`` splits the coalesced buffers a socket with
UDP_GRO on may return back into their datagrams, and ``TermBurst.send(..., gso=True)`` hands runs of
equal-length datagrams to the kernel as one UDP_SEGMENT send. Either way the datagrams on the wire are the
ones a plain send would carry.

The one owner of the native ``amd_udp_*`` functions (docs/design.md section 2). These take a file
descriptor that ``driver/media/udp_transport.py`` owns. Linux only, as recvmmsg is.

:class:`ReceiveBatch` drains up to ``max_messages`` datagrams in one system call into fixed slots of one
anonymous mapping; a slot is valid until the next :meth:`ReceiveBatch.receive`. A receiver hands slot ``i``
to a native term insert without a copy through :attr:`ReceiveBatch.slot_buffer` (an ``AtomicBuffer`` over
all slots) and :meth:`ReceiveBatch.slot_offset`. Source addresses stay raw ``struct sockaddr`` bytes until
someone asks: :meth:`ReceiveBatch.address` decodes, :meth:`ReceiveBatch.raw_address` keys or replies
(:func:`sendto` takes the raw form back).
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import mmap
import os
from typing import Any

from driver._native import ffi, lib
from driver.concurrent.atomic_buffer import AtomicBuffer

MAX_BATCH = lib.AMD_UDP_MAX_BATCH
"""Datagrams per system call at most (the C side keeps its message headers on the stack)."""
MAX_GSO_DATAGRAMS = lib.AMD_UDP_MAX_GSO_MESSAGES * lib.AMD_UDP_MAX_GSO_SEGMENTS
"""Datagrams one offloaded burst (``TermBurst.send(..., gso=True)``) may carry."""
MIN_SEGMENT = lib.AMD_UDP_MIN_SEGMENT
"""A coalesced receive is split only into segments at least this long (no Aeron datagram is shorter)."""
GSO_UNSUPPORTED_ERRNOS = frozenset({5, 22, 92, 95})
"""EIO, EINVAL, ENOPROTOOPT, EOPNOTSUPP: the socket or its route cannot segment; send plain datagrams."""
SHORT_SEND_ERRNOS = frozenset(e for e in errno.errorcode if lib.amd_udp_is_short_send(e))
"""Send failures that are a short send to count, not an error (amd_udp_is_short_send: the native cycle's list
too)."""
ADDRESS_SLOT_LENGTH = lib.AMD_UDP_ADDRESS_SLOT_LENGTH
"""sizeof(struct sockaddr_storage)."""
SLOT_ALIGNMENT = 32
"""Slots start at multiples of FRAME_ALIGNMENT, so a datagram's frames are aligned in its slot."""

# Linux values (this module may not import socket); udp_transport checks they agree with the socket module.
AF_INET = 2
AF_INET6 = 10

Address = tuple[str, int]
_ADDRESS_CACHE_LIMIT = 1024


def _raise_errno(result: int) -> None:
    raise OSError(-result, os.strerror(-result))


def decode_sockaddr(raw: bytes | memoryview) -> Address:
    """(host, port) from a ``struct sockaddr_in`` / ``sockaddr_in6``; an IPv6 scope becomes ``%<index>``."""
    family = raw[0] | (raw[1] << 8)
    port = (raw[2] << 8) | raw[3]
    if family == AF_INET:
        return f"{raw[4]}.{raw[5]}.{raw[6]}.{raw[7]}", port
    if family == AF_INET6:
        host = str(ipaddress.IPv6Address(bytes(raw[8:24])))
        scope_id = int.from_bytes(raw[24:28], "little")
        return (f"{host}%{scope_id}" if scope_id else host), port
    raise ValueError(f"address family {family} is neither AF_INET nor AF_INET6")


def encode_sockaddr(host: str, port: int, scope_id: int = 0) -> bytes:
    """A ``struct sockaddr_in`` (16 bytes) or ``sockaddr_in6`` (28 bytes) for a numeric address.

    An IPv6 ``%scope`` must be numeric here (an interface index); names are resolved by the media layer.
    """
    address_text, _, scope = host.partition("%")
    address = ipaddress.ip_address(address_text)
    if not 0 <= port <= 0xFFFF:
        raise ValueError(f"port {port} is out of range (0..65535)")
    if address.version == 4:
        return AF_INET.to_bytes(2, "little") + port.to_bytes(2, "big") + address.packed + bytes(8)
    if scope:
        if not scope.isdigit():
            raise ValueError(f"IPv6 scope {scope!r} is not an interface index: resolve it first")
        scope_id = int(scope)
    return (
        AF_INET6.to_bytes(2, "little")
        + port.to_bytes(2, "big")
        + bytes(4)  # flow info
        + address.packed
        + scope_id.to_bytes(4, "little")
    )


class ReceiveBatch:
    """Slots for up to ``max_messages`` datagrams of up to ``slot_length`` bytes, filled by one recvmmsg.

    ``slot_length`` 65536 holds any UDP datagram Aeron sends (at most 65504 bytes); a longer datagram is
    truncated to the slot and reported by :meth:`is_truncated` (count it as invalid and drop it).

    With ``gro`` the socket may coalesce (UDP_GRO, ``UdpTransport.receive_batch`` turns it on for such a
    batch): a slot then holds several datagrams of one source and :attr:`count` counts datagrams, which
    can exceed ``max_messages``; :attr:`drained` says whether the socket may hold more.
    """

    __slots__ = (
        "_addr_lengths",
        "_addr_lengths_view",
        "_address_cache",
        "_addrs",
        "_addrs_view",
        "_buffer",
        "_lengths",
        "_lengths_view",
        "_memory",
        "_offsets",
        "_offsets_view",
        "_ptr",
        "_received",
        "_sources",
        "_sources_view",
        "_table",
        "_view",
        "count",
        "gro",
        "max_datagrams",
        "max_messages",
        "slot_length",
    )

    def __init__(self, max_messages: int = 64, slot_length: int = 65536, gro: bool = False) -> None:
        if not 1 <= max_messages <= MAX_BATCH:
            raise ValueError(f"max_messages={max_messages}: expected 1..{MAX_BATCH}")
        if slot_length < SLOT_ALIGNMENT or slot_length % SLOT_ALIGNMENT:
            raise ValueError(f"slot_length={slot_length}: expected a positive multiple of {SLOT_ALIGNMENT}")
        self.max_messages = max_messages
        self.slot_length = slot_length
        self.gro = gro
        self.count = 0
        self._address_cache: dict[bytes, Address] = {}
        # An anonymous mapping: page aligned, and only the pages datagrams touch are ever committed.
        self._memory = mmap.mmap(-1, max_messages * slot_length)
        self._buffer = AtomicBuffer(self._memory)
        self._ptr = self._buffer.address(0)
        self._view = self._buffer.view
        # Per datagram: where it starts, its length, and which slot's source address it has. Without GRO
        # datagram i is slot i; with it a slot splits into at most slot_length / MIN_SEGMENT datagrams.
        # The table is an anonymous mapping too: only the entries a receive writes are ever committed.
        self.max_datagrams = max_messages * slot_length // MIN_SEGMENT if gro else max_messages
        self._table = mmap.mmap(-1, self.max_datagrams * 16)
        self._offsets = ffi.from_buffer("int64_t[]", self._table)
        self._lengths = ffi.cast("int32_t *", self._offsets + self.max_datagrams)
        self._sources = self._lengths + self.max_datagrams
        self._received = ffi.new("int32_t[1]")
        self._addrs = ffi.new("uint8_t[]", max_messages * ADDRESS_SLOT_LENGTH)
        self._addr_lengths = ffi.new("int32_t[]", max_messages)
        # memoryviews read faster from Python than indexing the cffi arrays
        table = memoryview(self._table)
        self._offsets_view = table[: self.max_datagrams * 8].cast("q")
        self._lengths_view = table[self.max_datagrams * 8 : self.max_datagrams * 12].cast("i")
        self._sources_view = table[self.max_datagrams * 12 :].cast("i")
        if not gro:
            for i in range(max_messages):
                self._offsets_view[i] = i * slot_length
                self._sources_view[i] = i
        self._addrs_view = memoryview(ffi.buffer(self._addrs))
        self._addr_lengths_view = memoryview(ffi.buffer(self._addr_lengths)).cast("i")

    def receive(self, fd: int) -> int:
        """Drain up to ``max_messages`` datagrams from non-blocking socket ``fd``; 0 when none is waiting.

        Earlier slots are overwritten. Raises OSError for a socket error (e.g. ECONNREFUSED after an ICMP
        port unreachable on a connected socket; the error is consumed, the next call reads on). With
        ``gro`` the result counts datagrams (coalesced buffers split)."""
        if self.gro:
            result = lib.amd_udp_recv_batch_gro(
                fd,
                self._ptr,
                self.slot_length,
                self.max_messages,
                self._offsets,
                self._lengths,
                self._sources,
                self.max_datagrams,
                self._addrs,
                self._addr_lengths,
                self._received,
            )
        else:
            result = lib.amd_udp_recv_batch(
                fd,
                self._ptr,
                self.slot_length,
                self.max_messages,
                self._lengths,
                self._addrs,
                self._addr_lengths,
            )
            self._received[0] = max(result, 0)
        if result < 0:
            self.count = 0
            _raise_errno(result)
        self.count = result
        return result

    def native_arrays(self) -> tuple[Any, Any, Any, Any, Any, Any, Any]:
        """(slots, offsets, lengths, sources, source addresses, their lengths, buffers received) as
        ``amd_udp_recv_batch_gro`` takes them, for the driver's native steady-state cycle (driver/fast_cycle.py),
        which receives into this batch; what it leaves is then read here as after :meth:`receive`."""
        return (
            self._ptr,
            self._offsets,
            self._lengths,
            self._sources,
            self._addrs,
            self._addr_lengths,
            self._received,
        )

    @property
    def drained(self) -> bool:
        """The last receive filled fewer than ``max_messages`` slots: the socket had nothing more waiting."""
        return self._received[0] < self.max_messages

    @property
    def capacity(self) -> int:
        """Alias of ``max_messages``: a receive that filled this many slots may have left more waiting
        (:attr:`drained` says so for either kind of batch)."""
        return self.max_messages

    # --- one datagram (valid for i < count, until the next receive) ---

    def length(self, i: int) -> int:
        """Bytes of datagram ``i`` in its slot (a truncated one: the bytes kept)."""
        length = self._lengths_view[i]
        return length if length >= 0 else -length

    def is_truncated(self, i: int) -> bool:
        return self._lengths_view[i] < 0

    def lengths(self) -> list[int]:
        """The lengths of the datagrams of the last receive (negative: truncated to that many bytes)."""
        return self._lengths_view[0 : self.count].tolist()

    def slot_offset(self, i: int) -> int:
        """Where datagram ``i`` starts in :attr:`slot_buffer` (32-byte aligned: a slot's start, or a multiple
        of the segment size, itself a multiple of 32 for our senders, past it)."""
        return self._offsets_view[i]

    def data(self, i: int) -> memoryview:
        """A zero-copy view of datagram ``i``; invalid after the next receive (copy what you keep)."""
        length = self._lengths_view[i]
        if length < 0:
            length = -length
        offset = self._offsets_view[i]
        return self._view[offset : offset + length]

    def address(self, i: int) -> Address:
        """The source of datagram ``i`` as (host, port). Decoded once per distinct source (a small cache
        keyed by the raw sockaddr); :meth:`raw_address` is cheaper still when bytes will do."""
        slot = self._sources_view[i]
        offset = slot * ADDRESS_SLOT_LENGTH
        raw = self._addrs_view[offset : offset + self._addr_lengths_view[slot]].tobytes()
        cache = self._address_cache
        address = cache.get(raw)
        if address is None:
            if len(cache) >= _ADDRESS_CACHE_LIMIT:
                cache.clear()
            address = cache[raw] = decode_sockaddr(raw)
        return address

    def raw_address(self, i: int) -> bytes:
        """The source of datagram ``i`` as its ``struct sockaddr`` bytes: hashable, and what :func:`sendto`
        and ``UdpTransport.send_to`` take to reply without decoding."""
        slot = self._sources_view[i]
        offset = slot * ADDRESS_SLOT_LENGTH
        return self._addrs_view[offset : offset + self._addr_lengths_view[slot]].tobytes()

    @property
    def lengths_pointer(self) -> Any:
        """The native ``int32_t[max_datagrams]`` of lengths (for native batch consumers)."""
        return self._lengths

    @property
    def offsets_pointer(self) -> Any:
        """The native ``int64_t[max_datagrams]`` of where each datagram starts in :attr:`slot_buffer`."""
        return self._offsets

    @property
    def slot_buffer(self) -> AtomicBuffer:
        """An AtomicBuffer over all slots (``max_messages * slot_length`` bytes), for native copies."""
        return self._buffer

    def close(self) -> None:
        """Release the slots; views from :meth:`data` must have been dropped (or released) first."""
        self.count = 0
        if self._buffer is not None:
            self._lengths_view.release()
            self._offsets_view.release()
            self._sources_view.release()
            self._offsets = self._lengths = self._sources = None
            self._addrs_view.release()
            self._addr_lengths_view.release()
            self._buffer.close()
            self._buffer = None  # type: ignore[assignment]
            self._view = None  # type: ignore[assignment]
            self._ptr = None
            self._memory.close()
            # the cffi buffer over the table holds an export until collected: drop it, then close
            with contextlib.suppress(BufferError):
                self._table.close()

    def __enter__(self) -> ReceiveBatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def sendto(fd: int, data: Any, address: bytes | None = None) -> int:
    """Send one datagram (MSG_DONTWAIT) to raw sockaddr ``address``, or to the connected peer when None.

    Returns the bytes sent, or -errno (-EAGAIN: the socket buffer is full). ``data`` is bytes (passed
    without a copy) or any buffer."""
    if type(data) is not bytes:
        data = ffi.from_buffer("uint8_t[]", data)
    if address is None:
        return lib.amd_udp_sendto(fd, data, len(data), ffi.NULL, 0)
    return lib.amd_udp_sendto(fd, data, len(data), address, len(address))


class SendBatch:
    """Up to ``max_messages`` (offset, length) datagrams of one AtomicBuffer (e.g. a term) for sendmmsg."""

    __slots__ = ("_lengths", "_offsets", "count", "max_messages")

    def __init__(self, max_messages: int = 64) -> None:
        if not 1 <= max_messages <= MAX_BATCH:
            raise ValueError(f"max_messages={max_messages}: expected 1..{MAX_BATCH}")
        self.max_messages = max_messages
        self.count = 0
        self._offsets = ffi.new("int64_t[]", max_messages)
        self._lengths = ffi.new("int32_t[]", max_messages)

    def clear(self) -> None:
        self.count = 0

    def add(self, offset: int, length: int) -> bool:
        """Queue ``length`` bytes at ``offset`` as the next datagram; False (nothing queued) when full."""
        count = self.count
        if count >= self.max_messages:
            return False
        self._offsets[count] = offset
        self._lengths[count] = length
        self.count = count + 1
        return True

    def send(self, fd: int, buffer: AtomicBuffer, address: bytes | None = None) -> int:
        """sendmmsg the queued datagrams from ``buffer`` (to ``address`` or the connected peer).

        Returns how many went (the first n; the rest did not), or -errno when not even the first did.
        Raises ValueError (nothing sent) when a queued datagram lies outside ``buffer``."""
        count = self.count
        if count == 0:
            return 0
        capacity = len(buffer)
        offsets, lengths = self._offsets, self._lengths
        for i in range(count):
            if offsets[i] < 0 or lengths[i] < 0 or offsets[i] + lengths[i] > capacity:
                raise ValueError(
                    f"datagram {i} ({offsets[i]}+{lengths[i]}) is outside a buffer of {capacity} bytes"
                )
        if address is None:
            return lib.amd_udp_send_batch(fd, buffer.address(0), offsets, lengths, count, ffi.NULL, 0)
        return lib.amd_udp_send_batch(fd, buffer.address(0), offsets, lengths, count, address, len(address))


class TermBurst:
    """The sender's burst in one native call: up to ``max_datagrams`` MTU-sized datagrams of a term's committed
    frames from ``term_offset``, scanned as ``scan_for_availability`` would one by one and sent with one
    sendmmsg (``amd_udp_send_term_burst``; native/README.md "Batched UDP I/O")."""

    __slots__ = ("_result",)

    def __init__(self) -> None:
        self._result = ffi.new("int64_t[3]")

    def send(
        self,
        fd: int,
        term_buffer: AtomicBuffer,
        term_offset: int,
        window: int,
        mtu_length: int,
        max_datagrams: int,
        address: bytes | None = None,
        gso: bool = False,
    ) -> tuple[int, int, int, int]:
        """(datagrams sent, bytes sent, sender position advance, datagrams scanned) for the burst to
        ``address`` (raw sockaddr) or the connected peer. Datagrams sent is -errno when not even the first
        went (then nothing moves); fewer sent than scanned is a short send. The scan stops at the term's
        end, at the first uncommitted frame, after a PAD frame, or when ``window`` bytes are used.

        ``gso``: the same datagrams, runs of equal length handed to the kernel as one UDP_SEGMENT send each
        (up to :data:`MAX_GSO_DATAGRAMS` per call); -errno in :data:`GSO_UNSUPPORTED_ERRNOS` means this
        socket cannot, and nothing went."""
        term_length = len(term_buffer)
        if (
            not 0 <= term_offset <= term_length
            or term_offset & (SLOT_ALIGNMENT - 1)
            or mtu_length < SLOT_ALIGNMENT
        ):
            raise ValueError(
                f"term offset {term_offset} / mtu {mtu_length} for a term of {term_length} bytes"
            )
        result = self._result
        addr, addr_length = (ffi.NULL, 0) if address is None else (address, len(address))
        send = lib.amd_udp_send_term_burst_gso if gso else lib.amd_udp_send_term_burst
        sent = send(
            fd,
            term_buffer.address(0),
            term_length,
            term_offset,
            window,
            mtu_length,
            max_datagrams,
            addr,
            addr_length,
            result,
        )
        return sent, result[0], result[1], result[2]
