"""The record & replay service (docs/service.md section 4) records a live Java 1.15.1 publisher (MessageSource,
fragmented messages included) and a Python one on two streams with a count limit: the data set holds exactly the
limit's messages, each stream's a prefix of what it sent, byte for byte on replay."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.support.service_env import (
    API,
    Publisher,
    replay_payloads,
    start_service_env,
    stop_service_env,
    wait_for_state,
)

pytestmark = pytest.mark.interop

SIZES = (32, 3000, 200)  # 3000 bytes: fragmented at the default 1408-byte MTU
JAVA_COUNT = 300


def java_message(k: int) -> bytes:
    length = SIZES[k % len(SIZES)]
    return bytes((k * 31 + i) & 0xFF for i in range(length))


def test_java_and_python_publishers_recorded_with_a_count(tmp_path: Path, spawn_java) -> None:
    env, archive = start_service_env(tmp_path)
    try:
        limit = JAVA_COUNT + 100
        streams = [{"channel": "aeron:ipc", "stream_id": 1001}, {"channel": "aeron:ipc", "stream_id": 1002}]
        assert (
            env.client.post(f"{API}/record", json={"streams": streams, "max_messages": limit}).status_code
            == 202
        )
        time.sleep(0.05)
        python = Publisher(env, "aeron:ipc", 1002, 0.002, count=200)
        python.start()
        source = spawn_java(
            "MessageSource",
            env.driver.aeron_dir,
            "aeron:ipc",
            1001,
            "--sizes",
            ",".join(map(str, SIZES)),
            "--count",
            JAVA_COUNT,
            "--timeout",
            30,
        )
        # The limit may be reached before both are done: then the service leaves their streams (the Java source
        # then waits for a subscriber until stopped), so only the recording's end is awaited.
        status = wait_for_state(env, "record", 60)
        python.stop()
        source.stop()
        assert status["state"] == "done" and status["messages"] == limit
        dataset = env.client.get(f"{API}/datasets/{status['dataset_id']}").json()
        by_stream = {r["source_stream_id"]: r["messages"] for r in dataset["recordings"]}
        assert sum(by_stream.values()) == limit
        received, replay = replay_payloads(
            env, {"dataset_id": dataset["id"], "rate": 50, "stream_id": 2001}, "aeron:ipc", 2001
        )
        payloads = [p for _, p in received]
        assert replay["messages"] == limit == len(payloads)
        from_python = [p for p in payloads if p.startswith(b"1002:")]
        from_java = [p for p in payloads if not p.startswith(b"1002:")]
        assert from_python == python.sent[: len(from_python)]
        assert from_java == [java_message(k) for k in range(len(from_java))]
        assert (len(from_java), len(from_python)) == (by_stream.get(1001, 0), by_stream.get(1002, 0))
    finally:
        stop_service_env(env, archive)
