"""Free loopback ports, so that parallel test runs never collide on a fixed one."""

from __future__ import annotations

import socket

_KINDS = {"udp": socket.SOCK_DGRAM, "tcp": socket.SOCK_STREAM}


def free_port(kind: str | int = "udp") -> int:
    """A port the OS just had free on 127.0.0.1 for ``kind`` ("udp"/"tcp" or a socket type)."""
    sock_type = _KINDS[kind] if isinstance(kind, str) else kind
    with socket.socket(socket.AF_INET, sock_type) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
