"""Recording live publishers through the HTTP API and replaying the data sets: exact contents, filters, timing,
repeat, cancel (docs/service.md sections 4 and 5)."""

from __future__ import annotations

import threading
import time

import pytest

from driver.client import FragmentAssembler
from tests.support import wait_for
from tests.support.service_env import ServiceEnv

API = "/api/v1"


class Publisher(threading.Thread):
    """Offers ``payload(i)`` every ``interval_s`` on a publication until stopped or ``count`` are sent."""

    def __init__(self, env: ServiceEnv, channel: str, stream_id: int, interval_s: float, count: int | None = None,
                 tag: str = "") -> None:
        super().__init__(daemon=True)
        self.publication = env.aeron.add_publication(channel, stream_id)
        self.interval_s, self.count, self.tag = interval_s, count, tag or f"{stream_id}"
        self.sent: list[bytes] = []
        self.stop_flag = threading.Event()

    def run(self) -> None:
        next_at = time.monotonic()
        i = 0
        while not self.stop_flag.is_set() and (self.count is None or i < self.count):
            data = f"{self.tag}:{i:06d}".encode() + bytes(20)
            while self.publication.offer(data) < 0 and not self.stop_flag.is_set():
                time.sleep(0.0001)
            self.sent.append(data)
            i += 1
            next_at += self.interval_s
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)

    def stop(self) -> None:
        self.stop_flag.set()
        self.join(5)
        self.publication.close()


class Receiver:
    """Collects (arrival time, payload) of a subscription, polled from a thread."""

    def __init__(self, env: ServiceEnv, channel: str, stream_id: int) -> None:
        self.subscription = env.aeron.add_subscription(channel, stream_id)
        self.received: list[tuple[float, bytes]] = []
        self._stop = threading.Event()
        self._assembler = FragmentAssembler(
            lambda buf, off, length, _h: self.received.append((time.monotonic(), buf.get_bytes(off, length)))
        )
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.subscription.poll(self._assembler, 256) == 0:
                time.sleep(0.0002)

    @property
    def payloads(self) -> list[bytes]:
        return [p for _, p in self.received]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.subscription.close()


def record(env: ServiceEnv, body: dict, timeout_s: float = 30.0) -> dict:
    response = env.client.post(f"{API}/record", json=body)
    assert response.status_code == 202, response.text
    status = wait_for_state(env, "record", timeout_s)
    assert status["state"] == "done", status
    return env.client.get(f"{API}/datasets/{status['dataset_id']}").json()


def wait_for_state(env: ServiceEnv, job: str, timeout_s: float = 30.0) -> dict:
    status: dict = {}

    def finished() -> bool:
        nonlocal status
        status = env.client.get(f"{API}/{job}").json()
        return not status["running"]

    wait_for(finished, timeout_s, f"the {job} job to end")
    return status


def replay_payloads(env: ServiceEnv, body: dict, channel: str, stream_id: int, timeout_s: float = 30.0):
    receiver = Receiver(env, channel, stream_id)
    try:
        response = env.client.post(f"{API}/replay", json=body)
        assert response.status_code == 202, response.text
        status = wait_for_state(env, "replay", timeout_s)
        assert status["state"] == "done", status
        wait_for(lambda: len(receiver.received) >= status["messages"], 5, "the replayed messages")
        return receiver.received, status
    finally:
        receiver.close()


def test_record_a_count_on_several_streams_holds_exactly_that_many(service_env: ServiceEnv) -> None:
    env = service_env
    publishers = [Publisher(env, "aeron:ipc", sid, 0.0005) for sid in (1001, 1002)]
    for p in publishers:
        p.start()
    try:
        dataset = record(env, {"streams": [{"channel": "aeron:ipc", "stream_id": 1001},
                                           {"channel": "aeron:ipc", "stream_id": 1002}],
                               "max_messages": 500, "name": "two streams"})
    finally:
        for p in publishers:
            p.stop()
    assert dataset["messages"] == 500
    assert dataset["name"] == "two streams"
    assert {r["source_stream_id"] for r in dataset["recordings"]} == {1001, 1002}
    # The replay to one target holds those 500 messages, each one a message a publisher sent, in order per stream.
    received, status = replay_payloads(
        env, {"dataset_id": dataset["id"], "rate": 50, "stream_id": 2001}, "aeron:ipc", 2001
    )
    assert status["messages"] == 500 and status["repeats_done"] == 1
    payloads = [p for _, p in received]
    assert len(payloads) == 500
    for p in publishers:
        mine = [x for x in payloads if x.startswith(p.tag.encode() + b":")]
        assert mine == p.sent[p.sent.index(mine[0]):][: len(mine)]
