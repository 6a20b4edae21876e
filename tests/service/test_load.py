"""50 status clients (a process of their own, as real clients are) polling while the service records ≥ 100 k
msgs/s: every request answers 200 and the data set holds every message sent (docs/service.md section 4)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.service_env import API, ServiceEnv, wait_for_state

COUNT = 400_000
CLIENTS = 50
INTERVAL_S = 0.1


@pytest.mark.slow
def test_fifty_status_clients_during_a_fast_recording(service_env: ServiceEnv) -> None:
    env = service_env
    response = env.client.post(
        f"{API}/record",
        json={"streams": [{"channel": "aeron:ipc", "stream_id": 1001}], "max_messages": COUNT},
    )
    assert response.status_code == 202
    pollers = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.status_pollers",
            env.url,
            f"{API}/record",
            str(CLIENTS),
            str(INTERVAL_S),
            str(env.archive_dir / "http-token"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert pollers.stdout.readline().strip() == "polling"
        publisher = subprocess.run(
            [
                sys.executable,
                "-m",
                "harness.fast_publisher",
                str(env.driver.aeron_dir),
                "aeron:ipc",
                "1001",
                str(COUNT),
                "32",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        status = wait_for_state(env, "record", 60)
        polled = json.loads(pollers.communicate(timeout=60)[0].strip().splitlines()[-1])
    finally:
        if pollers.poll() is None:
            pollers.kill()
            pollers.communicate()
    _, sent, _, seconds = publisher.stdout.split()
    assert int(sent) == COUNT
    assert COUNT / float(seconds) >= 100_000, f"{COUNT / float(seconds):.0f} msgs/s"
    assert polled["failures"] == [] and set(polled["statuses"]) == {"200"}
    assert polled["requests"] >= CLIENTS * 3, polled
    # Every client was answered while the job ran (before "polling", which came before the publisher started).
    assert polled["running"] >= CLIENTS, polled
    assert status["state"] == "done" and status["messages"] == COUNT
    dataset = env.client.get(f"{API}/datasets/{status['dataset_id']}").json()
    assert dataset["messages"] == COUNT
    # Every message is in the archive: the recording holds the frames of COUNT 32-byte messages (64 bytes each).
    assert sum(r["stop_position"] - r["start_position"] for r in dataset["recordings"]) == COUNT * 64
