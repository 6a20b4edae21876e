"""A rolling capture (docs/service.md section 4): one record job that cuts a data set every N seconds or bytes
until stopped, the cuts seamless (each recording goes on at the next data set's start position), its progress in
the record status."""

from __future__ import annotations

import time

from tests.support.service_env import (
    API,
    Publisher,
    ServiceEnv,
    replay_payloads,
    wait_for_state,
)
from tests.support.wait import wait_for

STREAM = 1101


def _seqs(payloads: list[bytes], tag: str) -> list[int]:
    return [int(p[len(tag) + 1 : len(tag) + 7]) for p in payloads if p.startswith(f"{tag}:".encode())]


def assert_seamless(datasets: list[dict]) -> None:
    """Each source's recording in a data set starts where the previous data set's stopped."""
    last: dict[int, int] = {}
    for dataset in sorted(datasets, key=lambda d: d["capture_seq"]):
        for rec in dataset["recordings"]:
            session = rec["source_session_id"]
            if session in last:
                assert rec["start_position"] == last[session], (dataset["capture_seq"], rec, last)
            last[session] = rec["stop_position"]


def test_a_capture_cut_by_bytes_is_seamless_and_counts_each_cut(service_env: ServiceEnv) -> None:
    env = service_env
    publisher = Publisher(env, "aeron:ipc", STREAM, 0.0005, tag="r")
    publisher.start()
    try:
        body = {
            "streams": [{"channel": "aeron:ipc", "stream_id": STREAM}],
            "rotate": {"every_bytes": 64 * 1024},
            "name": "ring",
        }
        response = env.client.post(f"{API}/record", json=body)
        assert response.status_code == 202, response.text
        first = response.json()
        assert first["rolling"]["every_bytes"] == 64 * 1024 and first["rolling"]["dataset_seq"] == 1
        wait_for(
            lambda: env.client.get(f"{API}/record").json()["rolling"]["datasets_cut"] >= 4,
            30,
            "four cuts",
        )
        running = env.client.get(f"{API}/record").json()
        assert running["state"] == "running" and running["rolling"]["dataset_seq"] >= 5
        assert running["dataset_id"] != first["dataset_id"] and running["name"].startswith("ring-")
        stopped = env.client.delete(f"{API}/record").json()
    finally:
        publisher.stop()
    assert stopped["state"] == "cancelled", stopped
    datasets = [d for d in env.client.get(f"{API}/datasets").json()["datasets"] if d["capture"]]
    assert {d["capture"] for d in datasets} == {first["dataset_id"]}
    seqs = sorted(d["capture_seq"] for d in datasets)
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) == stopped["rolling"]["datasets_cut"]
    assert [d["name"] for d in sorted(datasets, key=lambda d: d["capture_seq"])][:2] == [
        "ring-0001",
        "ring-0002",
    ]
    # Each cut is at the first message start past the bound; nothing is lost or counted twice between cuts.
    for dataset in datasets[:-1]:
        assert 64 * 1024 <= dataset["bytes"] < 64 * 1024 + 256 * 1024, dataset["bytes"]
    assert_seamless(datasets)
    assert sum(d["messages"] for d in datasets) == stopped["messages"]
    assert sum(d["bytes"] for d in datasets) == stopped["bytes"]
    # A middle data set replays its own run of the stream, whole.
    middle = sorted(datasets, key=lambda d: d["capture_seq"])[1]
    received, status = replay_payloads(
        env, {"dataset_id": middle["id"], "rate": 1000, "stream_id": 1102}, "aeron:ipc", 1102
    )
    seqs_replayed = _seqs([p for _, p in received], "r")
    assert status["messages"] == middle["messages"] == len(seqs_replayed)
    assert seqs_replayed == list(range(seqs_replayed[0], seqs_replayed[0] + len(seqs_replayed)))


def test_a_capture_cut_every_second_and_stopped_in_the_middle(service_env: ServiceEnv) -> None:
    env = service_env
    publisher = Publisher(env, "aeron:ipc", STREAM, 0.002, tag="t")
    publisher.start()
    try:
        body = {"streams": [{"channel": "aeron:ipc", "stream_id": STREAM}], "rotate": {"every_s": 1}}
        assert env.client.post(f"{API}/record", json=body).status_code == 202
        started = time.monotonic()
        wait_for(
            lambda: env.client.get(f"{API}/record").json()["rolling"]["datasets_cut"] >= 2, 20, "two cuts"
        )
        assert time.monotonic() - started >= 1.9
        assert env.client.post(f"{API}/record", json=body).status_code == 409
        stopped = env.client.delete(f"{API}/record").json()
    finally:
        publisher.stop()
    datasets = [d for d in env.client.get(f"{API}/datasets").json()["datasets"] if d["capture"]]
    assert len(datasets) == stopped["rolling"]["datasets_cut"] >= 3  # the one cut short by the stop is kept
    for dataset in sorted(datasets, key=lambda d: d["capture_seq"])[:-1]:
        assert 0.9 <= dataset["span_s"] <= 1.6, dataset["span_s"]
    assert_seamless(datasets)
    assert wait_for_state(env, "record")["state"] == "cancelled"


def test_bad_rotate_parameters_are_422s_naming_them(service_env: ServiceEnv) -> None:
    env = service_env
    streams = [{"channel": "aeron:ipc", "stream_id": STREAM}]
    cases = {
        "rotate: Value error, every_s or every_bytes is required": {"rotate": {}},
        "rotate.every_s: Input should be greater than or equal to 1": {"rotate": {"every_s": 0.5}},
        "rotate.every_bytes: Input should be greater than or equal to 65536": {
            "rotate": {"every_bytes": 100}
        },
        "max_messages does not combine with rotate": {"rotate": {"every_s": 10}, "max_messages": 5},
        "rotate.every: Extra inputs are not permitted": {"rotate": {"every": 10}},
        "rotate.every_s: Input should be a valid number": {"rotate": {"every_s": "10"}},
    }
    for message, extra in cases.items():
        response = env.client.post(f"{API}/record", json={"streams": streams, **extra})
        assert response.status_code == 422, (extra, response.text)
        assert message in response.json()["error"], (message, response.json()["error"])
    assert env.client.get(f"{API}/record").json()["state"] == "idle"
