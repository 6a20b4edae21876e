"""tools/grafana (dashboard built with grafana-foundation-sdk) and tools/prometheus/prometheus.yml."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.cog.plugins import register_default_plugins
from grafana_foundation_sdk.models.dashboard import Dashboard

from driver.cli.exporter import DEFAULT_METRICS_PORT
from driver.concurrent.counter_types import CLIENT_CLOSES_TYPE_ID, decode_counter
from driver.exporter import DEFAULT_PORT
from driver.exporter.collector import snapshot_metrics
from driver.status.driver_snapshot import DriverSnapshot
from driver.status.system_counters import CLIENT_CLOSES_LABEL, SystemCounterDescriptor

ROOT = Path(__file__).resolve().parents[2]
BUILDER = ROOT / "tools" / "grafana" / "build_dashboard.py"
DASHBOARD = ROOT / "tools" / "grafana" / "aeron-media-driver.json"
PROMETHEUS_YML = ROOT / "tools" / "prometheus" / "prometheus.yml"


def load_builder():
    spec = importlib.util.spec_from_file_location("build_dashboard", BUILDER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def dashboard_exprs(data: dict) -> list[str]:
    return [t["expr"] for p in data["panels"] for t in p.get("targets", [])]


def test_committed_json_is_what_the_builder_produces() -> None:
    assert DASHBOARD.read_text() == load_builder().render(), "run python tools/grafana/build_dashboard.py"


def test_json_round_trips_through_the_sdk_model() -> None:
    register_default_plugins()
    data = json.loads(DASHBOARD.read_text())
    model = Dashboard.from_json(data)
    assert json.loads(json.dumps(model, cls=JSONEncoder)) == data
    panels = [p for p in model.panels if p.type_val != "row"]
    assert all(type(t).__module__.endswith("prometheus") for p in panels for t in p.targets)


def exporter_metric_names() -> set[str]:
    counters = [decode_counter(d.id, 0, struct.pack("<i", d.id), d.label, 0) for d in SystemCounterDescriptor]
    counters.append(decode_counter(len(counters), CLIENT_CLOSES_TYPE_ID, b"", CLIENT_CLOSES_LABEL, 0))
    snapshot = DriverSnapshot(Path("cnc.dat"), 15, 1, 0, 0, 0, counters)
    names = set()
    for family in snapshot_metrics(snapshot, 0, 10_000):
        names.add(family.name + ("_total" if family.type == "counter" else ""))
    return names


def test_panels_cover_the_topics_and_use_only_exported_metrics() -> None:
    data = json.loads(DASHBOARD.read_text())
    rows = [p["title"] for p in data["panels"] if p["type"] == "row"]
    assert rows == [
        "Liveness",
        "Throughput",
        "NAKs and loss",
        "Lag",
        "Back pressure",
        "Duty cycles and sockets",
        "Recordings",
        "Record & replay",
        "Errors",
    ]
    exprs = dashboard_exprs(data)
    used = {name for expr in exprs for name in re.findall(r"\baeron_[a-z_]+", expr)}
    assert used <= exporter_metric_names(), used - exporter_metric_names()
    for needed in (
        "aeron_bytes_sent_total",
        "aeron_bytes_received_total",
        "aeron_naks_sent_total",
        "aeron_naks_received_total",
        "aeron_retransmits_sent_total",
        "aeron_loss_gap_fills_total",
        "aeron_invalid_packets_total",
        "aeron_subscriber_lag_bytes",
        "aeron_receive_gap_bytes",
        "aeron_sender_backlog_bytes",
        "aeron_flow_control_under_runs_total",
        "aeron_flow_control_over_runs_total",
        "aeron_sender_flow_control_limits_applied_total",
        "aeron_publisher_headroom_bytes",
        "aeron_retransmitted_bytes_total",
        "aeron_flow_control_receivers",
        "aeron_conductor_max_cycle_time_doing_its_work_in_ns",
        "aeron_sender_work_cycle_exceeded_threshold_count_total",
        "aeron_bytes_currently_mapped",
        "aeron_local_socket_address",
        "aeron_errors_total",
        "aeron_client_liveness_timeouts_total",
        "aeron_driver_heartbeat_age_seconds",
        "aeron_up",
        "aeron_recording_position_bytes",
        "aeron_recordings_active",
        "aeron_service_job_state",
        "aeron_service_job_messages",
        "aeron_service_job_progress_ratio",
        "aeron_service_replay_repeats_done",
    ):
        assert needed in used, needed
    assert all('instance=~"$instance"' in expr for expr in exprs)
    assert len({p["id"] for p in data["panels"]}) == len(data["panels"])


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.fail("promtool not found: `make system-deps` installs Debian's prometheus package")
    return found


def test_every_dashboard_expression_is_valid_promql(tmp_path: Path) -> None:
    """Offline syntax check (the system test runs them against a live Prometheus): as recording rules."""
    exprs = dashboard_exprs(json.loads(DASHBOARD.read_text()))
    rules = [
        {
            "record": f"dashboard:expr_{i}",
            "expr": e.replace("$__rate_interval", "10s").replace("$instance", ".+"),
        }
        for i, e in enumerate(exprs)
    ]
    path = tmp_path / "rules.yml"
    path.write_text(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}))  # JSON is YAML
    result = subprocess.run(
        [promtool(), "check", "rules", str(path)], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_prometheus_config_scrapes_the_default_exporter_port() -> None:
    assert DEFAULT_PORT == DEFAULT_METRICS_PORT == 9300
    assert f'targets: ["localhost:{DEFAULT_PORT}"]' in PROMETHEUS_YML.read_text()
    result = subprocess.run(
        [promtool(), "check", "config", str(PROMETHEUS_YML)], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stdout + result.stderr
