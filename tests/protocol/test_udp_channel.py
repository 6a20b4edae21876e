"""UDP channels: address grammar, resolution, multicast, interfaces and canonical forms (docs/uri.md §2,
docs/logbuffer.md §3).

Values marked "jar" were checked against io.aeron.driver.media.UdpChannel.parse of the real
aeron-all-1.15.1.jar, run in a container whose interfaces were exactly ``INTERFACES`` below (lo: 127.0.0.1/8,
::1/128; eth0: 192.0.2.2/24, fe80::fc:ff:fe00:1/64, fd00::2/64, multicast). The tests use that table and a
fake resolver so they do not depend on the machine they run on.
"""

from __future__ import annotations

import ipaddress
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from driver.protocol.channel_uri import InvalidChannelError
from driver.protocol.control_protocol import ErrorCode
from driver.protocol.udp_channel import (
    LOOPBACK_ONLY,
    AddressError,
    InterfaceAddress,
    InterfaceSearchAddress,
    NetworkInterface,
    UdpChannel,
    canonicalise,
    destination_address,
    find_interface,
    parse_interface,
    parse_socket_address,
    resolve_numeric,
)

ip = ipaddress.ip_address

LO = NetworkInterface(
    "lo", 1, (InterfaceAddress(ip("127.0.0.1"), 8), InterfaceAddress(ip("::1"), 128)), is_loopback=True
)
ETH0 = NetworkInterface(
    "eth0",
    4,
    (
        InterfaceAddress(ip("192.0.2.2"), 24),
        InterfaceAddress(ip("fe80::fc:ff:fe00:1%eth0"), 64),
        InterfaceAddress(ip("fd00::2"), 64),
    ),
    supports_multicast=True,
)
INTERFACES = (ETH0, LO)
HOSTS = {"localhost": "127.0.0.1", "": "127.0.0.1", "host-a": "192.0.2.10", "v6only": "fd00::10"}


def fake_resolve(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if host in HOSTS:
        return ip(HOSTS[host])
    try:
        return ip(host)
    except ValueError:
        raise OSError(f"unknown host {host}") from None


def parse(uri: str, **kwargs: Any) -> UdpChannel:
    options: dict[str, Any] = dict(resolve=fake_resolve, interfaces=lambda: INTERFACES)
    return UdpChannel.parse(uri, **(options | kwargs))


def parse_error(uri: str, **kwargs: Any) -> str:
    with pytest.raises(InvalidChannelError) as info:
        parse(uri, **kwargs)
    assert info.value.uri == uri
    assert info.value.error_code == ErrorCode.INVALID_CHANNEL
    assert str(info.value).startswith(f"{uri}: ")
    return info.value.reason


# --- canonical forms -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "canonical"),
    [  # all jar
        ("aeron:udp?endpoint=localhost:40456", "UDP-00000000-0-7f000001-40456"),
        ("aeron:udp?endpoint=:40123", "UDP-00000000-0-7f000001-40123"),  # empty host = loopback
        ("aeron:udp?endpoint=localhost:040123", "UDP-00000000-0-7f000001-40123"),
        ("aeron:udp?endpoint=localhost:65535", "UDP-00000000-0-7f000001-65535"),
        ("aeron:udp?endpoint=localhost:0", "UDP-00000000-0-7f000001-0"),
        ("aeron:udp?endpoint=0.0.0.0:1", "UDP-00000000-0-00000000-1"),
        ("aeron-spy:aeron:udp?endpoint=localhost:40456", "UDP-00000000-0-7f000001-40456"),
        ("aeron:udp?endpoint=[::1]:40123", "UDP-00000000-0-00000000000000000000000000000001-40123"),
        ("aeron:udp?endpoint=[fe80::1%eth0]:40123", "UDP-00000000-0-fe800000000000000000000000000001-40123"),
        ("aeron:udp?endpoint=localhost:40456|interface=127.0.0.0:5000/8", "UDP-7f000001-5000-7f000001-40456"),
        ("aeron:udp?endpoint=localhost:40456|interface=0.0.0.0:5000", "UDP-00000000-5000-7f000001-40456"),
        ("aeron:udp?endpoint=localhost:1|interface=192.0.2.77/24", "UDP-c0000202-0-7f000001-1"),
        (
            "aeron:udp?endpoint=[::1]:40456|interface=[::]:5000",
            "UDP-00000000000000000000000000000000-5000-00000000000000000000000000000001-40456",
        ),
        (
            "aeron:udp?endpoint=localhost:1|interface=[::]/0",
            "UDP-00000000000000000000000000000000-0-7f000001-1",
        ),
        ("aeron:udp?endpoint=localhost:40456|control=localhost:40457", "UDP-7f000001-40457-7f000001-40456"),
        ("aeron:udp?control=localhost:40457", "UDP-7f000001-40457-00000000-0"),
        ("aeron:udp?control=localhost:40457|control-mode=manual", "UDP-7f000001-40457-00000000-0"),
        (
            "aeron:udp?endpoint=localhost:1|control=[::1]:5",
            "UDP-00000000000000000000000000000001-5-7f000001-1",
        ),
        ("aeron:udp?tags=1001", "UDP-00000000-0-00000000-0"),
        ("aeron:udp?tags=1001,2", "UDP-00000000-0-00000000-0"),
        ("aeron:udp?endpoint=224.0.1.1:40456", "UDP-c0000202-0-e0000101-40456"),
        ("aeron:udp?endpoint=224.0.1.1:40456|interface=127.0.0.1", "UDP-7f000001-0-e0000101-40456"),
        ("aeron:udp?endpoint=224.0.1.1:40456|interface=localhost", "UDP-7f000001-0-e0000101-40456"),
        ("aeron:udp?endpoint=224.0.1.1:40456|interface=192.0.2.0/24", "UDP-c0000202-0-e0000101-40456"),
        ("aeron:udp?endpoint=224.0.1.1:40456|interface=127.0.0.1/0", "UDP-c0000202-0-e0000101-40456"),
        ("aeron:udp?endpoint=224.0.1.1:40456|interface=0.0.0.0/0", "UDP-c0000202-0-e0000101-40456"),
        ("aeron:udp?endpoint=224.0.1.1:1|control=localhost:5", "UDP-c0000202-0-e0000101-1"),  # multicast wins
        ("aeron:udp?endpoint=239.255.255.255:1", "UDP-c0000202-0-efffffff-1"),
        # an IPv6 group with the default (IPv4 wildcard) interface gets an IPv4 local address
        ("aeron:udp?endpoint=[ff02::1]:40123", "UDP-c0000202-0-ff020000000000000000000000000001-40123"),
        (
            "aeron:udp?endpoint=[ff02::1]:40123|interface=[::1]:5000/128",
            "UDP-00000000000000000000000000000001-5000-ff020000000000000000000000000001-40123",
        ),
        (
            "aeron:udp?endpoint=[ff02::1]:40123|interface=[::]/0",
            "UDP-fe8000000000000000fc00fffe000001-0-ff020000000000000000000000000001-40123",
        ),
        (
            "aeron:udp?endpoint=[ff02::1]:40123|interface=[fd00::]/64",
            "UDP-fd000000000000000000000000000002-0-ff020000000000000000000000000001-40123",
        ),
    ],
)
def test_canonical_form(uri: str, canonical: str) -> None:
    channel = parse(uri)
    assert channel.canonical_form == canonical
    assert str(channel) == canonical
    assert channel.original_uri_string == uri


def test_unicast_addresses() -> None:  # jar: ld=0.0.0.0:0 rd=127.0.0.1:40456 lc=ld rc=rd
    channel = parse("aeron:udp?endpoint=localhost:40456")
    assert channel.remote_data == channel.remote_control == ("127.0.0.1", 40456)
    assert channel.local_data == channel.local_control == ("0.0.0.0", 0)
    assert not channel.is_multicast and not channel.has_explicit_control
    assert channel.local_interface is None
    assert channel.ip_version == 4
    assert channel.multicast_ttl == 0
    assert channel.tag is None and not channel.has_tag
    assert channel.channel_uri.get("endpoint") == "localhost:40456"


def test_unicast_with_interface_uses_the_interface_address() -> None:  # jar: ld=192.0.2.2:0
    channel = parse("aeron:udp?endpoint=localhost:1|interface=192.0.2.77/24")
    assert channel.local_data == ("192.0.2.2", 0)
    assert channel.local_interface == ETH0


def test_multicast_addresses() -> None:  # jar: ld=lc=192.0.2.2:0 rd=224.0.1.1 rc=224.0.1.2
    channel = parse("aeron:udp?endpoint=224.0.1.1:40456|ttl=8")
    assert channel.is_multicast and not channel.has_explicit_control
    assert channel.remote_data == ("224.0.1.1", 40456)
    assert channel.remote_control == ("224.0.1.2", 40456)
    assert channel.local_data == channel.local_control == ("192.0.2.2", 0)
    assert channel.local_interface == ETH0
    assert channel.multicast_ttl == 8


def test_multicast_control_address_wraps_the_last_byte() -> None:  # jar: rc=239.255.255.0
    assert parse("aeron:udp?endpoint=239.255.255.255:1").remote_control == ("239.255.255.0", 1)
    assert parse("aeron:udp?endpoint=[ff02::1]:40123").remote_control == ("ff02::2", 40123)


def test_multicast_ttl() -> None:
    assert parse("aeron:udp?endpoint=224.0.1.1:1").multicast_ttl == 0
    assert parse("aeron:udp?endpoint=224.0.1.1:1", default_multicast_ttl=4).multicast_ttl == 4
    assert parse("aeron:udp?endpoint=224.0.1.1:1|ttl=300").multicast_ttl == 300  # jar: not range checked
    assert parse("aeron:udp?endpoint=224.0.1.1:1|ttl=-1").multicast_ttl == -1  # jar
    assert parse_error("aeron:udp?endpoint=224.0.1.1:1|ttl=abc") == (  # jar
        "ttl=abc is not a 32-bit integer (an optional sign and decimal digits)"
    )
    assert parse("aeron:udp?endpoint=224.0.1.1:1|ttl=+5").multicast_ttl == 5  # jar
    # jar: ttl is only read for multicast, so a bad one on unicast is ignored
    assert parse("aeron:udp?endpoint=localhost:1|ttl=abc", default_multicast_ttl=4).multicast_ttl == 0


def test_ipv6_scope_is_kept_for_sockets_but_not_in_the_canonical_form() -> None:
    channel = parse("aeron:udp?endpoint=[fe80::1%eth0]:40123")
    assert channel.remote_data == ("fe80::1%eth0", 40123)
    assert channel.ip_version == 6
    multicast = parse("aeron:udp?endpoint=[ff02::1]:40123|interface=[::]/0")
    assert multicast.local_data == ("fe80::fc:ff:fe00:1%eth0", 0)


def test_explicit_control() -> None:  # jar: ec=true ld=lc=127.0.0.1:40457 rd=rc=127.0.0.1:40456
    channel = parse("aeron:udp?endpoint=localhost:40456|control=localhost:40457")
    assert channel.has_explicit_control and not channel.is_multicast
    assert channel.local_data == channel.local_control == ("127.0.0.1", 40457)
    assert channel.remote_data == channel.remote_control == ("127.0.0.1", 40456)
    assert channel.is_dynamic_control_mode and not channel.is_manual_control_mode
    manual = parse("aeron:udp?control=localhost:40457|control-mode=manual")
    assert manual.is_manual_control_mode and not manual.is_dynamic_control_mode
    assert manual.remote_data == ("0.0.0.0", 0)
    assert parse("aeron:udp?control=localhost:1|control-mode=dynamic").is_dynamic_control_mode
    # dynamic MDC needs explicit control; a subscription's control-mode=manual is still "manual"
    assert not parse("aeron:udp?endpoint=localhost:1|control-mode=dynamic").is_dynamic_control_mode
    assert parse("aeron:udp?endpoint=localhost:1|control-mode=manual").is_manual_control_mode


def test_control_mode_only_gets_a_unique_suffix() -> None:  # jar: -0 then -1 (a process-wide counter)
    counter = itertools.count()
    first = parse("aeron:udp?control-mode=manual", next_unique_value=lambda: next(counter))
    second = parse("aeron:udp?control-mode=dynamic", next_unique_value=lambda: next(counter))
    assert first.canonical_form == "UDP-00000000-0-00000000-0-0"
    assert second.canonical_form == "UDP-00000000-0-00000000-0-1"
    assert first != second
    # the counter is only used when nothing else tells the channel apart
    unused: Callable[[], int] = lambda: pytest.fail("counter used")  # noqa: E731
    parse("aeron:udp?tags=5|control-mode=manual", next_unique_value=unused)
    parse("aeron:udp?endpoint=localhost:1|control-mode=manual", next_unique_value=unused)


def test_default_unique_counter_increases() -> None:
    a = UdpChannel.parse("aeron:udp?control-mode=manual")
    b = UdpChannel.parse("aeron:udp?control-mode=manual")
    assert int(b.canonical_form.rsplit("-", 1)[1]) > int(a.canonical_form.rsplit("-", 1)[1])


def test_tags() -> None:
    assert parse("aeron:udp?tags=1001").tag == 1001  # jar
    assert parse("aeron:udp?tags=1001,2").tag == 1001  # jar
    assert parse("aeron:udp?tags=-1").tag == -1  # jar: accepted for a channel tag
    assert parse("aeron:udp?tags=+5").tag == 5  # jar
    assert parse("aeron:udp?tags=5,").tag == 5  # jar
    assert parse("aeron:udp?tags=1001").has_tag
    assert (
        parse_error("aeron:udp?tags=x") == "tags=x: channel tag 'x' (the 1st tag) is not a 64-bit integer"
    )  # jar
    assert (
        parse_error("aeron:udp?tags=") == "tags=: channel tag '' (the 1st tag) is not a 64-bit integer"
    )  # jar
    assert "is not a 64-bit integer" in parse_error(
        "aeron:udp?endpoint=localhost:1|tags=9223372036854775808"
    )  # jar


def test_does_tag_match() -> None:
    existing = parse("aeron:udp?endpoint=localhost:40456|tags=7")
    assert existing.does_tag_match(parse("aeron:udp?tags=7"))
    assert not existing.does_tag_match(parse("aeron:udp?tags=8"))
    assert not existing.does_tag_match(parse("aeron:udp?endpoint=localhost:40456"))
    assert not parse("aeron:udp?endpoint=localhost:40456").does_tag_match(parse("aeron:udp?tags=7"))
    assert existing.does_tag_match(parse("aeron:udp?tags=7|interface=[::]"))
    with pytest.raises(InvalidChannelError) as info:
        existing.does_tag_match(parse("aeron:udp?tags=7|endpoint=localhost:40456"))
    assert info.value.reason == (
        "tags=7 matches an existing channel by tag, so it must not also set an endpoint, control or interface address"
    )
    assert info.value.error_code == ErrorCode.GENERIC_ERROR


def test_equality_by_canonical_form() -> None:
    a = parse("aeron:udp?endpoint=localhost:40456")
    b = parse("aeron:udp?endpoint=127.0.0.1:40456|mtu=1408")
    assert a == b and hash(a) == hash(b)
    assert a != parse("aeron:udp?endpoint=localhost:40457")
    assert len({a, b}) == 1


def test_interfaces_are_only_listed_when_needed() -> None:
    never: Callable[[], Any] = lambda: pytest.fail("interfaces listed")  # noqa: E731
    parse("aeron:udp?endpoint=localhost:1", interfaces=never)
    parse("aeron:udp?endpoint=localhost:1|interface=0.0.0.0:5000", interfaces=never)
    parse("aeron:udp?endpoint=localhost:1|control=localhost:2", interfaces=never)


# --- errors ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "reason"),
    [
        (  # jar: "Aeron URIs for UDP must specify an endpoint address, control address, tag-id, or control-mode"
            "aeron:udp?mtu=1408",
            "a UDP channel must have at least one of endpoint=host:port, control=host:port, tags=<channel tag> or "
            "control-mode=manual|dynamic",
        ),
        (  # jar: "UdpChannel only supports UDP media"
            "aeron:ipc",
            "media 'ipc' is not a UDP channel: use aeron:udp?endpoint=host:port (or aeron:ipc for IPC, which is not "
            "parsed as UDP)",
        ),
        (  # jar: "The 'port' portion of the address is required"
            "aeron:udp?endpoint=localhost",
            "endpoint=localhost: the port is missing: expected host:port or [ipv6]:port",
        ),
        (
            "aeron:udp?endpoint=localhost:",
            "endpoint=localhost:: the port is missing: expected host:port or [ipv6]:port",
        ),
        ("aeron:udp?endpoint=[::1]", "endpoint=[::1]: the port is missing: expected [ipv6]:port"),  # jar
        ("aeron:udp?endpoint=[::1]:", "endpoint=[::1]:: the port is missing: expected [ipv6]:port"),  # jar
        ("aeron:udp?endpoint=", "endpoint= is empty: expected host:port or [ipv6]:port"),
        (
            "aeron:udp?endpoint=localhost:99999",
            "endpoint=localhost:99999: port 99999 is out of range (0..65535)",
        ),  # jar
        (
            "aeron:udp?control=localhost:65536",
            "control=localhost:65536: port 65536 is out of range (0..65535)",
        ),
        (  # jar: "Invalid format"
            "aeron:udp?endpoint=localhost:4x",
            "endpoint=localhost:4x: invalid address format: expected host:port or [ipv6%scope]:port (port in "
            "decimal digits)",
        ),
        (
            "aeron:udp?endpoint=localhost:-1",
            "endpoint=localhost:-1: invalid address format: expected host:port or [ipv6%scope]:port (port in "
            "decimal digits)",
        ),  # jar
        (
            "aeron:udp?endpoint=[::1]x:40",
            "endpoint=[::1]x:40: invalid address format: expected host:port or [ipv6%scope]:port (port in "
            "decimal digits)",
        ),  # jar
        (
            "aeron:udp?endpoint=::1:40",
            "endpoint=::1:40: invalid address format: expected host:port or [ipv6%scope]:port (port in "
            "decimal digits)",
        ),  # jar
        (
            "aeron:udp?endpoint=[::g]:40",
            "endpoint=[::g]:40: invalid address format: expected host:port or [ipv6%scope]:port (port in "
            "decimal digits)",
        ),  # jar
        (  # jar: "could not resolve endpoint address"
            "aeron:udp?endpoint=nosuchhost.invalid:40456",
            "endpoint=nosuchhost.invalid:40456: could not resolve host 'nosuchhost.invalid' (unknown host "
            "nosuchhost.invalid)",
        ),
        (
            "aeron:udp?endpoint=[]:40123",
            "endpoint=[]:40123: could not resolve host '[]' (unknown host [])",
        ),  # jar
        (
            "aeron:udp?endpoint=[1.2.3.4]:40",
            "endpoint=[1.2.3.4]:40: could not resolve host '[1.2.3.4]' (unknown host [1.2.3.4])",
        ),  # jar
        (
            "aeron:udp?endpoint=localhost:1|control=nohost:2",
            "control=nohost:2: could not resolve host 'nohost' (unknown host nohost)",
        ),
        (  # jar: "Multicast data address must be odd"
            "aeron:udp?endpoint=224.0.1.2:40456",
            "endpoint=224.0.1.2:40456: a multicast data address must be odd (its last byte): the control address "
            "is the next one up",
        ),
        (
            "aeron:udp?endpoint=[ff02::2]:40123",
            "endpoint=[ff02::2]:40123: a multicast data address must be odd (its last byte): the control address "
            "is the next one up",
        ),  # jar
        (  # jar: "Unable to find multicast interface matching criteria: /10.1.1.1:0/32"
            "aeron:udp?endpoint=224.0.1.1:40456|interface=10.1.1.1",
            "interface=10.1.1.1: no local interface that supports multicast or is loopback has an address in "
            "10.1.1.1/32 (candidates: none)",
        ),
        (  # jar: 0.0.0.0 with the default /32 matches nothing
            "aeron:udp?endpoint=224.0.1.1:40456|interface=0.0.0.0",
            "interface=0.0.0.0: no local interface that supports multicast or is loopback has an address in "
            "0.0.0.0/32 (candidates: none)",
        ),
        (
            "aeron:udp?endpoint=localhost:1|interface=10.1.1.1",
            "interface=10.1.1.1: no local interface that supports multicast or is loopback has an address in "
            "10.1.1.1/32 (candidates: none)",
        ),
        (
            "aeron:udp?endpoint=224.0.1.1:1|interface=127.0.0.1:",
            "interface=127.0.0.1:: the port after ':' is missing",
        ),  # jar
        (
            "aeron:udp?endpoint=224.0.1.1:1|interface=127.0.0.1:5x",
            "interface=127.0.0.1:5x: 'x' is not a digit (only ASCII digits, '-' in front)",
        ),  # jar
        (
            "aeron:udp?endpoint=224.0.1.1:1|interface=127.0.0.1:70000",
            "interface=127.0.0.1:70000: port 70000 is out of range (0..65535)",
        ),
        (
            "aeron:udp?endpoint=224.0.1.1:1|interface=127.0.0.1/",
            "interface=127.0.0.1/: the subnet prefix length after '/' is missing",
        ),  # jar
        (
            "aeron:udp?endpoint=224.0.1.1:1|interface=127.0.0.1/x",
            "interface=127.0.0.1/x: 'x' is not a digit (only ASCII digits, '-' in front)",
        ),
        (
            "aeron:udp?endpoint=224.0.1.1:1|interface=",
            "interface= is empty: expected addr[:port][/prefix]",
        ),  # jar
        (
            "aeron:udp?endpoint=224.0.1.1:1|interface=nosuch.invalid",
            "interface=nosuch.invalid: could not resolve host 'nosuch.invalid' (unknown host nosuch.invalid)",
        ),  # jar
        (
            "aeron:udp?endpoint=224.0.1.1:1|interface=::1",
            "interface=::1: could not resolve host ':' (unknown host :)",
        ),  # jar
        (
            "aeron:udp?endpoint=224.0.1.1:1|interface=[localhost]",
            "interface=[localhost]: only an IPv6 address may be in brackets",
        ),
    ],
)
def test_errors(uri: str, reason: str) -> None:
    assert parse_error(uri) == reason


def test_grammar_errors_come_from_channel_uri() -> None:
    with pytest.raises(InvalidChannelError) as info:
        parse("aeron:udp?endpoint=localhost:40123|mtu")
    assert (
        str(info.value) == "aeron:udp?endpoint=localhost:40123|mtu: parameter 'mtu' has no '=' (at offset 38)"
    )


def test_error_precedence_follows_1_15_1() -> None:
    # address format before "must specify", "must specify" before resolution
    assert parse_error("aeron:udp?control=x").startswith("control=x: the port is missing")
    assert parse_error("aeron:udp?endpoint=nohost:1|control=nohost2:2").startswith(
        "endpoint=nohost:1: could not"
    )


def test_no_multicast_capable_interface() -> None:
    quiet = NetworkInterface("eth1", 5, (InterfaceAddress(ip("10.0.0.2"), 24),))
    assert parse_error("aeron:udp?endpoint=224.0.1.1:1", interfaces=lambda: (quiet,)) == (
        "multicast interface (default 0.0.0.0/0): no local interface that supports multicast or is loopback has "
        "an address in 0.0.0.0/0 (candidates: eth1 (10.0.0.2))"
    )


# --- the pieces ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("localhost:40123", ("localhost", 40123)),
        ("192.168.0.1:1", ("192.168.0.1", 1)),
        (":5", ("", 5)),
        ("[]:5", ("[]", 5)),  # host:port is tried first, as in Java
        ("[::1]:40123", ("::1", 40123)),
        ("[fe80::1%eth0]:40123", ("fe80::1%eth0", 40123)),
        ("[FE80::A%en-0.x_y~]:7", ("FE80::A%en-0.x_y~", 7)),
    ],
)
def test_parse_socket_address(text: str, expected: tuple[str, int]) -> None:
    assert parse_socket_address("endpoint", text) == expected


@pytest.mark.parametrize("text", ["[::1%et h0]:1", "[::1%%x]:1", "[::1]:1:2", "[::1:1", "[::1]:+1", "a:b:c"])
def test_parse_socket_address_rejects(text: str) -> None:
    with pytest.raises(AddressError, match="invalid address format"):
        parse_socket_address("endpoint", text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1", InterfaceSearchAddress(ip("127.0.0.1"), 0, 32)),
        ("127.0.0.1:5000", InterfaceSearchAddress(ip("127.0.0.1"), 5000, 32)),
        ("127.0.0.0:5000/8", InterfaceSearchAddress(ip("127.0.0.0"), 5000, 8)),
        ("192.168.0.0/16", InterfaceSearchAddress(ip("192.168.0.0"), 0, 16)),
        ("localhost", InterfaceSearchAddress(ip("127.0.0.1"), 0, 32)),
        ("[::1]", InterfaceSearchAddress(ip("::1"), 0, 128)),
        ("[::1]:5000/128", InterfaceSearchAddress(ip("::1"), 5000, 128)),
        ("[fd00::]/64", InterfaceSearchAddress(ip("fd00::"), 0, 64)),
        ("0.0.0.0:7", InterfaceSearchAddress(ip("0.0.0.0"), 7, 32)),
    ],
)
def test_parse_interface(text: str, expected: InterfaceSearchAddress) -> None:
    assert parse_interface(text, fake_resolve) == expected


def test_find_interface_prefers_non_loopback_then_longer_prefix() -> None:
    wide = NetworkInterface("wide", 7, (InterfaceAddress(ip("10.1.2.3"), 8),), supports_multicast=True)
    narrow = NetworkInterface("narrow", 8, (InterfaceAddress(ip("10.1.2.4"), 24),), supports_multicast=True)
    no_mc = NetworkInterface("nomc", 9, (InterfaceAddress(ip("10.1.2.5"), 30),))
    lo = NetworkInterface("lo", 1, (InterfaceAddress(ip("10.1.2.6"), 31),), is_loopback=True)
    search = InterfaceSearchAddress(ip("10.0.0.0"), 0, 8)
    assert find_interface(search, [lo, wide, no_mc, narrow]) == (narrow, ip("10.1.2.4"))
    assert find_interface(search, [lo, wide]) == (wide, ip("10.1.2.3"))
    assert find_interface(search, [lo, no_mc]) == (lo, ip("10.1.2.6"))
    with pytest.raises(AddressError, match=r"candidates: nomc \(10.1.2.5\)"):
        find_interface(search, [no_mc])


def test_canonicalise() -> None:
    assert canonicalise(ip("0.0.0.0"), 0, ip("127.0.0.1"), 40456) == "UDP-00000000-0-7f000001-40456"
    assert canonicalise(ip("10.0.0.255"), 1, ip("::ffff:1.2.3.4"), 2) == (
        "UDP-0a0000ff-1-00000000000000000000ffff01020304-2"
    )


def test_destination_address() -> None:
    assert destination_address("aeron:udp?endpoint=localhost:40457", resolve=fake_resolve) == (
        "127.0.0.1",
        40457,
    )
    with pytest.raises(InvalidChannelError) as info:
        destination_address("aeron:udp?control=localhost:1", resolve=fake_resolve)
    assert info.value.reason == "a destination needs endpoint=host:port"
    with pytest.raises(InvalidChannelError, match="could not resolve host 'nohost'"):
        destination_address("aeron:udp?endpoint=nohost:1", resolve=fake_resolve)
    with pytest.raises(InvalidChannelError, match="media 'ipc' is not a UDP channel"):
        destination_address("aeron:ipc")


# --- defaults without OS access ------------------------------------------------------------------------


def test_resolve_numeric() -> None:
    assert resolve_numeric("127.0.0.1") == ip("127.0.0.1")
    assert resolve_numeric("") == ip("127.0.0.1")  # as InetAddress.getByName("")
    assert resolve_numeric("fe80::1%lo") == ip("fe80::1%lo")
    with pytest.raises(ValueError, match="no name resolver was given"):
        resolve_numeric("localhost")


def test_parse_defaults_resolve_numeric_addresses_only() -> None:
    channel = UdpChannel.parse("aeron:udp?endpoint=127.0.0.1:40456|control=[::1]:5")
    assert channel.canonical_form == "UDP-00000000000000000000000000000001-5-7f000001-40456"
    with pytest.raises(InvalidChannelError) as info:
        UdpChannel.parse("aeron:udp?endpoint=localhost:40456")
    assert info.value.reason == (
        "endpoint=localhost:40456: could not resolve host 'localhost' (not a numeric address, and no name "
        "resolver was given)"
    )


def test_parse_without_an_interface_lister_is_a_caller_bug_when_one_is_needed() -> None:
    for uri in ("aeron:udp?endpoint=224.0.1.1:40456", "aeron:udp?endpoint=127.0.0.1:1|interface=127.0.0.1"):
        with pytest.raises(TypeError, match="pass interfaces="):
            UdpChannel.parse(uri)
    assert UdpChannel.parse("aeron:udp?endpoint=127.0.0.1:1|interface=0.0.0.0:9").local_data == ("0.0.0.0", 9)


def test_loopback_only_table() -> None:
    channel = UdpChannel.parse("aeron:udp?endpoint=224.0.1.1:40456", interfaces=lambda: LOOPBACK_ONLY)
    assert channel.canonical_form == "UDP-7f000001-0-e0000101-40456"


def test_prefix_lengths_out_of_range_mask_as_java_shifts() -> None:  # jar: /33 accepted
    # Java builds the IPv4 mask as -(1 << 32 - prefix) with the shift distance taken mod 32: /33 is /1, /-8 is
    # /24; IPv6 does the same per 64-bit half.
    loopback = parse(
        "aeron:udp?endpoint=224.0.1.1:1|interface=127.0.0.1/33", interfaces=lambda: LOOPBACK_ONLY
    )
    assert loopback.local_data == ("127.0.0.1", 0)
    assert parse("aeron:udp?endpoint=224.0.1.1:1|interface=127.0.0.9/-8", interfaces=lambda: LOOPBACK_ONLY)
    with pytest.raises(InvalidChannelError, match="no local interface"):
        parse("aeron:udp?endpoint=224.0.1.1:1|interface=127.0.9.1/-8", interfaces=lambda: LOOPBACK_ONLY)
    with pytest.raises(InvalidChannelError, match="no local interface"):
        parse("aeron:udp?endpoint=224.0.1.1:1|interface=128.0.0.1/33", interfaces=lambda: LOOPBACK_ONLY)
    assert parse("aeron:udp?endpoint=[ff02::1]:1|interface=[::1]/129", interfaces=lambda: LOOPBACK_ONLY)


def test_ports_wrap_as_parse_int_ascii() -> None:  # jar: localhost:(2^32 + p) is port p
    assert parse(f"aeron:udp?endpoint=127.0.0.1:{2**32 + 40123}").remote_data == ("127.0.0.1", 40123)
    assert parse_error("aeron:udp?endpoint=127.0.0.1:65536") == (
        "endpoint=127.0.0.1:65536: port 65536 is out of range (0..65535)"
    )


def test_any_control_mode_is_accepted_and_only_manual_or_dynamic_select_mdc() -> None:  # jar
    bogus = parse("aeron:udp?endpoint=localhost:1|control=localhost:2|control-mode=bogus")
    assert bogus.has_explicit_control
    assert not bogus.is_manual_control_mode and not bogus.is_dynamic_control_mode
    assert parse("aeron:udp?control-mode=").control_mode == ""
