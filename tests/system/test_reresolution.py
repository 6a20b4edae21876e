"""Name re-resolution: a publication whose endpoint is a host name follows its receiver to a new address.

Two namespaces: the publisher's driver in ``a`` resolves ``receiver.test`` through a hosts file that
``ip netns exec`` puts at /etc/hosts (/etc/netns/<name>/hosts); the receiver in ``b`` is restarted on a second
address and the hosts file changed, as a restarted container behind the same name. The publisher, never
restarted, re-resolves the name once its receivers have gone quiet (aeron.driver.reresolution.check.interval,
1 s) and the new receiver gets data within 3 s.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import pytest

from driver.status.driver_snapshot import CncWatcher, read_snapshot
from driver.status.system_counters import SystemCounterDescriptor
from harness.netns import Host, require_netns, two_hosts
from tests.conftest import wait_for_cnc_ready

PORT = 40461
STREAM_ID = 4001
NAME = "receiver.test"

PUBLISHER = r"""
import sys, time
from driver.client import Aeron
with Aeron.connect(aeron_dir=sys.argv[1]) as aeron:
    publication = aeron.add_publication(sys.argv[2], int(sys.argv[3]))
    print("READY", flush=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        publication.offer(b"tick")
        time.sleep(0.01)
"""

SUBSCRIBER = r"""
import sys, time
from driver.client import Aeron
with Aeron.connect(aeron_dir=sys.argv[1]) as aeron:
    subscription = aeron.add_subscription(sys.argv[2], int(sys.argv[3]))
    start = time.monotonic()
    print("READY", flush=True)
    got = []
    while not got and time.monotonic() - start < 20:
        if subscription.poll(lambda *args: got.append(1), 10) == 0:
            time.sleep(0.001)
    print(f"FIRST {time.monotonic() - start:.3f}" if got else "NONE", flush=True)
"""


def _driver(host: Host, aeron_dir: Path) -> None:
    proc = host.run(sys.executable, "-m", "driver", "run", "--dir", str(aeron_dir))
    wait_for_cnc_ready(aeron_dir, proc=proc)


def _first_message_after(host: Host, aeron_dir: Path, address: str) -> float:
    subscriber = host.python(SUBSCRIBER, str(aeron_dir), f"aeron:udp?endpoint={address}:{PORT}", str(STREAM_ID))
    assert subscriber.stdout is not None and subscriber.stdout.readline().strip() == "READY"
    line = subscriber.stdout.readline().split()
    subscriber.wait(timeout=10)
    assert line and line[0] == "FIRST", line
    return float(line[1])


def test_a_receiver_restarted_on_a_new_address_gets_data_without_restarting_the_publisher(tmp_path: Path) -> None:
    require_netns()
    with two_hosts() as (a, b):
        hosts_dir = Path("/etc/netns") / a.name
        hosts_dir.mkdir(parents=True)
        try:
            hosts = hosts_dir / "hosts"
            hosts.write_text(f"{b.address} {NAME}\n")
            moved = b.address.rsplit(".", 1)[0] + ".3"
            b.check("ip", "addr", "add", f"{moved}/24", "dev", b.interface)
            dir_a, dir_b = tmp_path / "a", tmp_path / "b"
            _driver(a, dir_a)
            _driver(b, dir_b)
            publisher = a.python(PUBLISHER, str(dir_a), f"aeron:udp?endpoint={NAME}:{PORT}", str(STREAM_ID))
            assert publisher.stdout is not None
            assert _first_message_after(b, dir_b, b.address) < 5  # the first receiver, as the name said
            time.sleep(2)  # the receiver is gone: its status messages stop
            with hosts.open("r+") as f:  # in place: the bind mount holds this inode
                f.write(f"{moved} {NAME}\n")
                f.truncate()
            delay = _first_message_after(b, dir_b, moved)
            print(f"first message {delay:.3f} s after the moved receiver subscribed")
            assert delay < 3.0
            assert publisher.poll() is None  # the same publisher throughout
            with CncWatcher(dir_a) as watcher:
                cnc = watcher.current()
                assert cnc is not None
                changes = read_snapshot(cnc, with_errors=False).counters[SystemCounterDescriptor.RESOLUTION_CHANGES]
            assert changes.label == "Resolution changes" and changes.value >= 1  # today's Aeron's counter 25
        finally:
            shutil.rmtree(hosts_dir, ignore_errors=True)


pytestmark = pytest.mark.slow
