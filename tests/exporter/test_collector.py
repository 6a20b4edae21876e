"""The exporter's metric mapping for every counter type, on snapshots built from real 1.15.1 keys and labels."""

from __future__ import annotations

import struct
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from driver.concurrent.counter_types import (
    CounterInfo,
    channel_status_key,
    channel_status_label,
    client_heartbeat_key,
    client_heartbeat_label,
    decode_counter,
    stream_position_key,
    stream_position_label,
)
from driver.exporter.collector import SYSTEM_METRIC_NAMES, CncCollector, snake_case, snapshot_metrics
from driver.status.driver_snapshot import DriverSnapshot
from driver.status.system_counters import SystemCounterDescriptor

NOW_MS = 1_700_000_010_000
CHANNEL = "aeron:udp?endpoint=localhost:40456"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

EXPECTED_SYSTEM_NAMES = [
    "aeron_bytes_sent_total",
    "aeron_bytes_received_total",
    "aeron_failed_offers_to_receiver_proxy_total",
    "aeron_failed_offers_to_sender_proxy_total",
    "aeron_failed_offers_to_driver_conductor_proxy_total",
    "aeron_naks_sent_total",
    "aeron_naks_received_total",
    "aeron_status_messages_sent_total",
    "aeron_status_messages_received_total",
    "aeron_heartbeats_sent_total",
    "aeron_heartbeats_received_total",
    "aeron_retransmits_sent_total",
    "aeron_flow_control_under_runs_total",
    "aeron_flow_control_over_runs_total",
    "aeron_invalid_packets_total",
    "aeron_errors_total",
    "aeron_short_sends_total",
    "aeron_failed_attempts_to_free_log_buffers_total",
    "aeron_sender_flow_control_limits_applied_total",
    "aeron_unblocked_publications_total",
    "aeron_unblocked_control_commands_total",
    "aeron_possible_ttl_asymmetry_total",
    "aeron_controllable_idle_strategy_status",
    "aeron_loss_gap_fills_total",
    "aeron_client_liveness_timeouts_total",
]


def test_system_counter_names() -> None:
    assert [SYSTEM_METRIC_NAMES[i] for i in range(25)] == EXPECTED_SYSTEM_NAMES
    assert snake_case("Failed offers to DriverConductorProxy") == "failed_offers_to_driver_conductor_proxy"
    assert snake_case("NAKs sent") == "naks_sent"


def test_todays_system_counter_names() -> None:
    assert [SYSTEM_METRIC_NAMES[i] for i in range(25, 40)] == [
        "aeron_resolution_changes_total",
        "aeron_conductor_max_cycle_time_doing_its_work_in_ns",
        "aeron_conductor_work_cycle_exceeded_threshold_count_total",
        "aeron_sender_max_cycle_time_doing_its_work_in_ns",
        "aeron_sender_work_cycle_exceeded_threshold_count_total",
        "aeron_receiver_max_cycle_time_doing_its_work_in_ns",
        "aeron_receiver_work_cycle_exceeded_threshold_count_total",
        "aeron_name_resolver_max_time_in_ns",
        "aeron_name_resolver_exceeded_threshold_count_total",
        "aeron_software_version",
        "aeron_bytes_currently_mapped",
        "aeron_retransmitted_bytes_total",
        "aeron_retransmit_pool_overflow_count_total",
        "aeron_error_frames_received_total",
        "aeron_error_frames_sent_total",
    ]


def stream(cid: int, type_id: int, name: str, reg: int, value: int, session: int = 7) -> CounterInfo:
    key = stream_position_key(reg, session, 1001, CHANNEL)
    label = stream_position_label(name, reg, session, 1001, CHANNEL, 0 if type_id == 4 else None)
    return decode_counter(cid, type_id, key, label, value)


def every_type_snapshot(heartbeat_ms: int = NOW_MS - 250) -> DriverSnapshot:
    counters = [
        decode_counter(d.id, 0, struct.pack("<i", d.id), d.label, 10 + d.id) for d in SystemCounterDescriptor
    ]
    counters += [
        decode_counter(25, 7, channel_status_key(CHANNEL), channel_status_label("rcv-channel", CHANNEL), 1),
        decode_counter(26, 11, client_heartbeat_key(3), client_heartbeat_label(3), NOW_MS - 1500),
        decode_counter(27, 6, channel_status_key(CHANNEL), channel_status_label("snd-channel", CHANNEL), -1),
        stream(28, 12, "pub-pos (sample)", 2, 10_000),
        stream(29, 1, "pub-lmt", 2, 64_000),
        stream(30, 2, "snd-pos", 2, 9_000),
        stream(31, 9, "snd-lmt", 2, 70_000),
        stream(32, 4, "sub-pos", 1, 8_000),
        stream(33, 3, "rcv-hwm", 3, 9_000),
        stream(34, 5, "rcv-pos", 3, 8_500),
        stream(35, 10, "per-image", 3, 1),
        decode_counter(
            36, 100, struct.pack("<qii", 4, 7, 9) + b"127.0.0.1", f"rec-pos: 4 7 1001 {CHANNEL}", 4096
        ),
        decode_counter(37, 1001, b"", "my app counter", 99),
        decode_counter(38, 0, b"", "Archive errors", 2),  # type 0, but no driver system counter
    ]
    return DriverSnapshot(
        Path("/x/cnc.dat"), 15, 4242, NOW_MS - 60_000, 5_000_000_000, heartbeat_ms, counters, 2, 5
    )


class Fixed:
    def __init__(self, snapshot: DriverSnapshot | None) -> None:
        self.snapshot = snapshot

    def collect(self):
        return snapshot_metrics(self.snapshot, NOW_MS, 10_000)


def scrape(collector) -> Samples:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    text = generate_latest(registry).decode()
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = (sample.name, frozenset(sample.labels.items()))
            assert key not in found, f"duplicate series {key}"
            found[key] = sample.value
    return found


def one(samples: Samples, name: str, **labels: str) -> float:
    matches = [v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= ls]
    assert len(matches) == 1, (name, labels, matches)
    return matches[0]


def test_every_counter_type_becomes_a_series() -> None:
    s = scrape(Fixed(every_type_snapshot()))
    for i, name in enumerate(EXPECTED_SYSTEM_NAMES):
        assert s[(name, frozenset())] == 10 + i
    stream_labels = {"registration_id": "2", "session_id": "7", "stream_id": "1001", "channel": CHANNEL}
    assert one(s, "aeron_stream_position_bytes", type="pub-pos", counter_id="28", **stream_labels) == 10_000
    assert one(s, "aeron_stream_position_bytes", type="pub-lmt", counter_id="29", **stream_labels) == 64_000
    assert one(s, "aeron_stream_position_bytes", type="snd-pos", counter_id="30", **stream_labels) == 9_000
    assert one(s, "aeron_stream_position_bytes", type="snd-lmt", counter_id="31", **stream_labels) == 70_000
    assert (
        one(s, "aeron_stream_position_bytes", type="sub-pos", registration_id="1", channel=CHANNEL) == 8_000
    )
    assert one(s, "aeron_stream_position_bytes", type="rcv-hwm", registration_id="3") == 9_000
    assert one(s, "aeron_stream_position_bytes", type="rcv-pos", registration_id="3") == 8_500
    assert one(s, "aeron_per_image_indicator", type="per-image", counter_id="35") == 1
    assert one(s, "aeron_channel_status", type="rcv-channel", channel=CHANNEL, counter_id="25") == 1
    assert one(s, "aeron_channel_status", type="snd-channel", channel=CHANNEL, counter_id="27") == -1
    assert (
        one(s, "aeron_client_heartbeat_timestamp_seconds", client_id="3", counter_id="26")
        == (NOW_MS - 1500) / 1000
    )
    assert one(s, "aeron_client_heartbeat_age_seconds", client_id="3") == 1.5
    assert (
        one(
            s,
            "aeron_recording_position_bytes",
            type="rec-pos",
            recording_id="4",
            session_id="7",
            stream_id="1001",
            channel=CHANNEL,
            source_identity="127.0.0.1",
        )
        == 4096
    )
    assert s[("aeron_recordings_active", frozenset())] == 1
    assert (
        one(s, "aeron_counter", type="unknown", type_id="1001", label="my app counter", counter_id="37") == 99
    )
    assert one(s, "aeron_counter", type="system", type_id="0", label="Archive errors", counter_id="38") == 2
    # derived
    assert one(s, "aeron_receive_gap_bytes", registration_id="3", session_id="7", stream_id="1001") == 500
    assert one(s, "aeron_subscriber_lag_bytes", registration_id="1", channel=CHANNEL) == 500
    assert one(s, "aeron_sender_backlog_bytes", registration_id="2") == 1_000
    assert one(s, "aeron_publisher_headroom_bytes", registration_id="2") == 54_000
    # liveness and the driver
    assert s[("aeron_up", frozenset())] == 1
    assert s[("aeron_driver_heartbeat_age_seconds", frozenset())] == 0.25
    assert s[("aeron_driver_pid", frozenset())] == 4242
    assert s[("aeron_driver_start_time_seconds", frozenset())] == (NOW_MS - 60_000) / 1000
    assert s[("aeron_driver_client_liveness_timeout_seconds", frozenset())] == 5
    assert s[("aeron_error_log_distinct_errors", frozenset())] == 2
    assert s[("aeron_error_log_observations_total", frozenset())] == 5
    # every counter is exactly one series carrying its id (system counters: by name)
    ids = sorted(int(dict(ls)["counter_id"]) for (n, ls) in s if "counter_id" in dict(ls))
    assert ids == list(range(25, 39))


def test_a_stale_heartbeat_or_no_cnc_means_down() -> None:
    s = scrape(Fixed(every_type_snapshot(heartbeat_ms=NOW_MS - 10_001)))
    assert s[("aeron_up", frozenset())] == 0
    assert s[("aeron_driver_heartbeat_age_seconds", frozenset())] == 10.001
    assert s[("aeron_bytes_sent_total", frozenset())] == 10  # the last values stay visible
    assert scrape(Fixed(None)) == {("aeron_up", frozenset()): 0}


def test_collector_without_a_driver_reports_down(tmp_path: Path) -> None:
    collector = CncCollector(tmp_path / "no-driver")
    s = scrape(collector)
    assert s[("aeron_up", frozenset())] == 0
    assert s[("aeron_exporter_cnc_maps_total", frozenset())] == 0
    assert "does not exist" in collector.watcher.problem
    (tmp_path / "no-driver").mkdir()
    (tmp_path / "no-driver" / "cnc.dat").write_bytes(bytes(4096))  # being created: version still 0
    assert scrape(collector)[("aeron_up", frozenset())] == 0
    assert "not ready" in collector.watcher.problem
    collector.close()
