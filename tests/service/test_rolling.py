"""A rolling capture (docs/service.md section 4): one record job that cuts a data set every N seconds or bytes
until stopped, the cuts seamless (each recording goes on at the next data set's start position), its progress in
the record status."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import httpx
import pytest

from driver.service.retention import Retention
from harness.ports import free_port
from harness.wait import wait_for
from tests.support.service_env import (
    API,
    Publisher,
    Receiver,
    ServiceEnv,
    replay_payloads,
    start_service_env,
    stop_service_env,
    wait_for_state,
)

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
    udp = f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}"
    publishers = [
        Publisher(env, "aeron:ipc", STREAM, 0.0005, tag="r"),
        Publisher(env, udp, STREAM, 0.001, tag="u"),
    ]
    for publisher in publishers:
        publisher.start()
    try:
        body = {
            "streams": [{"channel": "aeron:ipc", "stream_id": STREAM}, {"channel": udp, "stream_id": STREAM}],
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
        for publisher in publishers:
            publisher.stop()
    assert stopped["state"] == "cancelled", stopped
    datasets = sorted(
        (d for d in env.client.get(f"{API}/datasets").json()["datasets"] if d["capture"]),
        key=lambda d: d["capture_seq"],
    )
    assert {d["capture"] for d in datasets} == {first["dataset_id"]}
    seqs = [d["capture_seq"] for d in datasets]
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) == stopped["rolling"]["datasets_cut"]
    assert [d["name"] for d in datasets][:2] == ["ring-0001", "ring-0002"]
    # Each cut is at the first message start past the bound; nothing is lost or counted twice between cuts.
    for dataset in datasets[:-1]:
        assert 64 * 1024 <= dataset["bytes"] < 64 * 1024 + 2 * 256 * 1024, dataset["bytes"]
    assert_seamless(datasets)
    assert sum(d["messages"] for d in datasets) == stopped["messages"]
    assert sum(d["bytes"] for d in datasets) == stopped["bytes"]
    # A middle data set replays its own run of each stream, whole, into one target.
    middle = datasets[1]
    received, status = replay_payloads(
        env,
        {"dataset_id": middle["id"], "rate": 1000, "channel": "aeron:ipc", "stream_id": 1102},
        "aeron:ipc",
        1102,
    )
    assert status["messages"] == middle["messages"], (status, middle)
    for tag, channel in (("r", "aeron:ipc"), ("u", udp)):
        got = _seqs([p for _, p in received], tag)
        want = sum(r["messages"] for r in middle["recordings"] if r["source_channel"] == channel)
        assert want and got == list(range(got[0], got[0] + want)), (tag, len(got), want)


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


TERM = 64 * 1024
CAP = 4 * 1024 * 1024
SLACK = 512 * 1024
"""Past the cap for a moment: what a second of capture brings between two retention passes, a segment reserved
ahead per recording, files of purged recordings not yet unlinked."""
CUT_S = 4.0
"""How often the long capture below is cut into a new data set."""


def archive_disk_use(archive_dir: Path) -> int:
    """Bytes the recordings' files take on disk, as allocated (segments are reserved whole)."""
    return sum(
        entry.stat().st_blocks * 512
        for entry in archive_dir.iterdir()
        if entry.suffix in (".rec", ".next", ".idx", ".crc")
    )


class Sampler(threading.Thread):
    """Every 0.2 s: the archive's disk use, and the capture's data sets listed (each kept as first seen)."""

    def __init__(self, env: ServiceEnv) -> None:
        super().__init__(daemon=True)
        self.archive_dir = env.archive_dir
        self.client = httpx.Client(base_url=env.url, headers=env.client.headers, timeout=30)
        self.samples: list[tuple[float, int]] = []
        self.seen: dict[str, dict] = {}
        self.stop_flag = threading.Event()

    def run(self) -> None:
        while not self.stop_flag.wait(0.2):
            with contextlib.suppress(FileNotFoundError):  # a file unlinked between listing and stat
                self.samples.append((time.monotonic(), archive_disk_use(self.archive_dir)))
            self.poll()

    def poll(self) -> None:
        found = self.client.get(f"{API}/datasets").json()["datasets"]
        self.seen.update((d["id"], d) for d in found if d["capture"])

    def stop(self) -> None:
        self.stop_flag.set()
        self.join(5)
        self.poll()
        self.client.close()


@pytest.mark.slow
def test_retention_keeps_a_long_capture_under_its_cap_while_three_replays_run(tmp_path: Path) -> None:
    """A capture cut every 4 s for 48 s from an IPC and a UDP publisher (1,000 messages a second each, so the
    archive passes its cap about two thirds of the way): retention by disk use keeps the archive under its cap throughout; three
    replays of different data sets run at once with every message; a jump of the retention clock past max_age drops
    every data set not in use."""
    skew_ns = [0]
    retention = Retention(
        max_age_s=3600, max_bytes=CAP, interval_s=1.0, clock=lambda: time.time_ns() + skew_ns[0]
    )
    env, archive = start_service_env(tmp_path, retention=retention, segment_file_length=TERM)
    udp = f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}"
    streams = [{"channel": "aeron:ipc", "stream_id": STREAM}, {"channel": udp, "stream_id": STREAM}]
    publishers = [
        Publisher(env, f"aeron:ipc?term-length={TERM}", STREAM, 0.001, tag="i"),
        Publisher(env, f"{udp}|term-length={TERM}", STREAM, 0.001, tag="u"),
    ]
    sampler = Sampler(env)

    def capture_sets() -> list[dict]:
        return [d for d in env.client.get(f"{API}/datasets").json()["datasets"] if d["capture"]]

    try:
        for publisher in publishers:
            publisher.start()
        sampler.start()
        response = env.client.post(f"{API}/record", json={"streams": streams, "rotate": {"every_s": CUT_S}})
        assert response.status_code == 202, response.text
        started = time.monotonic()

        # Three replays of three different data sets at once, each into a stream of its own.
        closed = wait_for(lambda: len(capture_sets()) >= 3 and capture_sets(), 60, "three data sets")
        chosen = sorted(closed, key=lambda d: d["capture_seq"])[-3:]
        receivers = [Receiver(env, "aeron:ipc", 1201 + i) for i in range(3)]
        try:
            ids = []
            for i, dataset in enumerate(chosen):
                body = {"dataset_id": dataset["id"], "rate": 4, "channel": "aeron:ipc", "stream_id": 1201 + i}
                reply = env.client.post(f"{API}/replay", json=body)
                assert reply.status_code == 202, reply.text
                ids.append(reply.json()["replay_id"])
            running = [r for r in env.client.get(f"{API}/replays").json()["replays"] if r["running"]]
            assert {r["replay_id"] for r in running} == set(ids)
            statuses = []
            for replay_id in ids:
                wait_for(
                    lambda replay_id=replay_id: (
                        not env.client.get(f"{API}/replays/{replay_id}").json()["running"]
                    ),
                    30,
                    f"replay {replay_id}",
                    interval=0.1,
                )
                statuses.append(env.client.get(f"{API}/replays/{replay_id}").json())
            for dataset, status, receiver in zip(chosen, statuses, receivers, strict=True):
                assert status["state"] == "done" and status["messages"] == dataset["messages"], status
                wait_for(
                    lambda r=receiver, d=dataset: len(r.received) >= d["messages"], 10, "replayed messages"
                )
                payloads = receiver.payloads
                for tag, channel in (("i", "aeron:ipc"), ("u", udp)):
                    got = _seqs(payloads, tag)
                    want = sum(r["messages"] for r in dataset["recordings"] if r["source_channel"] == channel)
                    assert len(got) == want and got == list(range(got[0], got[0] + want)), (
                        tag,
                        dataset["id"],
                    )
        finally:
            for receiver in receivers:
                receiver.close()

        # The retention clock jumps past max_age: every data set not in use goes at the next pass.
        # Half way between two cuts: the data set cut last has been listed by the sampler before it goes.
        wait_for(lambda: time.monotonic() - started > 7.5 * CUT_S, 80, "7 cuts of capture", interval=0.5)
        before = env.client.get(f"{API}/record").json()["rolling"]
        skew_ns[0] = 2 * 3600 * 1_000_000_000
        wait_for(lambda: not capture_sets(), 10, "the aged data sets to go", interval=0.2)
        skew_ns[0] = 0
        after = env.client.get(f"{API}/record").json()["rolling"]
        assert after["datasets_dropped"] == after["datasets_cut"] > before["datasets_dropped"]

        wait_for(lambda: time.monotonic() - started > 12 * CUT_S, 60, "12 cuts of capture", interval=0.5)
        stopped = env.client.delete(f"{API}/record").json()
        time.sleep(2 * retention.interval_s)
    finally:
        sampler.stop()
        for publisher in publishers:
            publisher.stop()
        stop_service_env(env, archive)

    peak = max(used for _, used in sampler.samples)
    print(
        f"disk use: peak {peak} B, cap {CAP} B, {len(sampler.samples)} samples, last {sampler.samples[-1][1]} B"
    )
    assert peak <= CAP + SLACK, [used for _, used in sampler.samples]
    assert sampler.samples[-1][1] <= CAP
    rolling, seen = stopped["rolling"], list(sampler.seen.values())
    assert stopped["state"] == "cancelled" and 11 <= rolling["datasets_cut"] <= 13, stopped
    assert sorted(d["capture_seq"] for d in seen) == list(range(1, rolling["datasets_cut"] + 1))
    assert_seamless(seen)
    assert sum(d["messages"] for d in seen) == stopped["messages"]
