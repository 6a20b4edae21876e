"""Two publications sharing one UDP send endpoint, closed one after the other with different lingers
(real loopback, embedded driver, Python client): the endpoint closes only when the last one has lingered
out, no send ever hits a closed socket (nothing in the driver's error log) and both subscribers get
every message, whichever closes first and whichever lingers longer."""

from __future__ import annotations

import socket
import time

import pytest

from driver.client import Aeron
from driver.concurrent.error_log import ErrorLogReader, format_error_log
from driver.status.system_counters import SystemCounterDescriptor as SC

COUNT = 500


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout_s: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


@pytest.mark.parametrize("close_first", ["short-linger", "long-linger"])
@pytest.mark.parametrize("sharing", ["stream-ids", "session-ids"])
def test_shared_send_endpoint_closes_after_its_last_publication(
    embedded_driver, close_first: str, sharing: str
) -> None:
    driver = embedded_driver(timer_interval_ns=10_000_000)
    conductor = driver.driver.conductor
    port = free_port()
    base = f"aeron:udp?endpoint=127.0.0.1:{port}|term-length=64k"
    with Aeron.connect(aeron_dir=driver.aeron_dir) as client:
        if sharing == "stream-ids":
            specs = [(f"{base}|linger=50ms", 1, base), (f"{base}|linger=400ms", 2, base)]
        else:  # one stream, two sessions: each subscriber takes its session only
            specs = [
                (f"{base}|linger=50ms|session-id=1001", 7, f"{base}|session-id=1001"),
                (f"{base}|linger=400ms|session-id=1002", 7, f"{base}|session-id=1002"),
            ]
        subscriptions = [client.add_subscription(sub_channel, stream) for _, stream, sub_channel in specs]
        # Two sessions on one stream need exclusive publications (a shared one has one session).
        add = client.add_publication if sharing == "stream-ids" else client.add_exclusive_publication
        publications = [add(channel, stream) for channel, stream, _ in specs]
        assert len(conductor._send_endpoints) == 1  # shared
        received: list[list[int]] = [[], []]
        handlers = [
            lambda b, o, n, h, r=r: r.append(int.from_bytes(b.get_bytes(o, n)[:4], "little"))
            for r in received
        ]
        sent = [0, 0]
        deadline = time.monotonic() + 30
        while any(len(r) < COUNT for r in received):
            assert time.monotonic() < deadline, f"sent {sent}, received {[len(r) for r in received]}"
            for i, publication in enumerate(publications):
                if sent[i] < COUNT and publication.offer(sent[i].to_bytes(4, "little") * 8) > 0:
                    sent[i] += 1
            for subscription, handler in zip(subscriptions, handlers, strict=True):
                subscription.poll(handler, 100)
        assert received == [list(range(COUNT)), list(range(COUNT))]

        order = publications if close_first == "short-linger" else publications[::-1]
        order[0].close()
        time.sleep(0.1)  # the first lingers out (or not) while the second still sends
        order[1].close()
        wait_for(lambda: not conductor._send_endpoints, what="the shared endpoint to close")
        wait_for(lambda: not conductor._network_publications, what="both publications to go")
        time.sleep(0.1)  # any late send on the closed socket would show up now
        for subscription in subscriptions:
            subscription.close()

    errors = driver.driver.cnc.error_log_buffer
    assert not ErrorLogReader.has_errors(errors), format_error_log(errors)
    assert driver.driver.system_counters.get(SC.ERRORS).get() == 0
