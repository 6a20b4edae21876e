"""A burst of commands larger than any queue between agents loses nothing: several clients at once add
and then remove hundreds of IPC and UDP publications and subscriptions each (UDP ones make images, so the
receiver's requests to the conductor are in the burst too). With queues of 4 commands every proxy runs on
its backlog; each command still gets its response and the driver ends with nothing left: no
publication, image, endpoint or link (conductor state) and only the driver's own counters in cnc.dat."""

from __future__ import annotations

import socket
import threading
import time

from driver.client import Aeron
from driver.concurrent.counter_types import CLIENT_CLOSES_TYPE_ID, SYSTEM_COUNTER_TYPE_ID
from driver.concurrent.counters import CountersReader
from driver.concurrent.error_log import ErrorLogReader, format_error_log
from driver.status.system_counters import SystemCounterDescriptor as SC

CLIENTS = 6
PAIRS_PER_CLIENT = 100  # a publication and a subscription on one stream, IPC and UDP alternately


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_a_burst_larger_than_any_queue_loses_nothing(embedded_driver, monkeypatch) -> None:
    monkeypatch.setattr("driver.agent.command_queue.COMMAND_QUEUE_CAPACITY", 4)
    embedded = embedded_driver(
        timer_interval_ns=10_000_000,
        publication_linger_timeout_ns=10_000_000,
        image_liveness_timeout_ns=300_000_000,
        client_liveness_timeout_ns=2_000_000_000,
    )
    driver = embedded.driver
    conductor = driver.conductor
    assert driver.sender.commands.capacity == 4
    udp = f"aeron:udp?endpoint=127.0.0.1:{free_port()}|term-length=64k"
    ipc = "aeron:ipc?term-length=64k"
    failures: list[BaseException] = []
    start = threading.Barrier(CLIENTS)

    def client_burst(index: int) -> None:
        try:
            with Aeron.connect(aeron_dir=embedded.aeron_dir) as client:
                start.wait(10)
                held = []
                for i in range(PAIRS_PER_CLIENT):
                    stream_id = 1000 * (index + 1) + i
                    channel = udp if i % 2 else ipc
                    held.append(client.add_subscription(channel, stream_id))
                    held.append(client.add_publication(channel, stream_id))
                for resource in held:
                    resource.close()  # each close waits for the driver's answer too
        except BaseException as e:
            failures.append(e)

    threads = [threading.Thread(target=client_burst, args=(i,)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(t.is_alive() for t in threads), "a client never got its answers"
    assert failures == []

    def nothing_left() -> bool:
        return not (
            conductor._publication_links
            or conductor._subscription_links
            or conductor._ipc_publications
            or conductor._network_publications
            or conductor._images
            or conductor._send_endpoints
            or conductor._receive_endpoints
            or conductor._counter_links
            or conductor.clients
        )

    wait_for(nothing_left, 30, "the driver to free every resource")

    def only_system_counters() -> bool:
        types: list[int] = []
        reader = CountersReader(driver.cnc.counters_metadata_buffer, driver.cnc.counters_values_buffer)
        reader.for_each(lambda _id, type_id, _key, _label: types.append(type_id))
        return set(types) == {SYSTEM_COUNTER_TYPE_ID, CLIENT_CLOSES_TYPE_ID}

    wait_for(only_system_counters, 10, "only the driver's own counters to remain in cnc.dat")
    wait_for(
        lambda: not driver.sender.commands and not driver.receiver.has_pending_commands(),
        5,
        "the agents' queues to empty",
    )
    # The burst really overflowed the queues, and the overflow was counted, not lost.
    assert driver.system_counters.get(SC.SENDER_PROXY_FAILS).get() > 0
    assert driver.system_counters.get(SC.RECEIVER_PROXY_FAILS).get() > 0
    assert driver.sender._publications == [] and driver.sender._endpoints == []
    assert driver.receiver._endpoints == [] and driver.receiver._images == []
    errors = driver.cnc.error_log_buffer
    assert not ErrorLogReader.has_errors(errors), format_error_log(errors)
