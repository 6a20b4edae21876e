"""Real name resolution and the real interface table, with UdpChannel on top (values checked against the
aeron-all-1.15.1.jar on the same machine where noted)."""

from __future__ import annotations

import ipaddress

import pytest

from driver.media.network_lookup import resolve_host, system_interfaces
from driver.protocol.channel_uri import InvalidChannelError
from driver.protocol.udp_channel import UdpChannel

ip = ipaddress.ip_address


def test_resolve_host() -> None:
    assert resolve_host("127.0.0.1") == ip("127.0.0.1")
    assert resolve_host("") == ip("127.0.0.1")  # as InetAddress.getByName("")
    assert resolve_host("127.1") == ip("127.0.0.1")  # jar: endpoint=127.1:40123 -> 7f000001
    assert resolve_host("fe80::1%lo") == ip("fe80::1%lo")
    assert resolve_host("localhost").is_loopback
    with pytest.raises(OSError):
        resolve_host("nosuchhost.invalid")


def test_system_interfaces_has_loopback() -> None:
    loopback = [i for i in system_interfaces() if i.is_loopback]
    assert loopback
    assert any(a.address == ip("127.0.0.1") for i in loopback for a in i.addresses)


def test_udp_channel_with_the_real_lookups() -> None:
    def parse(uri: str) -> UdpChannel:
        return UdpChannel.parse(uri, resolve=resolve_host, interfaces=system_interfaces)

    assert (
        parse("aeron:udp?endpoint=localhost:40456").canonical_form == "UDP-00000000-0-7f000001-40456"
    )  # jar
    assert parse("aeron:udp?endpoint=127.1:40123").canonical_form == "UDP-00000000-0-7f000001-40123"  # jar
    assert parse("aeron:udp?endpoint=224.0.1.1:40456|interface=127.0.0.1").canonical_form == (
        "UDP-7f000001-0-e0000101-40456"  # jar
    )
    assert parse("aeron:udp?endpoint=224.0.1.1:40456").is_multicast
    with pytest.raises(InvalidChannelError, match=r"could not resolve host 'nosuchhost\.invalid'"):
        parse("aeron:udp?endpoint=nosuchhost.invalid:40456")
