"""A real Prometheus scrapes ``mediadriver exporter`` for a live Aeron 1.15.1 Java driver carrying UDP traffic.

One module-scoped setup (Java driver, a throttled Java publisher + subscriber, our exporter, Prometheus on
loopback with a 1 s scrape interval built from tools/prometheus/prometheus.yml) serves every test here:

- PromQL over Prometheus' HTTP API returns the expected series and positive byte rates;
- every PromQL expression of the Grafana dashboard returns data (a Python client adds a ``rec-pos`` counter of
  type 100 for the stream, with 1.15.1's key and label, and moves it like a recording would);
- the record & replay service's counters (added the same way) feed the dashboard's service row;
- with the driver and its client frozen (SIGSTOP, so no value moves), the exporter, ``mediadriver stat --once``
  and the Java ``AeronStat`` agree on every counter, and ``mediadriver streams`` matches the Java ``StreamStat``.

Everything started here is stopped by pid at teardown.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from driver.client import Aeron
from driver.exporter.collector import SYSTEM_METRIC_NAMES
from driver.status.service_counters import FIELDS, SERVICE_JOB_TYPE_ID, Field, key, label
from tests.support import free_port, wait_for
from tests.support.driver_pool import DriverPool, DriverProcess
from tests.support.java_peers import JavaPeers, Spawned, compile_java_sources, find_peer_paths
from tests.support.prometheus import http_get
from tests.support.prometheus import start_prometheus as _start_prometheus
from tests.support.prometheus import stop as _stop
from tests.support.recording_counters import REC_POS_TYPE_ID, rec_pos_key, rec_pos_label
from tests.support.stat_output import parse_stat

pytestmark = [pytest.mark.interop, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
JAVA_SOURCES = Path(__file__).resolve().parent / "java"
PROMETHEUS_YML = ROOT / "tools" / "prometheus" / "prometheus.yml"
DASHBOARD = ROOT / "tools" / "grafana" / "aeron-media-driver.json"
STREAM_ID = 1001
RATE_WINDOW = "10s"


@dataclass
class Live:
    driver: DriverProcess  # Java
    traffic: Spawned
    peers: JavaPeers
    exporter_url: str
    prometheus_url: str
    channel: str
    recording: RecordingCounter

    def query(self, promql: str) -> list[dict[str, Any]]:
        url = f"{self.prometheus_url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        try:
            body = json.loads(http_get(url))
        except urllib.error.HTTPError as e:
            pytest.fail(f"{promql}: HTTP {e.code} {e.read().decode(errors='replace')}")
        assert body["status"] == "success", body
        return body["data"]["result"]

    def wait_for(self, promql: str, timeout: float = 20.0) -> list[dict[str, Any]]:
        return wait_for(lambda: self.query(promql), timeout, f"data for {promql}", interval=0.25)


class RecordingCounter:
    """A rec-pos counter (recording 0 of the traffic's stream) advanced 20,000 bytes every 50 ms by a thread,
    as an archive recording the stream would; ``paused`` holds it still."""

    def __init__(self, aeron: Aeron, session_id: int, channel: str) -> None:
        label = rec_pos_label(0, session_id, STREAM_ID, channel)
        self.counter = aeron.add_counter(REC_POS_TYPE_ID, label, rec_pos_key(0, session_id, "127.0.0.1:1"))
        self.paused = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            if not self.paused.is_set():
                self.counter.set(self.counter.get() + 20_000)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    try:
        paths = find_peer_paths()
    except FileNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)
    tmp = tmp_path_factory.mktemp("prometheus-system")
    classes = compile_java_sources(paths, tmp / "classes", JAVA_SOURCES)
    peers = JavaPeers(paths, classes, tmp)
    pool = DriverPool()
    started: list[subprocess.Popen[Any]] = []
    traffic = None
    aeron = recording = None
    try:
        driver = pool.java(None, peers=peers)
        channel = f"aeron:udp?endpoint=localhost:{free_port('udp')}"
        # 2,000 messages/s of 200 bytes, for at most 90 s (normally stopped much sooner, below).
        traffic = peers.spawn(
            "ThrottledTraffic", channel, STREAM_ID, 2000, 200, 90, props={"aeron.dir": driver.aeron_dir}
        )
        lines = traffic.read_until(r"^CONNECTED -?\d+", 20)
        session_id = int(next(line.split()[1] for line in lines if line.startswith("CONNECTED ")))
        aeron = Aeron.connect(aeron_dir=driver.aeron_dir)
        recording = RecordingCounter(aeron, session_id, channel)
        # The record & replay service's counters (docs/service.md section 9), as a running recording has them.
        for job, fields in FIELDS.items():
            for field in fields:
                aeron.add_counter(SERVICE_JOB_TYPE_ID, label(job, field), key(job, field)).set(
                    1 if field in (Field.STATE, Field.REPEAT) else 1000
                )
        exporter = subprocess.Popen(
            [sys.executable, "-m", "driver", "exporter", "--dir", str(driver.aeron_dir), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
        )
        started.append(exporter)
        assert exporter.stdout is not None
        line = exporter.stdout.readline()
        match = re.search(r"serving (http://(127\.0\.0\.1:\d+)/metrics)", line)
        assert match, f"exporter did not start: {line}"
        prometheus, prometheus_url, _log = _start_prometheus(tmp, match[2])
        started.append(prometheus)
        yield Live(driver, traffic, peers, match[1], prometheus_url, channel, recording)
    finally:
        if recording is not None:
            recording.close()
        if aeron is not None:
            aeron.close()
        for proc in reversed(started):
            _stop(proc)
            if proc.stdout is not None:
                proc.stdout.close()
        if traffic is not None:
            traffic.stop()
        pool.close()


def test_prometheus_scrapes_the_expected_series(live: Live) -> None:
    up = live.wait_for('up{job="aeron-media-driver"} == 1')
    assert len(up) == 1
    assert [r["value"][1] for r in live.wait_for("aeron_up")] == ["1"]
    assert int(live.query("aeron_driver_pid")[0]["value"][1]) == live.driver.pid
    assert float(live.wait_for("aeron_bytes_sent_total > 0")[0]["value"][1]) > 0
    positions = live.wait_for(f'aeron_stream_position_bytes{{stream_id="{STREAM_ID}"}}')
    assert {r["metric"]["type"] for r in positions} == {
        "pub-pos",
        "pub-lmt",
        "snd-pos",
        "snd-lmt",
        "sub-pos",
        "rcv-hwm",
        "rcv-pos",
    }
    assert {r["metric"]["channel"] for r in positions} == {live.channel}
    assert len({r["metric"]["session_id"] for r in positions}) == 1
    channels = live.query("aeron_channel_status == 1")
    assert sorted(r["metric"]["type"] for r in channels) == ["rcv-channel", "snd-channel"]
    assert all(r["metric"]["channel"] == live.channel for r in channels)
    assert live.query("aeron_client_heartbeat_age_seconds < 5")
    for derived in ("receive_gap", "subscriber_lag", "sender_backlog", "publisher_headroom"):
        series = live.query(f'aeron_{derived}_bytes{{stream_id="{STREAM_ID}"}}')
        assert len(series) == 1, derived
    assert float(live.query("aeron_publisher_headroom_bytes")[0]["value"][1]) > 0


def test_rates_of_bytes_sent_and_received_are_above_zero(live: Live) -> None:
    for name in ("aeron_bytes_sent_total", "aeron_bytes_received_total"):
        result = live.wait_for(f"rate({name}[{RATE_WINDOW}]) > 0")
        assert float(result[0]["value"][1]) > 10_000, result  # ~2,000 x 224-byte frames per second
    snd = live.wait_for(f'rate(aeron_stream_position_bytes{{type="snd-pos"}}[{RATE_WINDOW}]) > 0')
    assert snd[0]["metric"]["stream_id"] == str(STREAM_ID)


MODERN_ONLY_METRICS = (
    "aeron_stream_events_total",
    "aeron_flow_control_receivers",
    "aeron_local_socket_address",
    "aeron_retransmitted_bytes_total",
    "_cycle_",
    "aeron_bytes_currently_mapped",
    "aeron_resolution_changes_total",
    "aeron_client_closes_total",
)
"""In queries of today's Aeron's counters (docs/counters.md section 8) and of this driver's own (section 9), which
the 1.15.1 driver here lacks."""


def dashboard_queries() -> list[tuple[str, str]]:
    data = json.loads(DASHBOARD.read_text())
    return [(panel["title"], t["expr"]) for panel in data["panels"] for t in panel.get("targets", [])]


def test_every_dashboard_expression_returns_data(live: Live) -> None:
    live.wait_for(f"rate(aeron_bytes_received_total[{RATE_WINDOW}]) > 0")
    queries = dashboard_queries()
    assert len(queries) > 20
    empty = []
    for title, expr in queries:
        promql = expr.replace("$__rate_interval", RATE_WINDOW).replace('"$instance"', '".+"')
        assert "$" not in promql, promql
        if any(metric in promql for metric in MODERN_ONLY_METRICS):
            continue  # today's Aeron counters: the 1.15.1 driver here has none (tests/channels checks ours)
        if not live.query(promql):
            empty.append(f"{title}: {promql}")
    assert not empty, "dashboard queries without data:\n" + "\n".join(empty)


# --- exact comparison with the Java tools --------------------------------------------------------------


def exporter_counter_values(text: str) -> dict[int, int]:
    by_name = {name: cid for cid, name in SYSTEM_METRIC_NAMES.items()}
    values: dict[int, int] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name in by_name:
                values[by_name[s.name]] = int(s.value)
            elif "counter_id" in s.labels:
                scale = 1000 if s.name == "aeron_client_heartbeat_timestamp_seconds" else 1
                values[int(s.labels["counter_id"])] = round(s.value * scale)
    return values


def test_exporter_equals_stat_once_and_aeron_stat_and_streams_equals_stream_stat(live: Live) -> None:
    frozen = [live.driver.pid, live.traffic.pid]
    live.recording.paused.set()
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)  # no counter moves until SIGCONT
    try:
        time.sleep(0.1)
        exported = exporter_counter_values(http_get(live.exporter_url))
        stat = subprocess.run(
            [sys.executable, "-m", "driver", "stat", "--dir", str(live.driver.aeron_dir), "--once"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
        ours = parse_stat(stat.stdout)
        java = live.peers.aeron_stat(live.driver.aeron_dir)
        streams = subprocess.run(
            [sys.executable, "-m", "driver", "streams", "--dir", str(live.driver.aeron_dir), "--once"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
        stream_stat = live.peers.run(
            "io.aeron.samples.StreamStat", props={"aeron.dir": live.driver.aeron_dir}, timeout=20, check=True
        )
        again = exporter_counter_values(http_get(live.exporter_url))
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
        live.recording.paused.clear()
    assert again == exported  # really frozen
    java_values = {cid: line.value for cid, line in java.counters.items()}
    our_values = {cid: line.value for cid, line in ours.counters.items()}
    # system, 7 stream positions, 2 channel status, 2 client heartbeats, rec-pos
    assert len(java_values) >= 25 + 7 + 5
    assert ours.counters[live.recording.counter.id].label.startswith("rec-pos: 0 ")
    assert our_values == java_values
    assert exported == java_values
    assert [line.raw for line in ours.counters.values()] == [line.raw for line in java.counters.values()]
    # StreamStat leaves rec-pos out; ours shows it last on its stream's line (counter id order).
    rec_id = live.recording.counter.id
    rec_pos = f" rec-pos:0:{java_values[rec_id]}"
    lines = streams.stdout.splitlines()
    assert len(lines) == 2 and lines[1].endswith(rec_pos)
    assert sorted([lines[0], lines[1][: -len(rec_pos)]]) == sorted(stream_stat.stdout.splitlines())
