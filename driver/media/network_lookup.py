"""The OS side of UDP channel parsing: host name resolution and the local interface table.

``driver/protocol/udp_channel.py`` is sans-IO and takes these as arguments::

    UdpChannel.parse(channel, resolve=resolve_host, interfaces=system_interfaces)

Limitations: Linux only (elsewhere only loopback is reported); one IPv4 address per interface (the primary
one, via SIOCGIFADDR), where Java 11 also sees labelled aliases (``eth0:1``); all IPv6 addresses come from
``/proc/net/if_inet6``. Interfaces and the IPv6 addresses of each are listed in reverse discovery order,
which is what Java 11 on Linux does and decides between equally good candidates.
"""

from __future__ import annotations

import fcntl
import ipaddress
import socket
import struct
import sys

from driver.protocol.udp_channel import LOOPBACK_ONLY, InterfaceAddress, IpAddress, NetworkInterface

_SIOCGIFFLAGS = 0x8913
_SIOCGIFADDR = 0x8915
_SIOCGIFNETMASK = 0x891B
_IFF_LOOPBACK = 0x8
_IFF_MULTICAST = 0x1000


def resolve_host(host: str) -> IpAddress:
    """Resolve like ``InetAddress.getByName`` with Java's default preference for IPv4 addresses.

    Numeric literals (IPv6 with an optional ``%scope``) need no lookup; ``""`` is the loopback address.
    Raises OSError when the name does not resolve.
    """
    if host == "":
        return ipaddress.IPv4Address("127.0.0.1")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_DGRAM)
    for family in (socket.AF_INET, socket.AF_INET6):
        for info in infos:
            if info[0] == family:
                return ipaddress.ip_address(info[4][0])
    raise OSError(f"no IPv4 or IPv6 address for {host!r}")


def system_interfaces() -> list[NetworkInterface]:
    """The host's interfaces (Linux: ``if_nameindex`` + SIOCGIF* ioctls + ``/proc/net/if_inet6``)."""
    if not sys.platform.startswith("linux"):
        return list(LOOPBACK_ONLY)
    try:
        names = socket.if_nameindex()
    except OSError:
        return list(LOOPBACK_ONLY)

    ipv6: dict[str, list[InterfaceAddress]] = {}
    try:
        with open("/proc/net/if_inet6", encoding="ascii") as lines:
            for line in lines:
                fields = line.split()
                if len(fields) >= 6:
                    address = ipaddress.IPv6Address(bytes.fromhex(fields[0]))
                    if address.is_link_local:
                        address = ipaddress.IPv6Address(f"{address}%{fields[5]}")
                    ipv6.setdefault(fields[5], []).insert(0, InterfaceAddress(address, int(fields[2], 16)))
    except OSError:
        pass

    result: list[NetworkInterface] = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for index, name in reversed(names):
            request = struct.pack("16s24x", name.encode())
            try:
                flags = struct.unpack_from("H", fcntl.ioctl(probe.fileno(), _SIOCGIFFLAGS, request), 16)[0]
            except OSError:
                continue
            addresses: list[InterfaceAddress] = []
            try:
                ipv4 = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, request)[20:24]
                mask = fcntl.ioctl(probe.fileno(), _SIOCGIFNETMASK, request)[20:24]
                prefix_length = bin(int.from_bytes(mask, "big")).count("1")
                addresses.append(InterfaceAddress(ipaddress.IPv4Address(ipv4), prefix_length))
            except OSError:
                pass
            addresses.extend(ipv6.get(name, ()))
            if addresses:
                result.append(
                    NetworkInterface(
                        name,
                        index,
                        tuple(addresses),
                        is_loopback=bool(flags & _IFF_LOOPBACK),
                        supports_multicast=bool(flags & _IFF_MULTICAST),
                    )
                )
    return result or list(LOOPBACK_ONLY)
