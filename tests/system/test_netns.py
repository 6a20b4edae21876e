"""The two-host helper of harness/netns.py: UDP crosses, impairments act, multicast works between the
namespaces and on ``lo`` inside one, and teardown leaves nothing behind (also after a failure).

On this project's machines the kernel has no sch_netem, so impaired links are the TUN relay
(``link.mode == "relay"``); where netem exists they are veth + netem and the relay-only checks (seeded
reproducibility, the relay's counters) are skipped.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys

import pytest

from harness import netns
from harness.netns import Host, two_hosts

PORT = 40456

RECEIVER = r"""
import json, socket, sys, time
host, port, idle_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind((host, port))
echo = len(sys.argv) > 4 and sys.argv[4] == "echo"
print("ready", flush=True)
seqs, sources = [], set()
s.settimeout(10.0)
try:
    while True:
        data, source = s.recvfrom(65536)
        seqs.append(int.from_bytes(data[:4], "big"))
        sources.add(source[0])
        if echo:
            s.sendto(data, source)
        s.settimeout(idle_s)
except TimeoutError:
    pass
print(json.dumps({"seqs": seqs, "sources": sorted(sources)}), flush=True)
"""

SENDER = r"""
import json, socket, sys, time
host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(count):
    s.sendto(i.to_bytes(4, "big") + bytes(60), (host, port))
    if i % 50 == 49:
        time.sleep(0.002)
"""

PINGER = r"""
import json, socket, sys, time
host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2.0)
rtts = []
for i in range(count):
    start = time.monotonic()
    s.sendto(i.to_bytes(4, "big"), (host, port))
    while True:
        data = s.recv(100)
        if int.from_bytes(data[:4], "big") == i:
            break
    rtts.append((time.monotonic() - start) * 1000)
print(json.dumps(rtts), flush=True)
"""


@pytest.fixture(autouse=True)
def _needs_netns() -> None:
    netns.require_netns()


def wait_ready(process: subprocess.Popen, timeout_s: float = 10.0) -> None:
    readable, _, _ = select.select([process.stdout], [], [], timeout_s)
    line = process.stdout.readline() if readable else ""
    if line.strip() != "ready":
        process.kill()
        raise AssertionError(f"helper did not start: {line!r} {process.stderr.read()}")


def finish(process: subprocess.Popen, timeout_s: float = 30.0):
    out, err = process.communicate(timeout=timeout_s)
    assert process.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def blast(sender: Host, receiver: Host, count: int, idle_s: float = 0.5) -> dict:
    """``count`` numbered datagrams from sender to receiver; what arrived (seqs in arrival order)."""
    listening = receiver.python(RECEIVER, "0.0.0.0", str(PORT), str(idle_s))
    wait_ready(listening)
    sender.check(sys.executable, "-c", SENDER, receiver.address, str(PORT), str(count), timeout=60)
    return finish(listening)


def namespaces() -> set[str]:
    return {line.split()[0] for line in netns._run("ip", "netns", "list").stdout.splitlines() if line.split()}


def root_links() -> str:
    return netns._run("ip", "-o", "link").stdout


def test_udp_crosses_both_ways_loopback_works_and_teardown_removes_everything() -> None:
    with two_hosts() as (a, b):
        assert a.link.mode == "veth"
        assert (a.address, b.address) == ("10.201.0.1", "10.201.0.2")
        assert a.name != b.name and {a.name, b.name} <= namespaces()
        assert a.address in a.check("ip", "-o", "addr", "show", "dev", a.interface).stdout
        assert a.address not in netns._run("ip", "-o", "addr").stdout  # only inside the namespace
        forward = blast(a, b, 200)
        backward = blast(b, a, 200)
        assert sorted(forward["seqs"]) == list(range(200)) and forward["sources"] == [a.address]
        assert sorted(backward["seqs"]) == list(range(200)) and backward["sources"] == [b.address]
        assert sorted(blast(a, a, 10)["seqs"]) == list(range(10))  # to itself
        # lo is up inside: 127.0.0.1 works
        local = a.python(RECEIVER, "127.0.0.1", str(PORT + 1), "0.3")
        wait_ready(local)
        a.check(sys.executable, "-c", SENDER, "127.0.0.1", str(PORT + 1), "5")
        assert sorted(finish(local)["seqs"]) == list(range(5))
        sleeper = a.run("sleep", "60")
        names = {a.name, b.name}
        interfaces = (a.interface, b.interface)
    assert sleeper.poll() is not None  # ended by teardown
    assert not names & namespaces()
    assert not any(interface in root_links() for interface in interfaces)


def test_lossy_link_drops_about_the_rate_and_is_reproducible_with_a_seed() -> None:
    results = []
    for _ in range(2):
        with two_hosts(loss=0.2, seed=11) as (a, b):
            arrived = blast(a, b, 2000)
            link = a.link
        results.append(sorted(arrived["seqs"]))
        assert 1400 <= len(arrived["seqs"]) <= 1800, len(arrived["seqs"])
    if link.mode != "relay":
        pytest.skip(
            "netem: loss checked; reproducibility is the relay's (netem seeds only where tc knows seed)"
        )
    assert results[0] == results[1]  # same seed, same UDP traffic: the same datagrams lost
    stats = link.relay_stats["a_to_b"]
    assert stats["dropped"] == 2000 - len(results[1])
    assert stats["overflow"] == 0


def test_delay_adds_to_the_round_trip() -> None:
    with two_hosts(delay_ms=20, seed=3) as (a, b):
        echo = b.python(RECEIVER, "0.0.0.0", str(PORT), "1.0", "echo")
        wait_ready(echo)
        pinger = a.python(PINGER, b.address, str(PORT), "10")
        rtts = finish(pinger)
        finish(echo)
    assert len(rtts) == 10
    assert min(rtts) >= 38, rtts  # 20 ms each way
    assert max(rtts) < 200, rtts


def test_duplication_and_reordering_happen() -> None:
    with two_hosts(delay_ms=10, jitter_ms=5, reorder=0.25, duplicate=0.05, seed=5) as (a, b):
        arrived = blast(a, b, 1000, idle_s=1.0)["seqs"]
        link = a.link
    assert set(arrived) == set(range(1000))  # no loss asked, none happened
    assert len(arrived) > 1000  # duplicates
    assert arrived != sorted(arrived)  # reordered
    if link.mode == "relay":
        stats = link.relay_stats["a_to_b"]
        assert len(arrived) - 1000 == stats["duplicated"]
        assert stats["reordered"] > 0


MULTICAST_RECEIVER = r"""
import json, sys, time
from driver.media.udp_batch import ReceiveBatch
from driver.media.network_lookup import resolve_host, system_interfaces
from driver.media.udp_transport import UdpTransport
from driver.protocol.udp_channel import UdpChannel
channel = UdpChannel.parse(sys.argv[1], resolve=resolve_host, interfaces=system_interfaces)
transport = UdpTransport.open_receive(channel)
batch = ReceiveBatch(8, 2048)
print("ready", flush=True)
deadline = time.monotonic() + 10
got = []
while not got and time.monotonic() < deadline:
    n = transport.receive_batch(batch)
    got = [(bytes(batch.data(i)).decode(), batch.address(i)[0]) for i in range(n)]
    time.sleep(0.005)
for _ in range(20):  # status messages to the control group until the test has seen one
    transport.send_to(b"status", channel.remote_control)
    time.sleep(0.05)
print(json.dumps({"got": got, "interface": channel.local_interface.name}), flush=True)
"""

MULTICAST_SENDER = r"""
import json, sys, time
from driver.media.udp_batch import ReceiveBatch
from driver.media.network_lookup import resolve_host, system_interfaces
from driver.media.udp_transport import UdpTransport
from driver.protocol.udp_channel import UdpChannel
channel = UdpChannel.parse(sys.argv[1], resolve=resolve_host, interfaces=system_interfaces)
transport = UdpTransport.open_send(channel)
batch = ReceiveBatch(8, 2048)
deadline = time.monotonic() + 10
control = []
while not control and time.monotonic() < deadline:
    transport.send(b"data")
    time.sleep(0.05)
    n = transport.receive_batch(batch)
    control = [bytes(batch.data(i)).decode() for i in range(n)]
print(json.dumps({"control": control, "interface": channel.local_interface.name}), flush=True)
"""


@pytest.mark.parametrize("mode", ["veth", "relay"])
def test_multicast_between_two_hosts(mode: str) -> None:
    group = f"224.0.1.1:{PORT}"
    with two_hosts(mode=mode) as (a, b):
        receiver = b.python(MULTICAST_RECEIVER, f"aeron:udp?endpoint={group}|interface={b.address}")
        wait_ready(receiver)
        sender = a.python(MULTICAST_SENDER, f"aeron:udp?endpoint={group}|interface={a.address}")
        sent = finish(sender)
        received = finish(receiver)
    assert received["interface"] == b.interface and sent["interface"] == a.interface
    assert received["got"] and received["got"][0] == ["data", a.address]
    assert sent["control"] and sent["control"][0] == "status"


def test_multicast_on_loopback_inside_a_namespace() -> None:
    uri = f"aeron:udp?endpoint=224.0.1.1:{PORT}|interface=127.0.0.1"
    with two_hosts() as (a, _b):
        receiver = a.python(MULTICAST_RECEIVER, uri)
        wait_ready(receiver)
        sent = finish(a.python(MULTICAST_SENDER, uri))
        received = finish(receiver)
    assert received["interface"] == "lo"
    assert received["got"][0] == ["data", "127.0.0.1"]
    assert sent["control"][0] == "status"


def test_teardown_after_a_failure_still_removes_everything() -> None:
    with pytest.raises(RuntimeError, match="boom"), two_hosts(loss=0.1, seed=1) as (a, b):
        names = {a.name, b.name}
        sleeper = b.run("sleep", "60")
        relay = a.link.relay
        raise RuntimeError("boom")
    assert sleeper.poll() is not None
    assert relay is None or relay.poll() is not None
    assert not names & namespaces()


def test_namespaces_left_by_a_dead_process_are_removed() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = f"{netns.PREFIX}{dead.pid}-abcdef-a"
    netns._run("ip", "netns", "add", stale)
    try:
        mine = f"{netns.PREFIX}{os.getpid()}-abcdef-a"  # a live pid's namespace stays
        netns._run("ip", "netns", "add", mine)
        try:
            assert stale in netns.remove_stale_namespaces()
            assert mine in namespaces()
        finally:
            netns._run("ip", "netns", "del", mine, check=False)
    finally:
        netns._run("ip", "netns", "del", stale, check=False)
    assert stale not in namespaces()


def test_arguments_are_checked_before_anything_is_built() -> None:
    with pytest.raises(ValueError, match="fractions"), two_hosts(loss=5):
        pass
    with pytest.raises(ValueError, match="mode"), two_hosts(mode="tunnel"):
        pass


def test_netem_mode_says_when_the_kernel_has_no_netem() -> None:
    if netns.netem_available():
        with two_hosts(loss=0.01, mode="netem") as (a, _b):
            assert a.link.mode == "veth" and "loss" in a.link.netem_args
        return
    with (
        pytest.raises(netns.NetnsUnavailable, match="CONFIG_NET_SCH_NETEM"),
        two_hosts(loss=0.01, mode="netem"),
    ):
        pass
