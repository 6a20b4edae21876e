"""The real Aeron 1.15.1 Java client (tests/interop/java/CounterClient.java) against either driver."""

from __future__ import annotations

import re
import time

import pytest

pytestmark = pytest.mark.interop

CLIENT_HEARTBEAT_TYPE_ID = 11
CLIENT_CLOSES_TYPE_ID = 1100  # ours alone
CLIENT_LIVENESS_TIMEOUTS_ID = 24
FIRST_FREE_COUNTER_ID = 25  # after the 25 system counters

LIVENESS_TIMEOUT_S = 2.0
TIMER_INTERVAL_S = 1.0  # the driver checks client liveness once per timer interval (aeron.timer.interval)
KEEPALIVE_INTERVAL_S = 0.5  # the client's keepalive period: its last keepalive is at most this old at SIGKILL
POLL_MARGIN_S = 0.5  # our polling (every 20 ms) and scheduling slack on a busy 2-core machine


def _parse_client_output(lines):
    text = "\n".join(lines)
    client = re.search(r"^CLIENT (-?\d+)$", text, re.MULTILINE)
    counter = re.search(r"^COUNTER (\d+) (-?\d+)$", text, re.MULTILINE)
    value = re.search(r"^VALUE (-?\d+)$", text, re.MULTILINE)
    label = re.search(r"^LABEL (.*)$", text, re.MULTILINE)
    assert client and counter and value and label, text
    return int(client[1]), int(counter[1]), int(counter[2]), int(value[1]), label[1]


def _client_closes(counters) -> int:
    (closes,) = [c for c in counters.values() if c.type_id == CLIENT_CLOSES_TYPE_ID]
    assert closes.label == "Client closes"
    return closes.value


def _heartbeat_counter(counters, client_id):
    matches = [c for c in counters.values() if c.type_id == CLIENT_HEARTBEAT_TYPE_ID]
    assert len(matches) == 1, matches
    (heartbeat,) = matches
    assert heartbeat.label == f"client-heartbeat: {client_id}"
    assert int.from_bytes(heartbeat.key[:8], "little", signed=True) == client_id
    return heartbeat


@pytest.mark.parametrize("kind", ["java", "ours"])
def test_counter_client_round_trip(kind, drivers, spawn_java, cnc):
    driver = drivers.start(kind)
    client = spawn_java("CounterClient", driver.aeron_dir, "--hold", "--value", "4242", stdin=True)
    client_id, counter_id, registration_id, value, label = _parse_client_output(
        client.read_until("^READY$", 30)
    )
    assert (value, label) == (4242, "interop-counter")
    assert counter_id >= FIRST_FREE_COUNTER_ID
    assert registration_id > client_id >= 0

    counters = driver.counters()
    assert counters[counter_id].type_id == 1001
    assert counters[counter_id].label == "interop-counter"
    assert counters[counter_id].value == 4242
    heartbeat = _heartbeat_counter(counters, client_id)
    assert abs(heartbeat.value - time.time() * 1000) < 10_000  # epoch ms of the last keepalive

    client.write_line("close")
    assert client.wait(30) == 0, client.stderr_text()
    assert client.lines[-1] == "CLOSED"
    assert counter_id not in driver.counters()  # REMOVE_COUNTER was answered before close() returned
    # CLIENT_CLOSE: the driver drops the client at its next timer tick; Aeron 1.15.1 counts that as a liveness
    # timeout too (the [java] case pins this quirk), ours as a close ("Client closes", docs/commands.md).
    timeouts = 1 if kind == "java" else 0
    cnc.wait_for(
        lambda: (
            heartbeat.id not in driver.counters()
            and driver.counters()[CLIENT_LIVENESS_TIMEOUTS_ID].value == timeouts
            and (kind == "java" or _client_closes(driver.counters()) == 1)
        ),
        TIMER_INTERVAL_S + 2.0,
        what="the closed client's heartbeat counter to be freed",
    )
    assert driver.alive(), driver.log()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["java", "ours"])
def test_killed_client_times_out(kind, drivers, spawn_java, cnc):
    driver = drivers.start(kind, {"aeron.client.liveness.timeout": int(LIVENESS_TIMEOUT_S * 1e9)})
    assert driver.header().client_liveness_timeout_ns == int(LIVENESS_TIMEOUT_S * 1e9)
    client = spawn_java("CounterClient", driver.aeron_dir, "--hang")
    client_id, counter_id, _, _, _ = _parse_client_output(client.read_until("^READY$", 30))
    counters = driver.counters()
    assert counters[counter_id].label == "interop-counter"
    heartbeat = _heartbeat_counter(counters, client_id)
    assert counters[CLIENT_LIVENESS_TIMEOUTS_ID].value == 0

    client.kill()
    killed_at = time.monotonic()

    def timed_out():
        now = driver.counters()
        return (
            counter_id not in now and heartbeat.id not in now and now[CLIENT_LIVENESS_TIMEOUTS_ID].value == 1
        )

    # Bound: the liveness timeout + one timer interval (the check runs once per tick) + a small polling margin.
    bound = LIVENESS_TIMEOUT_S + TIMER_INTERVAL_S + POLL_MARGIN_S
    cnc.wait_for(timed_out, bound, interval=0.02, what="the killed client's counters to be freed")
    elapsed = time.monotonic() - killed_at
    # ...and not much earlier than the timeout allows: its last keepalive was at most one keepalive period old.
    assert elapsed >= LIVENESS_TIMEOUT_S - KEEPALIVE_INTERVAL_S - 0.1, elapsed
    assert driver.alive(), driver.log()
    assert driver.counters()[CLIENT_LIVENESS_TIMEOUTS_ID].value == 1
