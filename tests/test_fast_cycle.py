"""The SHARED runner's native steady-state cycle (driver/fast_cycle.py): request/answer traffic over UDP is
served by native cycles and arrives whole and in order; whatever needs the agents (a client's command, a
flow-control stall) still gets them; it can be switched off, and a runner shared with another agent keeps the
Python cycle."""

from __future__ import annotations

import time
from collections.abc import Callable

from driver.client import Aeron
from driver.status.system_counters import SystemCounterDescriptor as SC
from tests.support import PlainAgent, free_port

EXCHANGES = 400


def _echo_exchanges(client: Aeron, count: int, midway: Callable[[], None] | None = None) -> list[int]:
    """``count`` requests on one UDP stream, each answered on another before the next goes (a round trip
    each, as Aeron's Ping and Pong); returns the numbers the answers carried, in arrival order. ``midway`` runs
    after half of them."""
    request_channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}|term-length=64k"
    answer_channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}|term-length=64k"
    requests_in = client.add_subscription(request_channel, 10)
    answers_in = client.add_subscription(answer_channel, 11)
    requests_out = client.add_publication(request_channel, 10)
    answers_out = client.add_publication(answer_channel, 11)
    pending: list[bytes] = []
    answers: list[int] = []

    def on_request(buffer, offset: int, length: int, header) -> None:
        pending.append(buffer.get_bytes(offset, length))

    def on_answer(buffer, offset: int, length: int, header) -> None:
        answers.append(int.from_bytes(buffer.get_bytes(offset, length)[:4], "little"))

    deadline = time.monotonic() + 30
    while not (requests_out.is_connected and answers_out.is_connected):
        assert time.monotonic() < deadline, "the streams did not connect"
        time.sleep(0.001)
    for n in range(count):
        if n == count // 2 and midway is not None:
            midway()
        while requests_out.offer(n.to_bytes(4, "little") * 8) < 0:
            assert time.monotonic() < deadline, f"request {n} not accepted"
        while len(answers) <= n:
            assert time.monotonic() < deadline, f"no answer to request {n}"
            requests_in.poll(on_request, 10)
            while pending:
                if answers_out.offer(pending[0]) > 0:
                    pending.pop(0)
            answers_in.poll(on_answer, 10)
    for resource in (requests_out, answers_out, requests_in, answers_in):
        resource.close()
    return answers


def test_request_and_answer_traffic_is_served_by_native_cycles(embedded_driver) -> None:
    driver = embedded_driver(threading_mode="SHARED")
    with Aeron.connect(aeron_dir=driver.aeron_dir) as client:
        received_before = client.counters_reader.get_counter_value(SC.BYTES_RECEIVED.id)
        added = []

        def add_publication() -> None:
            # A client's command while native cycles run: the ring's tail hands back to the agents, which answer
            # (add_publication waits for that answer).
            added.append(client.add_publication("aeron:ipc", 99))

        assert _echo_exchanges(client, EXCHANGES, add_publication) == list(range(EXCHANGES))
        assert added[0].registration_id > 0
        fast = driver.driver._runners[0].fast
        assert fast is not None
        # Native cycles served a good part of the round trips' wake-ups (a client's offer to send, a datagram to
        # rebuild); how many depends on the timing of the client, which shares this process.
        assert fast.cycles > EXCHANGES // 4
        # The native receives are counted as the Python receiver counts them: every request and answer
        # (2 x 64-byte frames per round trip) at least.
        received = client.counters_reader.get_counter_value(SC.BYTES_RECEIVED.id) - received_before
        assert received >= EXCHANGES * 2 * 64


def test_switched_off_every_wake_up_runs_the_python_cycle(embedded_driver) -> None:
    driver = embedded_driver(threading_mode="SHARED", native_cycle=False)
    with Aeron.connect(aeron_dir=driver.aeron_dir) as client:
        assert _echo_exchanges(client, 50) == list(range(50))
    assert driver.driver._runners[0].fast is None


def test_a_runner_shared_with_another_agent_keeps_the_python_cycle(embedded_driver) -> None:
    driver = embedded_driver(threading_mode="SHARED", on_created=lambda d: d.add_agent(PlainAgent(), share_runner=True))
    with Aeron.connect(aeron_dir=driver.aeron_dir) as client:
        assert _echo_exchanges(client, 20) == list(range(20))
    assert [runner.fast for runner in driver.driver._runners] == [None]


def test_a_stream_held_by_flow_control_arrives_whole(embedded_driver) -> None:
    """A publisher far ahead of a subscriber that has not read yet: the native cycle hands the stall back to the
    sender, which counts it, and sends nothing beyond the receiver's window; once the subscriber reads, every
    message arrives in order."""
    driver = embedded_driver(threading_mode="SHARED")
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}|term-length=64k"
    with Aeron.connect(aeron_dir=driver.aeron_dir) as client:
        subscription = client.add_subscription(channel, 5)
        publication = client.add_publication(channel, 5)
        deadline = time.monotonic() + 30
        while not publication.is_connected:
            assert time.monotonic() < deadline
            time.sleep(0.001)
        limits_before = client.counters_reader.get_counter_value(SC.SENDER_FLOW_CONTROL_LIMITS.id)
        over_runs_before = client.counters_reader.get_counter_value(SC.FLOW_CONTROL_OVER_RUNS.id)
        count, sent, received = 3000, 0, []

        def on_message(buffer, offset: int, length: int, header) -> None:
            received.append(int.from_bytes(buffer.get_bytes(offset, length)[:4], "little"))

        # The subscriber does not read until the publisher has been held back for a while.
        held_since = None
        while held_since is None or time.monotonic() - held_since < 0.2:
            assert time.monotonic() < deadline, f"never held back: sent {sent}"
            if publication.offer(sent.to_bytes(4, "little") * 16) > 0:
                sent += 1
                held_since = None
            elif held_since is None:
                held_since = time.monotonic()
        assert sent < count
        while len(received) < count:
            assert time.monotonic() < deadline, f"sent {sent}, received {len(received)}"
            while sent < count and publication.offer(sent.to_bytes(4, "little") * 16) > 0:
                sent += 1
            subscription.poll(on_message, 100)
        assert received == list(range(count))
        assert client.counters_reader.get_counter_value(SC.SENDER_FLOW_CONTROL_LIMITS.id) > limits_before
        # Nothing was sent beyond the receiver's window: the native bursts kept to the sender limit.
        assert client.counters_reader.get_counter_value(SC.FLOW_CONTROL_OVER_RUNS.id) == over_runs_before
