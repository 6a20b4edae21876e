"""Recording live publishers through the HTTP API and replaying the data sets: exact contents, filters, timing,
repeat, cancel (docs/service.md sections 4 and 5)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone

import pytest

from driver.archive.recording_index import read_index
from tests.support import free_port, wait_for
from tests.support.service_env import (
    API,
    Publisher,
    Receiver,
    ServiceEnv,
    record,
    replay_payloads,
    wait_for_state,
)


def test_record_a_count_on_several_streams_holds_exactly_that_many(service_env: ServiceEnv) -> None:
    env = service_env
    publishers = [Publisher(env, "aeron:ipc", sid, 0.0005) for sid in (1001, 1002)]
    for p in publishers:
        p.start()
    try:
        dataset = record(
            env,
            {
                "streams": [
                    {"channel": "aeron:ipc", "stream_id": 1001},
                    {"channel": "aeron:ipc", "stream_id": 1002},
                ],
                "max_messages": 500,
                "name": "two streams",
            },
        )
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
        assert mine == p.sent[p.sent.index(mine[0]) :][: len(mine)]


def test_record_for_a_duration_holds_a_run_of_consecutive_messages(service_env: ServiceEnv) -> None:
    env = service_env
    publisher = Publisher(env, "aeron:ipc", 1001, 0.001)
    publisher.start()
    try:
        started = time.monotonic()
        dataset = record(env, {"streams": [{"channel": "aeron:ipc", "stream_id": 1001}], "duration_s": 0.4})
        assert 0.4 <= time.monotonic() - started < 5
    finally:
        publisher.stop()
    assert 0.35 <= dataset["span_s"] < 1.5
    assert 50 < dataset["messages"] < 1000
    received, _ = replay_payloads(env, {"dataset_id": dataset["id"], "rate": 20}, "aeron:ipc", 1001)
    payloads = [p for _, p in received]
    assert len(payloads) == dataset["messages"]
    first = publisher.sent.index(payloads[0])
    assert payloads == publisher.sent[first : first + len(payloads)]


def test_include_and_exclude_filters_on_stream_ids_channels_and_sources(service_env: ServiceEnv) -> None:
    env = service_env
    udp = f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}"
    streams = [("aeron:ipc", 1001), ("aeron:ipc", 1002), (udp, 1003)]
    requested = [{"channel": ch, "stream_id": sid} for ch, sid in streams]
    cases = [
        ({"exclude": {"stream_ids": [1002]}}, {1001, 1003}),
        ({"include": {"channels": ["udp"]}}, {1003}),
        ({"include": {"source_identities": ["127.0.0.1"]}}, {1003}),
        ({"exclude": {"source_identities": ["aeron:ipc"]}, "include": {"stream_ids": [1001, 1003]}}, {1003}),
    ]
    for filters, expected in cases:
        env.client.post(f"{API}/record", json={"streams": requested, "duration_s": 60, **filters})
        runners = [Publisher(env, ch, sid, 0.001, count=100, tag=f"{sid}") for ch, sid in streams]
        for r in runners:  # every stream recorded has the service's subscription before its first message
            if r.publication.stream_id in expected:
                wait_for(lambda r=r: r.publication.is_connected, 10, f"{r.publication} connected")
        time.sleep(0.05)
        runners = [r for r in runners if r.publication.is_connected or r.publication.close()]
        for r in runners:
            r.start()
        for r in runners:
            r.join(10)
        time.sleep(0.2)
        assert env.client.delete(f"{API}/record").status_code == 200
        status = wait_for_state(env, "record")
        for r in runners:
            r.stop()
        dataset = env.client.get(f"{API}/datasets/{status['dataset_id']}").json()
        assert {r["source_stream_id"] for r in dataset["recordings"]} == expected, filters
        assert dataset["messages"] == 100 * len(expected), filters


@pytest.mark.parametrize("seconds", [1.0, pytest.param(4.0, marks=pytest.mark.slow)], ids=["1s", "4s"])
def test_replay_reproduces_the_recorded_timing_at_each_rate_in_order(
    service_env: ServiceEnv, seconds: float
) -> None:
    """The replayed span is the recorded one / rate to within 10 %, and so is each message's offset from the first
    to within 10 % of the span: the median message in the short run, 95 % of them in the long one (the machine
    runs other work: a thread descheduled for 100 ms moves a few arrivals, not the schedule)."""
    env = service_env
    interval_s = 0.02
    count = int(seconds / interval_s)
    publisher = Publisher(env, "aeron:ipc", 1001, interval_s, count=count)
    env.client.post(
        f"{API}/record",
        json={"streams": [{"channel": "aeron:ipc", "stream_id": 1001}], "max_messages": count},
    )
    time.sleep(0.05)
    publisher.start()
    status = wait_for_state(env, "record")
    publisher.stop()
    assert status["messages"] == count
    dataset = env.client.get(f"{API}/datasets/{status['dataset_id']}").json()
    recorded = recorded_times(env, dataset["recordings"][0]["recording_id"], count)
    recorded_span = recorded[-1] - recorded[0]
    assert recorded_span > 0.8 * seconds
    for rate in (1.0, 2.0, 0.5):
        received, _ = replay_payloads(
            env, {"dataset_id": status["dataset_id"], "rate": rate, "stream_id": 2001}, "aeron:ipc", 2001
        )
        assert [p for _, p in received] == publisher.sent  # in order, all of them
        times = [t for t, _ in received]
        span = recorded_span / rate
        assert abs((times[-1] - times[0]) - span) <= 0.1 * span, (rate, times[-1] - times[0], span)
        errors = sorted(
            abs((t - times[0]) - (r - recorded[0]) / rate) for t, r in zip(times, recorded, strict=True)
        )
        within = errors[len(errors) // 2] if seconds < 2 else errors[int(len(errors) * 0.95) - 1]
        assert within <= 0.1 * span, (rate, errors[-5:], span)


def recorded_times(env: ServiceEnv, recording_id: int, count: int) -> list[float]:
    """When the archive recorded each message, from the recording's index (docs/archive.md section 18): the
    time of the first entry whose count includes it (the publisher's gaps are longer than the index interval,
    so each message has entries of its own)."""
    entries = read_index(env.archive_dir, recording_id)
    assert entries is not None
    return [min(int(e["time_ns"]) for e in entries if int(e["count"]) > i) / 1e9 for i in range(count)]


def test_repeat_delivers_the_data_set_that_many_times(service_env: ServiceEnv) -> None:
    env = service_env
    publisher = Publisher(env, "aeron:ipc", 1001, 0.0005, count=200)
    env.client.post(
        f"{API}/record", json={"streams": [{"channel": "aeron:ipc", "stream_id": 1001}], "max_messages": 200}
    )
    time.sleep(0.05)
    publisher.start()
    status = wait_for_state(env, "record")
    publisher.stop()
    received, replay = replay_payloads(
        env,
        {"dataset_id": status["dataset_id"], "rate": 10, "repeat": 3, "stream_id": 2001},
        "aeron:ipc",
        2001,
    )
    assert replay["repeats_done"] == 3 and replay["repeat"] == 3 and replay["messages"] == 600
    assert [p for _, p in received] == publisher.sent * 3


def test_cancel_stops_a_replay_within_100_ms_and_status_follows(service_env: ServiceEnv) -> None:
    env = service_env
    publisher = Publisher(env, "aeron:ipc", 1001, 0.002, count=200)
    env.client.post(
        f"{API}/record", json={"streams": [{"channel": "aeron:ipc", "stream_id": 1001}], "max_messages": 200}
    )
    time.sleep(0.05)
    publisher.start()
    dataset_id = wait_for_state(env, "record")["dataset_id"]
    publisher.stop()
    receiver = Receiver(env, "aeron:ipc", 2001)
    try:
        assert (
            env.client.post(
                f"{API}/replay", json={"dataset_id": dataset_id, "repeat": 5, "stream_id": 2001}
            ).status_code
            == 202
        )
        wait_for(lambda: len(receiver.received) > 50, 10, "the replay to be under way")
        status = env.client.get(f"{API}/replay").json()
        assert status["running"] and status["state"] == "running" and status["messages"] >= 50
        both = env.client.get(f"{API}/status").json()
        assert both["replay"]["running"] and not both["record"]["running"]
        assert both["record"]["state"] == "done" and both["record"]["dataset_id"] == dataset_id
        asked = time.monotonic()
        response = env.client.delete(f"{API}/replay")
        answered = time.monotonic()
        assert response.status_code == 200 and response.json()["state"] == "cancelled"
        assert not response.json()["running"]
        # Stopped when it answers: nothing is forwarded after, and the subscriber gets exactly what was counted.
        assert answered - asked < 0.1, answered - asked
        stopped_at = response.json()["messages"]
        time.sleep(0.3)
        assert env.client.get(f"{API}/replay").json()["messages"] == stopped_at
        wait_for(lambda: len(receiver.received) >= stopped_at, 5, "the messages sent before the cancel")
        time.sleep(0.1)
        assert len(receiver.received) == stopped_at < 5 * 200
    finally:
        receiver.close()
    assert env.client.delete(f"{API}/replay").status_code == 404


def test_a_second_recording_while_one_runs_is_409_and_the_first_goes_on(service_env: ServiceEnv) -> None:
    env = service_env
    body = {"streams": [{"channel": "aeron:ipc", "stream_id": 1001}], "duration_s": 30}
    first = env.client.post(f"{API}/record", json=body).json()
    second = env.client.post(f"{API}/record", json=body)
    assert second.status_code == 409
    assert "already running" in second.json()["error"]
    status = env.client.get(f"{API}/record").json()
    assert status["running"] and status["dataset_id"] == first["dataset_id"]
    cancelled = env.client.delete(f"{API}/record").json()
    assert cancelled["state"] == "cancelled"
    # Each recording is a new data set; none overwrites another.
    third = env.client.post(f"{API}/record", json={**body, "duration_s": 0.1}).json()
    wait_for_state(env, "record")
    ids = {d["id"] for d in env.client.get(f"{API}/datasets").json()["datasets"]}
    assert {first["dataset_id"], third["dataset_id"]} <= ids


def test_replay_of_part_of_a_data_set_some_streams_and_a_time_range(service_env: ServiceEnv) -> None:
    env = service_env
    count = 40
    publishers = [Publisher(env, "aeron:ipc", sid, 0.02, count=count) for sid in (1001, 1002)]
    streams = [{"channel": "aeron:ipc", "stream_id": sid} for sid in (1001, 1002)]
    env.client.post(f"{API}/record", json={"streams": streams, "max_messages": 2 * count})
    time.sleep(0.05)
    for p in publishers:
        p.start()
    status = wait_for_state(env, "record")
    for p in publishers:
        p.stop()
    dataset = env.client.get(f"{API}/datasets/{status['dataset_id']}").json()

    # Only stream 1002, into its own stream id.
    received, _ = replay_payloads(
        env, {"dataset_id": dataset["id"], "rate": 20, "streams": [streams[1]]}, "aeron:ipc", 1002
    )
    assert [p for _, p in received] == publishers[1].sent

    # Stream 1001 between 0.3 s and 0.6 s after the data set's start: the messages recorded then (the index
    # resolves a time to within one interval, 10 ms, earlier never later; the messages are 20 ms apart).
    (rec,) = [r for r in dataset["recordings"] if r["source_stream_id"] == 1001]
    times = recorded_times(env, rec["recording_id"], count)
    start = dataset["start_time_ns"] / 1e9
    expected = [m for m, t in zip(publishers[0].sent, times, strict=True) if 0.3 <= t - start < 0.6]
    received, _ = replay_payloads(
        env,
        {
            "dataset_id": dataset["id"],
            "rate": 20,
            "streams": [streams[0]],
            "stream_id": 2001,
            "time_range": {"start_s": 0.3, "end_s": 0.6},
        },
        "aeron:ipc",
        2001,
    )
    got = [p for _, p in received]
    assert len(expected) >= 10 and set(expected) <= set(got) and len(got) <= len(expected) + 2
    first = publishers[0].sent.index(got[0])
    assert got == publishers[0].sent[first : first + len(got)]

    # The same range in absolute UTC times (another zone's offset means the same instant).
    def iso(seconds: float, zone: timezone = UTC) -> str:
        return datetime.fromtimestamp(start + seconds, zone).isoformat(timespec="microseconds")

    plus_two = timezone(timedelta(hours=2))
    received, _ = replay_payloads(
        env,
        {
            "dataset_id": dataset["id"],
            "rate": 20,
            "streams": [streams[0]],
            "stream_id": 2002,
            "time_range": {"start": iso(0.3), "end": iso(0.6, plus_two)},
        },
        "aeron:ipc",
        2002,
    )
    assert [p for _, p in received] == got

    # Outside the data set, both ways at once, or without a zone: refused, nothing replayed.
    outside = {"dataset_id": dataset["id"], "time_range": {"start": iso(3600)}}
    response = env.client.post(f"{API}/replay", json=outside)
    assert response.status_code == 400 and "outside data set" in response.json()["error"], response.text
    for time_range, message in (
        ({"start_s": 0.1, "start": iso(0.3)}, "give start_s or start, not both"),
        ({"start": iso(0.3)[:-6]}, "timezone"),
        ({"start": 12}, "ISO 8601"),
    ):
        response = env.client.post(
            f"{API}/replay", json={"dataset_id": dataset["id"], "time_range": time_range}
        )
        assert response.status_code == 422 and message in response.json()["error"], response.text


def test_a_data_sets_message_rate_over_time(service_env: ServiceEnv) -> None:
    env = service_env
    publisher = Publisher(env, "aeron:ipc", 1001, 0.002)  # 500 messages/s
    publisher.start()
    try:
        dataset = record(env, {"streams": [{"channel": "aeron:ipc", "stream_id": 1001}], "duration_s": 1.0})
    finally:
        publisher.stop()
    rate = env.client.get(f"{API}/datasets/{dataset['id']}/rate", params={"buckets": 10}).json()
    assert rate["start_time_ns"] == dataset["start_time_ns"] and len(rate["messages"]) == 10
    assert abs(rate["bucket_s"] - dataset["span_s"] / 10) < 1e-6
    assert abs(sum(rate["messages"]) - dataset["messages"]) <= 2
    # Times are the service's receipt times: a loaded machine can hold a burst back, so the median bucket.
    per_second = sorted(n / rate["bucket_s"] for n in rate["messages"])
    assert 250 < per_second[len(per_second) // 2] < 750, per_second
    assert env.client.get(f"{API}/datasets/000000000000/rate").status_code == 404
    assert env.client.get(f"{API}/datasets/{dataset['id']}/rate", params={"buckets": 0}).status_code == 422


def test_three_replays_of_different_data_sets_at_once(service_env: ServiceEnv) -> None:
    env = service_env
    datasets, sent = [], []
    for sid in (1001, 1002, 1003):
        publisher = Publisher(env, "aeron:ipc", sid, 0.004, tag=f"s{sid}")
        publisher.start()
        try:
            datasets.append(
                record(env, {"streams": [{"channel": "aeron:ipc", "stream_id": sid}], "max_messages": 100})
            )
        finally:
            publisher.stop()
        sent.append(publisher.sent[:100])
    receivers = [Receiver(env, "aeron:ipc", 2001 + n) for n in range(3)]
    try:
        ids = []
        for n, dataset in enumerate(datasets):  # each spans about 0.4 s: at rate 0.5 they overlap
            response = env.client.post(
                f"{API}/replay", json={"dataset_id": dataset["id"], "stream_id": 2001 + n, "rate": 0.5}
            )
            assert response.status_code == 202, response.text
            ids.append(response.json()["replay_id"])
        listed = env.client.get(f"{API}/replays").json()["replays"]
        assert [r["replay_id"] for r in listed] == ids and all(r["running"] for r in listed), listed

        def all_done() -> bool:
            return all(not env.client.get(f"{API}/replays/{i}").json()["running"] for i in ids)

        wait_for(all_done, 30, "the three replays to end")
        for n, replay_id in enumerate(ids):
            status = env.client.get(f"{API}/replays/{replay_id}").json()
            assert status["state"] == "done" and status["messages"] == 100, status
            assert status["bytes"] == datasets[n]["bytes"]  # one measure in both statuses
            assert status["dataset_id"] == datasets[n]["id"]
            wait_for(lambda r=receivers[n]: len(r.received) >= 100, 5, "the replayed messages")
            assert receivers[n].payloads == sent[n]
        assert env.client.get(f"{API}/replay").json()["replay_id"] == ids[-1]  # the latest
        assert env.client.get(f"{API}/replays/nope").status_code == 404
    finally:
        for r in receivers:
            r.close()
