"""``aeron:udp`` channels: addresses, multicast, control, tags and the canonical form, as Aeron 1.15.1.

Mirrors ``io.aeron.driver.media.UdpChannel`` with ``SocketAddressUtil``, ``InterfaceSearchAddress`` and
``NetworkUtil`` (docs/uri.md §2, docs/logbuffer.md §3). The canonical form names the endpoint and the log
files::

    UDP-<localAddrHex>-<localPort>-<remoteAddrHex>-<remotePort>[-<n>]

with addresses as their raw bytes in lower-case hex and ports in decimal; ``-<n>`` (a process-wide counter)
only when the URI has nothing but ``control-mode`` to tell it apart. Which local/remote pair is used:

- multicast endpoint: local = the address of the chosen interface, remote = the group (checked first, so a
  ``control`` next to a multicast endpoint is ignored, as in 1.15.1);
- explicit ``control``: local = control address, remote = endpoint (0.0.0.0:0 when absent);
- otherwise: local = ``interface`` address (0.0.0.0:0 by default), remote = endpoint (0.0.0.0:0 when absent).

This module is sans-IO (tests/test_imports.py forbids ``socket`` under ``driver/protocol``): name resolution
and the list of local interfaces are arguments of :meth:`UdpChannel.parse`. Without them only numeric
addresses resolve (:func:`resolve_numeric`) and a channel that needs the interface list (multicast, or a
non-wildcard ``interface=``) raises TypeError; the driver passes a ``getaddrinfo`` resolver preferring IPv4
and an interface lister from the media layer.

Numbers are read as 1.15.1 reads them (driver/util/java_numbers.py): ports and the ``interface`` prefix
length with ``parseIntAscii`` (wrapping at 32 bits, so ``localhost:4295007295`` is port 40127), ``ttl`` with
``Integer.parseInt`` and the channel tag with ``Long.parseLong``. A prefix length outside 0..32 (0..128)
builds its mask as Java's shifts do (``/33`` masks like ``/1``). ``control-mode`` may be anything: only
``manual`` and ``dynamic`` (or none, with ``control``) select a multi-destination mode, as in 1.15.1.

Differences from 1.15.1, on things Python's stdlib cannot see:
- the IPv6 scope of an endpoint (``[fe80::1%eth0]:40123``) is kept in the host string so sockets can use it;
  Java drops it. The canonical form is the same either way (raw address bytes);
- candidate interfaces are ordered as Java does (non-loopback first, then longer prefix first) and ties keep
  the order of the given list, so the lister decides among equally good interfaces (Java 11 on Linux lists
  interfaces, and the IPv6 addresses of each, in reverse discovery order).
"""

from __future__ import annotations

import ipaddress
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from driver.protocol.channel_uri import (
    ENDPOINT_PARAM_NAME,
    INTERFACE_PARAM_NAME,
    MDC_CONTROL_MODE_DYNAMIC,
    MDC_CONTROL_MODE_MANUAL,
    MDC_CONTROL_MODE_PARAM_NAME,
    MDC_CONTROL_PARAM_NAME,
    RECEIVER_WINDOW_LENGTH_PARAM_NAME,
    SOCKET_RCVBUF_PARAM_NAME,
    SOCKET_SNDBUF_PARAM_NAME,
    TAGS_PARAM_NAME,
    TTL_PARAM_NAME,
    UDP_MEDIA,
    ChannelUri,
    InvalidChannelError,
)
from driver.protocol.control_protocol import ErrorCode
from driver.util.bit_util import INT32_MAX
from driver.util.java_numbers import (
    NumberFormatError,
    parse_int_ascii,
    parse_java_int,
    parse_java_long,
    parse_size,
)

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Address = tuple[str, int]
"""(host, port) as sockets take it: host is a numeric address; IPv6 may carry ``%scope``."""

_IPV4_ANY = ipaddress.IPv4Address(0)


class AddressError(ValueError):
    """An address, interface or UDP parameter that breaks a rule; ``UdpChannel.parse`` turns it into an
    InvalidChannelError carrying the URI."""


# --- local interfaces ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InterfaceAddress:
    address: IpAddress
    prefix_length: int


@dataclass(frozen=True, slots=True)
class NetworkInterface:
    """What ``java.net.NetworkInterface`` tells ``UdpChannel`` about a local interface."""

    name: str
    index: int
    addresses: tuple[InterfaceAddress, ...]
    is_loopback: bool = False
    supports_multicast: bool = False


Resolver = Callable[[str], IpAddress]
"""Host name or literal → address; raises OSError or ValueError when it cannot resolve."""
InterfaceLister = Callable[[], Sequence[NetworkInterface]]

LOOPBACK_ONLY = (
    NetworkInterface(
        "lo",
        1,
        (
            InterfaceAddress(ipaddress.IPv4Address("127.0.0.1"), 8),
            InterfaceAddress(ipaddress.IPv6Address("::1"), 128),
        ),
        is_loopback=True,
    ),
)
"""A minimal interface table (Linux ``lo``), e.g. for tests."""


def resolve_numeric(host: str) -> IpAddress:
    """The default resolver: numeric addresses only (IPv6 may carry ``%scope``), ``""`` = 127.0.0.1 as
    ``InetAddress.getByName("")``. Host names need a real resolver (``getaddrinfo``, from the media layer)."""
    if host == "":
        return ipaddress.IPv4Address("127.0.0.1")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        raise ValueError("not a numeric address, and no name resolver was given") from None


# --- address grammar (SocketAddressUtil, InterfaceSearchAddress) -----------------------------------------


def _ascii_digits(text: str) -> bool:
    return text != "" and all("0" <= c <= "9" for c in text)


def _port(name: str, value: str, text: str) -> int:
    """``parseIntAscii`` then ``InetSocketAddress``'s range check."""
    port = _ascii_int(name, value, text)
    if not 0 <= port <= 65535:
        wrapped = f" ({port} as a 32-bit int)" if str(port) != text else ""
        raise AddressError(f"{name}={value}: port {text}{wrapped} is out of range (0..65535)")
    return port


def _ascii_int(name: str, value: str, text: str) -> int:
    try:
        return parse_int_ascii(name, value, text)
    except NumberFormatError as ex:
        raise AddressError(str(ex)) from None


_IPV6_HOST_CHARS = frozenset("0123456789abcdefABCDEF:")
_IPV6_SCOPE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.~-")


def parse_socket_address(name: str, value: str) -> tuple[str, int]:
    """``SocketAddressUtil.parse``: ``host:port`` or ``[ipv6[%scope]]:port``; returns (host, port) unresolved.

    As in Java the ``host:port`` form is tried first (host = everything before the first ``:``, port = digits
    only); when the rest has another ``:`` or a non-digit the bracketed IPv6 form is tried.
    """
    if value == "":
        raise AddressError(f"{name}= is empty: expected host:port or [ipv6]:port")
    separator = value.find(":")
    if separator < 0 or separator == len(value) - 1:
        raise AddressError(f"{name}={value}: the port is missing: expected host:port or [ipv6]:port")
    if _ascii_digits(value[separator + 1 :]):
        return value[:separator], _port(name, value, value[separator + 1 :])

    invalid = AddressError(
        f"{name}={value}: invalid address format: expected host:port or [ipv6%scope]:port "
        "(port in decimal digits)"
    )
    if not value.startswith("["):
        raise invalid
    close = value.find("]")
    if close < 0:
        raise invalid
    inside = value[1:close]
    host, percent, scope = inside.partition("%")
    if not set(host) <= _IPV6_HOST_CHARS or (percent and not set(scope) <= _IPV6_SCOPE_CHARS):
        raise invalid
    rest = value[close + 1 :]
    if rest in ("", ":"):
        raise AddressError(f"{name}={value}: the port is missing: expected [ipv6]:port")
    if not rest.startswith(":") or not _ascii_digits(rest[1:]):
        raise invalid
    return inside, _port(name, value, rest[1:])


@dataclass(frozen=True, slots=True)
class InterfaceSearchAddress:
    """``interface=addr[:port][/prefix]``: which local interface to use and the port to bind."""

    address: IpAddress
    port: int
    prefix_length: int

    @property
    def is_wildcard(self) -> bool:
        return self.address.is_unspecified


WILDCARD_SEARCH = InterfaceSearchAddress(_IPV4_ANY, 0, 0)


def parse_interface(value: str, resolve: Resolver = resolve_numeric) -> InterfaceSearchAddress:
    """``InterfaceSearchAddress.parse`` (the address may be a host name or a bracketed IPv6 literal)."""
    name = INTERFACE_PARAM_NAME
    if value == "":
        raise AddressError(f"{name}= is empty: expected addr[:port][/prefix]")
    slash, colon, bracket = value.rfind("/"), value.rfind(":"), value.rfind("]")
    address_end = slash if slash >= 0 else len(value)
    if colon >= 0 and colon > bracket:
        address_end = colon
    host = value[:address_end]
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        if ":" not in host:
            raise AddressError(f"{name}={value}: only an IPv6 address may be in brackets")
    address = _resolve(resolve, host, f"{name}={value}")

    port = 0
    if colon >= 0 and bracket <= colon:
        if colon == len(value) - 1:
            raise AddressError(f"{name}={value}: the port after ':' is missing")
        port = _port(name, value, value[colon + 1 : slash if slash > colon else len(value)])

    prefix_length = address.max_prefixlen
    if slash >= 0:
        if slash == len(value) - 1:
            raise AddressError(f"{name}={value}: the subnet prefix length after '/' is missing")
        prefix_length = _ascii_int(name, value, value[slash + 1 :])
    return InterfaceSearchAddress(address, port, prefix_length)


def _resolve(resolve: Resolver, host: str, what: str) -> IpAddress:
    try:
        return resolve(host)
    except (OSError, ValueError) as ex:
        detail = f" ({ex})" if str(ex) else ""
        raise AddressError(f"{what}: could not resolve host {host!r}{detail}") from None


def _java_mask(prefix_length: int, bits: int) -> int:
    """``NetworkUtil.prefixLengthTo...Mask``: ``-(1 << bits - prefix)`` with Java's shift (distance mod bits)."""
    return 0 if prefix_length == 0 else -(1 << ((bits - prefix_length) % bits)) & ((1 << bits) - 1)


def _matches(candidate: IpAddress, expected: IpAddress, prefix_length: int) -> bool:
    """``NetworkUtil.isMatchWithPrefix``: IPv4 with one 32-bit mask, IPv6 with two 64-bit halves."""
    if candidate.version != expected.version:
        return False
    if candidate.version == 4:
        mask = _java_mask(prefix_length, 32)
    else:
        upper = _java_mask(min(prefix_length, 64), 64)
        lower = _java_mask(max(prefix_length - 64, 0), 64)
        mask = upper << 64 | lower
    return int(candidate) & mask == int(expected) & mask


def _address_on(interface: NetworkInterface, search: InterfaceSearchAddress) -> InterfaceAddress | None:
    for candidate in interface.addresses:
        if _matches(candidate.address, search.address, search.prefix_length):
            return candidate
    return None


def find_interface(
    search: InterfaceSearchAddress, interfaces: Sequence[NetworkInterface], what: str = INTERFACE_PARAM_NAME
) -> tuple[NetworkInterface, IpAddress]:
    """``NetworkUtil.filterBySubnet`` + ``UdpChannel.findInterface``: the interface and its matching address.

    Candidates with an address in the search subnet are ordered non-loopback first, then longer prefix
    first (stable otherwise); the first that supports multicast or is loopback wins.
    """
    candidates = []
    for interface in interfaces:
        found = _address_on(interface, search)
        if found is not None:
            candidates.append((interface.is_loopback, -found.prefix_length, interface, found.address))
    candidates.sort(key=lambda c: (c[0], c[1]))
    for _, _, interface, address in candidates:
        if interface.supports_multicast or interface.is_loopback:
            return interface, address
    seen = ", ".join(f"{c[2].name} ({c[3]})" for c in candidates) or "none"
    raise AddressError(
        f"{what}: no local interface that supports multicast or is loopback has an address in "
        f"{search.address}/{search.prefix_length} (candidates: {seen})"
    )


# --- the channel -----------------------------------------------------------------------------------------

_unique_canonical_form_values = itertools.count()


def next_unique_canonical_form_value() -> int:
    """The process-wide counter behind the ``-<n>`` canonical form suffix (0, 1, 2, ...)."""
    return next(_unique_canonical_form_values)


def canonicalise(local: IpAddress, local_port: int, remote: IpAddress, remote_port: int) -> str:
    """``UdpChannel.canonicalise``: ``UDP-<localHex>-<localPort>-<remoteHex>-<remotePort>``."""
    return f"UDP-{local.packed.hex()}-{local_port}-{remote.packed.hex()}-{remote_port}"


def parse_buffer_length(uri: ChannelUri, name: str) -> int:
    """A per-channel buffer or window length (``so-sndbuf``, ``so-rcvbuf``, ``rcv-wnd``): a size as
    ``SystemUtil.parseSize`` reads it, 0..2^31-1; 0 when absent, meaning the driver setting."""
    value = uri.params.get(name)
    if value is None:
        return 0
    try:
        size = parse_size(name, value)
    except NumberFormatError as ex:
        raise AddressError(str(ex)) from None
    if not 0 <= size <= INT32_MAX:
        raise AddressError(f"{name}={value}: the length must be 0..{INT32_MAX}")
    return size


def _is_numeric(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host == ""  # the loopback address, no lookup
    return True


def _host(address: IpAddress) -> str:
    return str(address)


@dataclass(frozen=True, slots=True, eq=False)
class UdpChannel:
    """A parsed ``aeron:udp`` channel. Equal (and hashed) by canonical form, as in Java."""

    channel_uri: ChannelUri
    original_uri_string: str
    canonical_form: str
    remote_data: Address
    local_data: Address
    remote_control: Address
    local_control: Address
    is_multicast: bool
    has_explicit_control: bool
    tag: int | None
    """The channel tag (first value of ``tags``), or None."""
    multicast_ttl: int
    """``ttl`` (or the driver default) for a multicast channel; 0 for unicast, as in 1.15.1."""
    local_interface: NetworkInterface | None
    """The interface chosen for multicast (or for a unicast ``interface=`` that is not a wildcard)."""
    ip_version: int
    """4 or 6: the family of the endpoint address (``protocolFamily``)."""
    socket_sndbuf_length: int = 0
    """``so-sndbuf``: SO_SNDBUF for this channel's endpoint; 0 when not given (the driver setting applies)."""
    socket_rcvbuf_length: int = 0
    """``so-rcvbuf``: SO_RCVBUF for this channel's endpoint; 0 when not given."""
    receiver_window_length: int = 0
    """``rcv-wnd``: the receiver window of this endpoint's images; 0 when not given."""
    endpoint_host_name: str | None = None
    """The ``endpoint`` host when it is a name, not a numeric address: resolved again when the peer goes quiet."""

    @classmethod
    def parse(
        cls,
        uri_text: str,
        *,
        resolve: Resolver = resolve_numeric,
        interfaces: InterfaceLister | None = None,
        next_unique_value: Callable[[], int] = next_unique_canonical_form_value,
        default_multicast_ttl: int = 0,
    ) -> UdpChannel:
        """Parse and resolve; any problem raises InvalidChannelError (error code INVALID_CHANNEL).

        ``resolve`` turns host names into addresses (default: numeric addresses only); ``interfaces`` lists
        the local interfaces and is only called when a multicast endpoint or a non-wildcard ``interface``
        needs it (TypeError when that happens without one: a bug of the caller, not of the client);
        ``next_unique_value`` only for a URI distinguished by nothing but ``control-mode``;
        ``default_multicast_ttl`` is ``aeron.socket.multicast.ttl`` (``ttl`` is read for multicast only).
        """
        uri = ChannelUri.parse(uri_text)
        try:
            return cls._parse(uri, resolve, interfaces, next_unique_value, default_multicast_ttl)
        except AddressError as ex:
            raise InvalidChannelError(uri_text, str(ex)) from None

    @classmethod
    def _parse(
        cls,
        uri: ChannelUri,
        resolve: Resolver,
        interfaces: InterfaceLister | None,
        next_unique_value: Callable[[], int],
        default_multicast_ttl: int,
    ) -> UdpChannel:
        if uri.media != UDP_MEDIA:
            raise AddressError(
                f"media {uri.media!r} is not a UDP channel: use aeron:udp?endpoint=host:port (or aeron:ipc "
                "for IPC, which is not parsed as UDP)"
            )
        params = uri.params
        endpoint_text = params.get(ENDPOINT_PARAM_NAME)
        control_text = params.get(MDC_CONTROL_PARAM_NAME)
        endpoint = None if endpoint_text is None else parse_socket_address(ENDPOINT_PARAM_NAME, endpoint_text)
        control = None if control_text is None else parse_socket_address(MDC_CONTROL_PARAM_NAME, control_text)
        tag_text = uri.channel_tag
        control_mode = params.get(MDC_CONTROL_MODE_PARAM_NAME)

        has_no_distinguishing_characteristic = endpoint is None and control is None and tag_text is None
        if has_no_distinguishing_characteristic and control_mode is None:
            raise AddressError(
                "a UDP channel must have at least one of endpoint=host:port, control=host:port, "
                "tags=<channel tag> or control-mode=manual|dynamic"
            )

        endpoint_address: IpAddress = _IPV4_ANY  # no endpoint (MDC, tag, control-mode): wildcard 0.0.0.0:0
        endpoint_port = 0
        if endpoint is not None:
            endpoint_address = _resolve(resolve, endpoint[0], f"endpoint={endpoint_text}")
            endpoint_port = endpoint[1]
        explicit_control = None
        if control is not None:
            explicit_control = (_resolve(resolve, control[0], f"control={control_text}"), control[1])

        tag = None
        if tag_text is not None:
            try:
                tag = parse_java_long(TAGS_PARAM_NAME, tag_text)
            except NumberFormatError:
                raise AddressError(
                    f"{TAGS_PARAM_NAME}={params[TAGS_PARAM_NAME]}: channel tag {tag_text!r} (the 1st tag) "
                    "is not a 64-bit integer"
                ) from None

        local_interface = None
        multicast_ttl = 0
        has_explicit_control = False
        suffix = ""
        if endpoint_address.is_multicast:
            packed = bytearray(endpoint_address.packed)
            if packed[-1] % 2 == 0:
                raise AddressError(
                    f"endpoint={endpoint_text}: a multicast data address must be odd (its last byte): the "
                    "control address is the next one up"
                )
            packed[-1] = (packed[-1] + 1) & 0xFF
            remote_control_address = ipaddress.ip_address(bytes(packed))
            search = _search_address(params, resolve)
            local_interface, local_address = find_interface(
                search, _list(interfaces), _interface_what(params)
            )
            local_port = search.port
            multicast_ttl = default_multicast_ttl
            ttl_text = params.get(TTL_PARAM_NAME)
            if ttl_text is not None:
                try:
                    multicast_ttl = parse_java_int(TTL_PARAM_NAME, ttl_text)
                except NumberFormatError as ex:
                    raise AddressError(str(ex)) from None
            local_data = local_control = (_host(local_address), local_port)
            remote_data = (_host(endpoint_address), endpoint_port)
            remote_control = (_host(remote_control_address), endpoint_port)
            is_multicast = True
        else:
            is_multicast = False
            if explicit_control is not None:
                has_explicit_control = True
                local_address, local_port = explicit_control
            else:
                search = _search_address(params, resolve)
                if search.is_wildcard:
                    local_address, local_port = search.address, search.port
                else:
                    local_interface, local_address = find_interface(
                        search, _list(interfaces), _interface_what(params)
                    )
                    local_port = search.port
                if has_no_distinguishing_characteristic:
                    suffix = f"-{next_unique_value()}"
            local_data = local_control = (_host(local_address), local_port)
            remote_data = remote_control = (_host(endpoint_address), endpoint_port)

        return cls(
            channel_uri=uri,
            original_uri_string=uri.original,
            canonical_form=canonicalise(local_address, local_port, endpoint_address, endpoint_port) + suffix,
            remote_data=remote_data,
            local_data=local_data,
            remote_control=remote_control,
            local_control=local_control,
            is_multicast=is_multicast,
            has_explicit_control=has_explicit_control,
            tag=tag,
            multicast_ttl=multicast_ttl,
            local_interface=local_interface,
            ip_version=endpoint_address.version,
            socket_sndbuf_length=parse_buffer_length(uri, SOCKET_SNDBUF_PARAM_NAME),
            socket_rcvbuf_length=parse_buffer_length(uri, SOCKET_RCVBUF_PARAM_NAME),
            receiver_window_length=parse_buffer_length(uri, RECEIVER_WINDOW_LENGTH_PARAM_NAME),
            endpoint_host_name=None if endpoint is None or _is_numeric(endpoint[0]) else endpoint[0],
        )

    # --- queries ---

    @property
    def has_tag(self) -> bool:
        return self.tag is not None

    @property
    def control_mode(self) -> str | None:
        return self.channel_uri.get(MDC_CONTROL_MODE_PARAM_NAME)

    @property
    def is_manual_control_mode(self) -> bool:
        """``control-mode=manual``: destinations come from ADD_DESTINATION (pub) / ADD_RCV_DESTINATION (sub)."""
        return self.control_mode == MDC_CONTROL_MODE_MANUAL

    @property
    def is_dynamic_control_mode(self) -> bool:
        """A publication with explicit control that learns destinations from status messages: ``control-mode``
        is ``dynamic`` or absent (SendChannelEndpoint of 1.15.1)."""
        return self.has_explicit_control and self.control_mode in (None, MDC_CONTROL_MODE_DYNAMIC)

    def does_tag_match(self, other: UdpChannel) -> bool:
        """``UdpChannel.doesTagMatch``: ``other`` (a new request) reuses this endpoint by channel tag.

        Raises InvalidChannelError when the tags match but ``other`` also sets endpoint or control addresses.
        """
        if self.tag is None or other.tag is None or self.tag != other.tag:
            return False
        if _is_wildcard(other.remote_data) and _is_wildcard(other.local_data):
            return True
        raise InvalidChannelError(
            other.original_uri_string,
            f"tags={other.channel_uri.get(TAGS_PARAM_NAME)} matches an existing channel by tag, so it must not "
            "also set an endpoint, control or interface address",
            error_code=ErrorCode.GENERIC_ERROR,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UdpChannel) and other.canonical_form == self.canonical_form

    def __hash__(self) -> int:
        return hash(self.canonical_form)

    def __str__(self) -> str:
        return self.canonical_form


def _is_wildcard(address: Address) -> bool:
    return address[1] == 0 and ipaddress.ip_address(address[0]).is_unspecified


def _list(interfaces: InterfaceLister | None) -> Sequence[NetworkInterface]:
    if interfaces is None:
        raise TypeError("UdpChannel.parse: this channel needs the local interfaces: pass interfaces=<lister>")
    return interfaces()


def _interface_what(params: dict[str, str]) -> str:
    value = params.get(INTERFACE_PARAM_NAME)
    return "multicast interface (default 0.0.0.0/0)" if value is None else f"{INTERFACE_PARAM_NAME}={value}"


def _search_address(params: dict[str, str], resolve: Resolver) -> InterfaceSearchAddress:
    value = params.get(INTERFACE_PARAM_NAME)
    return WILDCARD_SEARCH if value is None else parse_interface(value, resolve)


def destination_address(uri: ChannelUri | str, *, resolve: Resolver = resolve_numeric) -> Address:
    """``UdpChannel.destinationAddress``: the resolved ``endpoint`` of an ADD/REMOVE_DESTINATION channel."""
    channel = uri if isinstance(uri, ChannelUri) else ChannelUri.parse(uri)
    text = channel.original or str(channel)
    try:
        if channel.media != UDP_MEDIA:
            raise AddressError(
                f"media {channel.media!r} is not a UDP channel: a destination is aeron:udp?endpoint=host:port"
            )
        value = channel.get(ENDPOINT_PARAM_NAME)
        if value is None:
            raise AddressError("a destination needs endpoint=host:port")
        host, port = parse_socket_address(ENDPOINT_PARAM_NAME, value)
        return _host(_resolve(resolve, host, f"endpoint={value}")), port
    except AddressError as ex:
        raise InvalidChannelError(text, str(ex)) from None
