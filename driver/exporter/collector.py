"""A prometheus_client Collector over a read-only cnc.dat: every scrape reads the counters afresh.

Metric mapping (one series per allocated counter, plus derived and liveness gauges):

=====================================================  =============================================================
``aeron_<snake case of label>_total`` (counter)        the system counters (1.15.1's 25 and today's Aeron's ids
                                                       25..39), e.g. ``aeron_bytes_sent_total``; the max cycle
                                                       times, bytes mapped, ``aeron_software_version`` (id 34)
                                                       and ``aeron_controllable_idle_strategy_status`` are gauges
``aeron_client_closes_total`` (counter)                this driver's "Client closes" (type 1100): clients that
                                                       closed cleanly, which ``aeron_client_liveness_timeouts_total``
                                                       no longer counts (1.15.1 counts them there)
``aeron_stream_position_bytes`` (gauge)                pub-lmt, snd-pos, snd-lmt, pub-pos, rcv-hwm, rcv-pos, sub-pos;
                                                       labels type, registration_id, session_id, stream_id, channel,
                                                       counter_id
``aeron_per_image_indicator``                          type 10, same labels
``aeron_flow_control_receivers``                       fc-receivers (type 17), stream labels
``aeron_local_socket_address``                         snd-/rcv-local-sockaddr (type 14): labels type,
                                                       channel_status_id, address, counter_id; 1 while bound
``aeron_channel_status``                               snd-channel/rcv-channel: 0 initializing, 1 active, -1 errored,
                                                       2 closing; labels type, channel, counter_id
``aeron_client_heartbeat_timestamp_seconds``           client-heartbeat; labels type, client_id, counter_id
``aeron_recording_position_bytes``                     Archive rec-pos; labels type, recording_id, session_id,
                                                       stream_id, channel, source_identity, counter_id
``aeron_recordings_active``                            number of rec-pos counters: recordings in progress (an
                                                       archive frees its rec-pos when a recording stops)
``aeron_counter``                                      any other type (client counters, other type-0 counters);
                                                       labels type, type_id, label, counter_id
``aeron_receive_gap_bytes`` etc.                       derived: receive gap, subscriber lag, sender backlog,
                                                       publisher headroom (see driver.status.driver_snapshot)
``aeron_service_job_*`` etc.                           the record & replay service's jobs (see service_metrics.py)
``aeron_up``, ``aeron_driver_*``                       liveness: 1 while cnc.dat is ready and its heartbeat fresh;
                                                       heartbeat age, pid, start time
=====================================================  =============================================================
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from driver.concurrent.cnc_file import CncError
from driver.concurrent.counter_types import (
    CHANNEL_STATUS_TYPE_IDS,
    CLIENT_CLOSES_TYPE_ID,
    CLIENT_HEARTBEAT_TYPE_ID,
    FLOW_CONTROL_RECEIVERS_TYPE_ID,
    LOCAL_SOCKET_ADDRESS_TYPE_ID,
    PER_IMAGE_TYPE_ID,
    RECORDING_POSITION_TYPE_ID,
    STREAM_COUNTER_TYPE_IDS,
    STREAM_EVENT_COUNTER_TYPE_IDS,
    SYSTEM_COUNTER_TYPE_ID,
    CounterInfo,
)
from driver.exporter.service_metrics import service_metrics
from driver.status.driver_snapshot import CncWatcher, DriverSnapshot, derived_positions, read_snapshot
from driver.status.system_counters import SystemCounterDescriptor

PREFIX = "aeron"
DEFAULT_PORT = 9300
DEFAULT_STALE_AFTER_S = 10.0  # aeron.driver.timeout: clients also give up on a driver after this long
GAUGE_SYSTEM_COUNTERS = frozenset(
    {
        SystemCounterDescriptor.CONTROLLABLE_IDLE_STRATEGY,
        SystemCounterDescriptor.CONDUCTOR_MAX_CYCLE_TIME,
        SystemCounterDescriptor.SENDER_MAX_CYCLE_TIME,
        SystemCounterDescriptor.RECEIVER_MAX_CYCLE_TIME,
        SystemCounterDescriptor.NAME_RESOLVER_MAX_TIME,
        SystemCounterDescriptor.AERON_VERSION,
        SystemCounterDescriptor.BYTES_CURRENTLY_MAPPED,
    }
)
# A label that is not a name: the version it carries would make a new metric per release.
SYSTEM_METRIC_NAME_OVERRIDES = {SystemCounterDescriptor.AERON_VERSION: "software_version"}

STREAM_LABELS = ("type", "registration_id", "session_id", "stream_id", "channel", "counter_id")
DERIVED_LABELS = ("registration_id", "session_id", "stream_id", "channel")
DERIVED_HELP = {
    "receive_gap": "Bytes an image has seen but not yet rebuilt contiguously (rcv-hwm - rcv-pos).",
    "subscriber_lag": "Bytes a subscriber is behind its image (rcv-pos - sub-pos; pub-pos for IPC).",
    "sender_backlog": "Bytes published but not yet sent (sampled pub-pos - snd-pos).",
    "publisher_headroom": "Bytes a publication may still offer before back pressure (pub-lmt - pub-pos).",
}


def snake_case(label: str) -> str:
    """``Failed offers to ReceiverProxy`` -> ``failed_offers_to_receiver_proxy``; ``NAKs sent`` -> ``naks_sent``."""
    split = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", label)
    return re.sub(r"[^a-z0-9]+", "_", split.lower()).strip("_")


def system_metric_name(descriptor: SystemCounterDescriptor) -> str:
    name = f"{PREFIX}_{SYSTEM_METRIC_NAME_OVERRIDES.get(descriptor) or snake_case(descriptor.label)}"
    return name if descriptor in GAUGE_SYSTEM_COUNTERS else f"{name}_total"


SYSTEM_METRIC_NAMES: dict[int, str] = {d.id: system_metric_name(d) for d in SystemCounterDescriptor}


def is_system_counter(c: CounterInfo) -> bool:
    """A driver system counter: type 0 at its descriptor's id with its descriptor's label."""
    if c.type_id != SYSTEM_COUNTER_TYPE_ID or c.counter_id not in SYSTEM_METRIC_NAMES:
        return False
    return SystemCounterDescriptor(c.counter_id).label == c.label


def _s(value: int | None) -> str:
    return "" if value is None else str(value)


def snapshot_metrics(snapshot: DriverSnapshot | None, now_ms: int, stale_after_ms: int) -> Iterator[Metric]:
    """Every metric family for one read of cnc.dat (``None``: no ready cnc.dat, so only ``aeron_up 0``)."""
    up = GaugeMetricFamily(f"{PREFIX}_up", "1 while cnc.dat is ready and the driver heartbeat is fresh.")
    if snapshot is None:
        up.add_metric([], 0)
        yield up
        return
    heartbeat_age_s = (now_ms - snapshot.heartbeat_ms) / 1000
    up.add_metric([], 1 if heartbeat_age_s * 1000 <= stale_after_ms else 0)
    yield up
    yield GaugeMetricFamily(
        f"{PREFIX}_driver_heartbeat_age_seconds",
        "Seconds since the driver conductor last wrote its heartbeat into cnc.dat.",
        value=heartbeat_age_s,
    )
    yield GaugeMetricFamily(
        f"{PREFIX}_driver_pid", "Process id of the driver (cnc.dat header).", value=snapshot.pid
    )
    yield GaugeMetricFamily(
        f"{PREFIX}_driver_start_time_seconds",
        "When the driver started (cnc.dat header), seconds since the epoch.",
        value=snapshot.start_timestamp_ms / 1000,
    )
    yield GaugeMetricFamily(
        f"{PREFIX}_driver_client_liveness_timeout_seconds",
        "Clients that stay silent this long are timed out by the driver.",
        value=snapshot.client_liveness_timeout_ns / 1e9,
    )
    yield GaugeMetricFamily(
        f"{PREFIX}_error_log_distinct_errors",
        "Distinct errors in the driver's error log.",
        value=snapshot.distinct_errors,
    )
    yield CounterMetricFamily(
        f"{PREFIX}_error_log_observations",
        "Observations of all errors in the driver's error log.",
        value=snapshot.error_observations,
    )

    system: list[Metric] = []
    positions = GaugeMetricFamily(
        f"{PREFIX}_stream_position_bytes",
        "Stream position counters (pub-lmt, snd-pos, snd-lmt, pub-pos, rcv-hwm, rcv-pos, sub-pos), bytes.",
        labels=STREAM_LABELS,
    )
    indicators = GaugeMetricFamily(
        f"{PREFIX}_per_image_indicator", "Per-image indicators (type 10).", labels=STREAM_LABELS
    )
    stream_events = CounterMetricFamily(
        f"{PREFIX}_stream_events",
        "Per-stream event counts of today's Aeron: snd-bpe (sender back-pressure events), snd-naks-received, "
        "rcv-naks-sent.",
        labels=STREAM_LABELS,
    )
    fc_receivers = GaugeMetricFamily(
        f"{PREFIX}_flow_control_receivers",
        "Receivers a multicast or MDC publication's flow control tracks (fc-receivers, type 17).",
        labels=STREAM_LABELS,
    )
    local_addresses = GaugeMetricFamily(
        f"{PREFIX}_local_socket_address",
        "The address each channel endpoint socket is bound to (snd-/rcv-local-sockaddr, type 14): 1 while bound.",
        labels=("type", "channel_status_id", "address", "counter_id"),
    )
    channels = GaugeMetricFamily(
        f"{PREFIX}_channel_status",
        "Channel endpoint status: 0 initializing, 1 active, -1 errored, 2 closing.",
        labels=("type", "channel", "counter_id"),
    )
    clients = GaugeMetricFamily(
        f"{PREFIX}_client_heartbeat_timestamp_seconds",
        "Last keepalive of each client, seconds since the epoch.",
        labels=("type", "client_id", "counter_id"),
    )
    client_ages = GaugeMetricFamily(
        f"{PREFIX}_client_heartbeat_age_seconds",
        "Seconds since each client's last keepalive.",
        labels=("client_id",),
    )
    recordings = GaugeMetricFamily(
        f"{PREFIX}_recording_position_bytes",
        "Archive recording positions (rec-pos), bytes.",
        labels=(
            "type",
            "recording_id",
            "session_id",
            "stream_id",
            "channel",
            "source_identity",
            "counter_id",
        ),
    )
    others = GaugeMetricFamily(
        f"{PREFIX}_counter",
        "Counters of other types, e.g. added by clients.",
        labels=("type", "type_id", "label", "counter_id"),
    )
    for c in snapshot.counters:
        cid = str(c.counter_id)
        if is_system_counter(c):
            name = SYSTEM_METRIC_NAMES[c.counter_id]
            help_text = f"System counter {c.counter_id}: {c.label}."
            if name.endswith("_total"):
                system.append(CounterMetricFamily(name, help_text, value=c.value))
            else:
                system.append(GaugeMetricFamily(name, help_text, value=c.value))
        elif c.type_id == CLIENT_CLOSES_TYPE_ID:
            system.append(
                CounterMetricFamily(
                    f"{PREFIX}_client_closes_total",
                    "Clients that closed cleanly (CLIENT_CLOSE); liveness timeouts count only clients that went silent.",
                    value=c.value,
                )
            )
        elif c.type_id in STREAM_COUNTER_TYPE_IDS:
            family: GaugeMetricFamily | CounterMetricFamily
            if c.type_id in STREAM_EVENT_COUNTER_TYPE_IDS:
                family = stream_events
            elif c.type_id == FLOW_CONTROL_RECEIVERS_TYPE_ID:
                family = fc_receivers
            elif c.type_id == PER_IMAGE_TYPE_ID:
                family = indicators
            else:
                family = positions
            family.add_metric(
                [c.type_name, _s(c.registration_id), _s(c.session_id), _s(c.stream_id), c.channel or "", cid],
                c.value,
            )
        elif c.type_id in CHANNEL_STATUS_TYPE_IDS:
            channels.add_metric([c.type_name, c.channel or "", cid], c.value)
        elif c.type_id == LOCAL_SOCKET_ADDRESS_TYPE_ID and c.local_address is not None:
            kind = c.label.split(":", 1)[0]
            local_addresses.add_metric([kind, _s(c.channel_status_id), c.local_address, cid], c.value)
        elif c.type_id == CLIENT_HEARTBEAT_TYPE_ID and c.client_id is not None:
            clients.add_metric([c.type_name, str(c.client_id), cid], c.value / 1000)
            client_ages.add_metric([str(c.client_id)], (now_ms - c.value) / 1000)
        elif c.type_id == RECORDING_POSITION_TYPE_ID and c.recording_id is not None:
            recordings.add_metric(
                [
                    c.type_name,
                    str(c.recording_id),
                    _s(c.session_id),
                    _s(c.stream_id),
                    c.channel or "",
                    c.source_identity or "",
                    cid,
                ],
                c.value,
            )
        else:
            others.add_metric([c.type_name, str(c.type_id), c.label, cid], c.value)
    yield from system
    yield from (positions, indicators, stream_events, fc_receivers, local_addresses, channels)
    yield from (clients, client_ages, recordings, others)
    yield GaugeMetricFamily(
        f"{PREFIX}_recordings_active",
        "Archive recordings in progress (allocated rec-pos counters).",
        value=sum(1 for c in snapshot.counters if c.type_id == RECORDING_POSITION_TYPE_ID),
    )

    derived = {
        name: GaugeMetricFamily(f"{PREFIX}_{name}_bytes", help_text, labels=DERIVED_LABELS)
        for name, help_text in DERIVED_HELP.items()
    }
    for d in derived_positions(snapshot.counters):
        derived[d.name].add_metric(
            [str(d.registration_id), str(d.session_id), str(d.stream_id), d.channel], d.value
        )
    yield from derived.values()
    yield from service_metrics(snapshot.counters)


class CncCollector(Collector):
    """Reads ``<aeron_dir>/cnc.dat`` (mapped read-only) on every scrape; follows the driver across restarts."""

    def __init__(
        self,
        aeron_dir: str | Path,
        stale_after_s: float = DEFAULT_STALE_AFTER_S,
        epoch_clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self.aeron_dir = Path(aeron_dir)
        self.stale_after_ms = int(stale_after_s * 1000)
        self._clock = epoch_clock_ms
        self._watcher = CncWatcher(aeron_dir)
        self._lock = threading.Lock()  # scrapes may run concurrently on the HTTP server's threads
        self._read_errors = 0

    @property
    def watcher(self) -> CncWatcher:
        return self._watcher

    def describe(self) -> list[Metric]:
        return []  # no collect() at registration time: the driver may not be there yet

    def snapshot(self) -> DriverSnapshot | None:
        with self._lock:
            cnc = self._watcher.current()
            if cnc is None:
                return None
            try:
                return read_snapshot(cnc)
            except (CncError, ValueError, OSError):
                self._read_errors += 1
                self._watcher.close()  # map again at the next scrape
                return None

    def collect(self) -> Iterator[Metric]:
        snapshot = self.snapshot()
        yield from snapshot_metrics(snapshot, self._clock(), self.stale_after_ms)
        yield CounterMetricFamily(
            f"{PREFIX}_exporter_cnc_maps",
            "Times the exporter mapped a new cnc.dat.",
            value=self._watcher.maps,
        )
        yield CounterMetricFamily(
            f"{PREFIX}_exporter_read_errors", "Scrapes that failed to read cnc.dat.", value=self._read_errors
        )

    def close(self) -> None:
        with self._lock:
            self._watcher.close()
