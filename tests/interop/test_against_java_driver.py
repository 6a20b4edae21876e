"""Our tools and Python client against the real Aeron 1.15.1 Java driver (one driver for the module)."""

from __future__ import annotations

import re
import time

import pytest

pytestmark = pytest.mark.interop

SYSTEM_COUNTER_IDS = list(range(25))
CLIENT_HEARTBEAT_TYPE_ID = 11


def test_our_stat_matches_aeron_stat(java_driver, peers, run_driver_cli, cnc):
    ours = run_driver_cli("stat", "--dir", java_driver.aeron_dir, "--once", timeout=30)
    assert ours.returncode == 0, ours.stderr
    java = peers.aeron_stat(java_driver.aeron_dir)
    our_screen = cnc.parse_stat(ours.stdout)

    assert list(java.counters)[:25] == SYSTEM_COUNTER_IDS
    assert list(our_screen.counters)[:25] == SYSTEM_COUNTER_IDS, ours.stdout
    # Same labels, and same `%3d: %,20d - %s` lines (the idle driver's system counters do not move).
    assert [our_screen.counters[i].raw for i in SYSTEM_COUNTER_IDS] == [
        java.counters[i].raw for i in SYSTEM_COUNTER_IDS
    ]
    # Apart from AeronStat's header, ==== rule and closing --, every line is a counter line.
    other = [line for line in ours.stdout.splitlines() if not cnc.parse_stat([line]).counters]
    assert len(other) <= 3 and all("Aeron Stat" in line or set(line) <= set("=- ") for line in other), (
        ours.stdout
    )


def test_our_stat_formats_large_values_like_java(java_driver, peers, run_driver_cli, cnc):
    from driver.client import Aeron

    values = [0, 7, 1_234, 9_876_543_210, -42, 2**63 - 1]
    with Aeron.connect(aeron_dir=str(java_driver.aeron_dir), timeout_s=10.0) as aeron:
        counters = [aeron.add_counter(1003, f"fmt-{i}") for i in range(len(values))]
        try:
            for counter, value in zip(counters, values, strict=True):
                counter.set(value)
            ours = cnc.parse_stat(run_driver_cli("stat", "--dir", java_driver.aeron_dir, "--once").stdout)
            java = peers.aeron_stat(java_driver.aeron_dir)
            for counter, value in zip(counters, values, strict=True):
                assert java.counters[counter.id].value == value
                assert ours.counters[counter.id].raw == java.counters[counter.id].raw
        finally:
            for counter in counters:
                counter.close()


def test_python_client_counter_seen_by_aeron_stat(java_driver, peers, cnc):
    from driver.client import Aeron

    key = b"py-key\x00\x01"
    with Aeron.connect(aeron_dir=str(java_driver.aeron_dir), timeout_s=10.0) as aeron:
        client_id = aeron.client_id
        counter = aeron.add_counter(type_id=1002, label="py-interop-counter", key=key)
        counter.set(777)
        assert counter.get() == 777
        assert counter.id >= 25

        screen = peers.aeron_stat(java_driver.aeron_dir)
        assert screen.counters[counter.id].label == "py-interop-counter"
        assert screen.counters[counter.id].value == 777
        heartbeat_label = f"client-heartbeat: {client_id}"
        assert any(line.label == heartbeat_label for line in screen.counters.values()), screen.raw

        raw = java_driver.counters()[counter.id]
        assert (raw.type_id, raw.key[: len(key)], raw.label) == (1002, key, "py-interop-counter")
        heartbeat = next(c for c in java_driver.counters().values() if c.label == heartbeat_label)
        assert heartbeat.type_id == CLIENT_HEARTBEAT_TYPE_ID

        counter.close()
        assert counter.id not in java_driver.counters()  # REMOVE_COUNTER is answered before close() returns

    # CLIENT_CLOSE: the Java driver frees the client's heartbeat counter at its next timer tick (1 s).
    cnc.wait_for(
        lambda: heartbeat.id not in java_driver.counters(), 3.0, what="the heartbeat counter to be freed"
    )
    assert java_driver.alive(), java_driver.log()


def test_java_counter_visible_through_python_client(java_driver, spawn_java):
    from driver.client import Aeron

    client = spawn_java(
        "CounterClient",
        java_driver.aeron_dir,
        "--hold",
        "--label",
        "java-interop-counter",
        "--value",
        "31337",
        stdin=True,
    )
    text = "\n".join(client.read_until("^READY$", 30))
    match = re.search(r"^COUNTER (\d+) (-?\d+)$", text, re.MULTILINE)
    assert match, text
    counter_id = int(match[1])

    seen = {}
    with Aeron.connect(aeron_dir=str(java_driver.aeron_dir), timeout_s=10.0) as aeron:
        reader = aeron.counters_reader
        assert reader.get_counter_label(counter_id) == "java-interop-counter"
        assert reader.get_counter_value(counter_id) == 31337
        reader.for_each(lambda cid, type_id, key, label: seen.__setitem__(cid, (type_id, label)))
    assert seen[counter_id] == (1001, "java-interop-counter")
    assert all(seen[i][0] == 0 for i in range(25))

    client.write_line("close")
    assert client.wait(30) == 0, client.stderr_text()
    assert client.lines[-1] == "CLOSED"


def test_java_driver_still_healthy(java_driver, run_java):
    """The module's driver survived everything above and still serves a fresh Java client."""
    deadline = time.monotonic() + 30
    result = run_java("CounterClient", java_driver.aeron_dir, timeout=max(1.0, deadline - time.monotonic()))
    assert result.returncode == 0 and result.stdout.rstrip().endswith("CLOSED"), result.stderr
