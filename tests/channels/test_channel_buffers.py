"""Per-channel ``so-sndbuf``, ``so-rcvbuf`` and ``rcv-wnd`` on a real driver (embedded) and real sockets.

The socket buffers are read as the kernel reports them (``ss``, which Linux shows doubled for its own
bookkeeping); the window is read from the status messages the driver sends to a raw UDP publisher stand-in.
"""

from __future__ import annotations

import itertools
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from driver.client import Aeron, RegistrationError
from driver.protocol import frames as f
from driver.protocol.control_protocol import ErrorCode
from harness.ports import free_port

KIB = 1024
DEADLINE_S = 5.0


@pytest.fixture
def aeron(embedded_driver) -> Iterator[Aeron]:
    driver = embedded_driver()
    with Aeron.connect(aeron_dir=driver.aeron_dir) as client:
        yield client


def _skmem(local: str | None = None, remote: str | None = None) -> tuple[int, int]:
    """(rcvbuf, sndbuf) the kernel reports for the UDP socket bound to ``local`` or connected to ``remote``."""
    if shutil.which("ss") is None:
        pytest.skip("ss (iproute2) is not installed")
    out = subprocess.run(["ss", "-uanm"], capture_output=True, text=True, check=True).stdout.splitlines()
    for line, detail in itertools.pairwise(out):
        columns = line.split()
        if len(columns) >= 5 and (columns[3] == local or columns[4] == remote):
            found = re.search(r"rb(\d+),t\d+,tb(\d+)", detail)
            assert found, detail
            return int(found[1]), int(found[2])
    raise AssertionError(f"no UDP socket {local or remote} in: {out}")


def test_so_rcvbuf_and_so_sndbuf_set_that_endpoints_socket_buffers(aeron: Aeron) -> None:
    port = free_port()
    aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}|so-rcvbuf=256k", 1010)
    aeron.add_publication(f"aeron:udp?endpoint=127.0.0.1:{port}|so-sndbuf=128k", 1010)
    other = free_port()
    aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{other}", 1010)
    rcvbuf, _ = _skmem(local=f"127.0.0.1:{port}")
    _, sndbuf = _skmem(remote=f"127.0.0.1:{port}")
    default_rcvbuf, _ = _skmem(local=f"127.0.0.1:{other}")
    assert (rcvbuf, sndbuf) == (2 * 256 * KIB, 2 * 128 * KIB)
    assert default_rcvbuf != rcvbuf  # the driver-wide setting still applies elsewhere


def test_a_channel_sharing_an_endpoint_may_not_ask_for_other_buffers(aeron: Aeron) -> None:
    port = free_port()
    aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}|so-rcvbuf=256k", 1011)
    aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}|so-rcvbuf=256k", 1012)
    with pytest.raises(RegistrationError, match="so-rcvbuf=131072 does not match the 262144") as info:
        aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}|so-rcvbuf=128k", 1013)
    assert info.value.code == ErrorCode.INVALID_CHANNEL


@pytest.mark.parametrize("value", ["-1", "2g", "lots"])
def test_a_bad_buffer_length_is_refused_by_name(aeron: Aeron, value: str) -> None:
    with pytest.raises(RegistrationError, match=f"so-sndbuf={value}"):
        aeron.add_publication(f"aeron:udp?endpoint=127.0.0.1:{free_port()}|so-sndbuf={value}", 1014)


def _window_in_status_messages(aeron: Aeron, extra: str) -> int:
    port = free_port()
    aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}{extra}", 1015)
    setup = f.encode_setup(0, 77, 1015, 5, 5, 1024 * KIB, 1408, 0)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as publisher:
        publisher.bind(("127.0.0.1", 0))
        publisher.settimeout(0.1)
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            publisher.sendto(setup, ("127.0.0.1", port))
            try:
                data = publisher.recv(2048)
            except TimeoutError:
                continue
            if f.frame_type(data) == f.HDR_TYPE_SM:
                return f.StatusMessageFrame.decode(data).receiver_window
    raise AssertionError("no status message within the deadline")


def test_rcv_wnd_bounds_the_window_in_status_messages(aeron: Aeron) -> None:
    assert _window_in_status_messages(aeron, "|rcv-wnd=64k") == 64 * KIB
    assert _window_in_status_messages(aeron, "|rcv-wnd=32k") == 32 * KIB
    assert _window_in_status_messages(aeron, "") > 64 * KIB  # the driver-wide window elsewhere
