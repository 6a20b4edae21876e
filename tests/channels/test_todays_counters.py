"""Today's Aeron's system counters (ids 25..39), local socket address (type 14) and flow-control receivers
(type 17) counters on a real driver with real sockets, read back from cnc.dat as any tool reads them, and as
``mediadriver stat`` and the exporter show them."""

from __future__ import annotations

import subprocess
import sys
import time

from driver.client import Aeron
from driver.concurrent.counter_types import (
    FLOW_CONTROL_RECEIVERS_TYPE_ID,
    LOCAL_SOCKET_ADDRESS_TYPE_ID,
    RECEIVE_CHANNEL_STATUS_TYPE_ID,
    SEND_CHANNEL_STATUS_TYPE_ID,
    CounterInfo,
    read_counters,
)
from driver.exporter.collector import CncCollector
from driver.status.system_counters import SystemCounterDescriptor as SC
from harness.ports import free_port
from tests.exporter.test_exporter_driver import scrape

DEADLINE_S = 10.0


def _counters(driver) -> list[CounterInfo]:
    return read_counters(driver.driver.counters)


def _system(driver, descriptor: SC) -> int:
    return driver.driver.counters.get_counter_value(descriptor.id)


def _until(done, step=lambda: None) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not done():
        assert time.monotonic() < deadline, "timed out"
        step()
        time.sleep(0.005)


def test_each_endpoint_socket_names_its_bound_address(embedded_driver) -> None:
    driver = embedded_driver()
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        # port 0: the counter is where a user learns the port the subscription got
        aeron.add_subscription("aeron:udp?endpoint=127.0.0.1:0", 11)
        port = free_port()
        aeron.add_publication(f"aeron:udp?endpoint=127.0.0.1:{port}", 12)
        counters = _counters(driver)
        status_ids = {c.type_id: c.counter_id for c in counters if c.type_id in (SEND_CHANNEL_STATUS_TYPE_ID, RECEIVE_CHANNEL_STATUS_TYPE_ID)}
        addresses = {c.label.split(":")[0]: c for c in counters if c.type_id == LOCAL_SOCKET_ADDRESS_TYPE_ID}
        assert set(addresses) == {"snd-local-sockaddr", "rcv-local-sockaddr"}
        rcv, snd = addresses["rcv-local-sockaddr"], addresses["snd-local-sockaddr"]
        assert rcv.channel_status_id == status_ids[RECEIVE_CHANNEL_STATUS_TYPE_ID]
        assert snd.channel_status_id == status_ids[SEND_CHANNEL_STATUS_TYPE_ID]
        host, bound_port = rcv.local_address.rsplit(":", 1)
        assert host == "127.0.0.1" and int(bound_port) > 0
        assert rcv.label == f"rcv-local-sockaddr: {rcv.channel_status_id} {rcv.local_address}"
        assert rcv.value == snd.value == 1  # active
        samples = scrape(CncCollector(driver.aeron_dir))
        exported = {dict(labels)["address"] for (name, labels), _ in samples.items() if name == "aeron_local_socket_address"}
        assert rcv.local_address in exported and snd.local_address in exported
    # closed with their endpoints
    _until(lambda: not [c for c in _counters(driver) if c.type_id == LOCAL_SOCKET_ADDRESS_TYPE_ID])


def test_a_mdc_publication_counts_its_receivers(embedded_driver) -> None:
    driver = embedded_driver()
    control = f"127.0.0.1:{free_port()}"
    channel = f"aeron:udp?control={control}|control-mode=dynamic"
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        publication = aeron.add_publication(channel, 21)
        for _ in range(2):
            aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{free_port()}|control={control}", 21)

        def fc_receivers() -> list[CounterInfo]:
            return [c for c in _counters(driver) if c.type_id == FLOW_CONTROL_RECEIVERS_TYPE_ID]

        _until(lambda: fc_receivers() and fc_receivers()[0].value == 2)
        [counter] = fc_receivers()
        assert counter.label == f"fc-receivers: {publication.registration_id} {publication.session_id} 21 {channel}"
        assert (counter.session_id, counter.stream_id, counter.channel) == (publication.session_id, 21, channel)
        # a unicast publication has none
        aeron.add_publication(f"aeron:udp?endpoint=127.0.0.1:{free_port()}", 22)
        assert len(fc_receivers()) == 1


def test_retransmitted_bytes_duty_cycles_and_mapped_bytes_are_counted(embedded_driver) -> None:
    driver = embedded_driver(receive_data_loss_rate=0.2, receive_data_loss_seed=7)
    mapped_at_start = _system(driver, SC.BYTES_CURRENTLY_MAPPED)
    assert mapped_at_start > 0  # cnc.dat and the loss report
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}|term-length=64k"
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        subscription = aeron.add_subscription(channel, 31)
        publication = aeron.add_publication(channel, 31)
        received = sent = 0

        def count(*_args: object) -> None:
            nonlocal received
            received += 1

        def step() -> None:
            nonlocal sent
            if sent < 200 and publication.offer(b"m" * 100) > 0:
                sent += 1
            subscription.poll(count, 10)

        _until(lambda: received == 200, step)
        assert _system(driver, SC.RETRANSMITTED_BYTES) >= _system(driver, SC.RETRANSMITS_SENT) * 100 > 0
        # the publication's and the image's logs (two 64 KiB-term logs), seen on the conductor's timer
        _until(lambda: _system(driver, SC.BYTES_CURRENTLY_MAPPED) >= mapped_at_start + 2 * 3 * 64 * 1024)
    for longest in (SC.CONDUCTOR_MAX_CYCLE_TIME, SC.SENDER_MAX_CYCLE_TIME, SC.RECEIVER_MAX_CYCLE_TIME):
        assert 0 < _system(driver, longest) < 10**10, longest.name
    stat = subprocess.run(
        [sys.executable, "-m", "driver", "stat", "--once", "--dir", str(driver.aeron_dir)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert stat.returncode == 0, stat.stderr
    for label in ("Retransmitted bytes", "Sender max cycle time doing its work in ns", "Bytes currently mapped"):
        assert label in stat.stdout
    samples = scrape(CncCollector(driver.aeron_dir))
    names = {name for name, _ in samples}
    assert {
        "aeron_retransmitted_bytes_total",
        "aeron_sender_max_cycle_time_doing_its_work_in_ns",
        "aeron_bytes_currently_mapped",
        "aeron_software_version",
    } <= names
