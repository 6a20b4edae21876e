"""The record & replay service's jobs as counters in cnc.dat and as Prometheus metrics (docs/service.md section
9): a real service records and replays; ``mediadriver stat`` shows the counters, the exporter's metrics follow the
jobs, and a real Prometheus scraping the exporter answers the dashboard's record & replay queries."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from driver.exporter import MetricsServer
from harness.wait import wait_for
from tests.support.prometheus import DASHBOARD, http_get, query, start_prometheus, stop
from tests.support.service_env import API, Publisher, ServiceEnv, record, replay_payloads


def scrape(server: MetricsServer) -> dict[tuple[str, tuple], float]:
    samples = {}
    for family in text_string_to_metric_families(http_get(server.url)):
        if family.name.startswith("aeron_service_"):
            for s in family.samples:
                samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def job(samples: dict, name: str, job_name: str) -> float:
    return samples[(f"aeron_service_{name}", (("operation", job_name),))]


def test_the_exporter_follows_the_jobs_and_stat_shows_their_counters(service_env: ServiceEnv) -> None:
    env = service_env
    with MetricsServer(env.driver.aeron_dir, 0) as server:
        idle = scrape(server)
        assert job(idle, "job_running", "record") == 0 and job(idle, "job_messages", "record") == 0
        assert idle[("aeron_service_job_state", (("operation", "record"), ("state", "idle")))] == 1

        publisher = Publisher(env, "aeron:ipc", 1001, 0.001)
        publisher.start()
        try:
            assert (
                env.client.post(
                    f"{API}/record",
                    json={"streams": [{"channel": "aeron:ipc", "stream_id": 1001}], "max_messages": 1500},
                ).status_code
                == 202
            )
            running = wait_for(
                lambda: (s := scrape(server)) and job(s, "job_messages", "record") > 0 and s,
                10,
                "messages counted",
            )
            assert job(running, "job_running", "record") == 1
            assert 0 < job(running, "job_progress_ratio", "record") < 1
            done = wait_for(
                lambda: (s := scrape(server)) and job(s, "job_running", "record") == 0 and s, 30, "the end"
            )
        finally:
            publisher.stop()
        status = env.client.get(f"{API}/record").json()
        assert status["state"] == "done"
        assert done[("aeron_service_job_state", (("operation", "record"), ("state", "done")))] == 1
        assert job(done, "job_messages", "record") == 1500 and job(done, "job_progress_ratio", "record") == 1
        assert job(done, "job_bytes", "record") == status["bytes"]

        replay_payloads(env, {"dataset_id": status["dataset_id"], "rate": 50, "repeat": 2}, "aeron:ipc", 1001)
        replayed = wait_for(
            # The repeat is counted once its last message is out: wait for both, not the messages alone.
            lambda: (s := scrape(server))
            and job(s, "job_messages", "replay") == 3000
            and s.get(("aeron_service_replay_repeats_done", ())) == 2
            and s,
            5,
            "",
        )
        assert replayed[("aeron_service_replay_repeats_done", ())] == 2
        assert replayed[("aeron_service_replay_repeat", ())] == 2
        assert job(replayed, "job_progress_ratio", "replay") == 1

    stat = subprocess.run(
        [sys.executable, "-m", "driver", "stat", "--dir", str(env.driver.aeron_dir), "--once"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert any(
        line.endswith(" - service record messages") and " 1,500 " in line for line in stat.stdout.splitlines()
    )


@pytest.mark.slow  # a Prometheus server
def test_prometheus_answers_the_dashboards_service_queries(service_env: ServiceEnv, tmp_path: Path) -> None:
    env = service_env
    exprs = [
        t["expr"]
        for p in json.loads(DASHBOARD.read_text())["panels"]
        for t in p.get("targets", [])
        if "aeron_service_" in t["expr"]
    ]
    assert len(exprs) >= 5
    with MetricsServer(env.driver.aeron_dir, 0) as server:
        proc, url, _log = start_prometheus(tmp_path, f"127.0.0.1:{server.port}")
        try:
            wait_for(lambda: query(url, "aeron_service_job_running"), 20, "a first scrape", interval=0.25)
            publisher = Publisher(env, "aeron:ipc", 1001, 0.001)
            publisher.start()
            try:
                record(env, {"streams": [{"channel": "aeron:ipc", "stream_id": 1001}], "duration_s": 3})
            finally:
                publisher.stop()
            wait_for(
                lambda: query(url, 'aeron_service_job_state{operation="record",state="done"} == 1'),
                20,
                "done",
            )
            for expr in exprs:
                promql = expr.replace("$__rate_interval", "10s").replace('"$instance"', '".+"')
                wait_for(lambda p=promql: query(url, p), 15, promql, interval=0.25)
            # Prometheus saw the recording run, and its whole count at the end (~1,000 messages/s for 3 s).
            assert query(url, 'max_over_time(aeron_service_job_running{operation="record"}[1m]) == 1')
            assert float(query(url, 'aeron_service_job_messages{operation="record"}')[0]["value"][1]) > 1000
        finally:
            stop(proc)
