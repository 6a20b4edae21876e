"""The exporter against our driver's cnc.dat: read-only mapping, values equal ``stat --once``, driver restarts,
``mediadriver exporter`` and ``mediadriver run --metrics-port``."""

from __future__ import annotations

import re
import selectors
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from driver.client import Aeron
from driver.concurrent.counter_types import stream_position_key, stream_position_label
from driver.exporter.collector import SYSTEM_METRIC_NAMES, CncCollector
from driver.status.system_counters import FIRST_FREE_COUNTER_ID, SystemCounterDescriptor
from tests.support.recording_counters import REC_POS_TYPE_ID, rec_pos_key, rec_pos_label

STAT_LINE = re.compile(r"^ *(\d+): +([\d,-]+) - (.*)$")
ID_BY_SYSTEM_NAME = {name: cid for cid, name in SYSTEM_METRIC_NAMES.items()}
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def scrape(collector: CncCollector) -> Samples:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return parse(generate_latest(registry).decode())


def counter_values(samples: Samples) -> dict[int, int]:
    """Counter id -> value, from every series that is one counter (system counters are known by name)."""
    values: dict[int, int] = {}
    for (name, labels), value in samples.items():
        label_map = dict(labels)
        if name in ID_BY_SYSTEM_NAME:
            values[ID_BY_SYSTEM_NAME[name]] = int(value)
        elif name == "aeron_client_closes_total":  # the driver's own counter, after the system counters
            values[FIRST_FREE_COUNTER_ID - 1] = int(value)
        elif "counter_id" in label_map:
            scale = 1000 if name == "aeron_client_heartbeat_timestamp_seconds" else 1
            values[int(label_map["counter_id"])] = round(value * scale)
    return values


def stat_once(aeron_dir: Path) -> dict[int, int]:
    result = subprocess.run(
        [sys.executable, "-m", "driver", "stat", "--dir", str(aeron_dir), "--once"],
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    )
    return {
        int(m[1]): int(m[2].replace(",", "")) for m in map(STAT_LINE.match, result.stdout.splitlines()) if m
    }


def add_stream_counters(aeron: Aeron) -> None:
    channel = "aeron:udp?endpoint=localhost:40999"
    for type_id, name, value in ((1, "pub-lmt", 65536), (2, "snd-pos", 4096), (12, "pub-pos (sample)", 8192)):
        key = stream_position_key(77, 5, 1001, channel)
        aeron.add_counter(type_id, stream_position_label(name, 77, 5, 1001, channel), key).set(value)
    aeron.add_counter(1001, "my app counter").set(-5)
    # The archive's recording position, with 1.15.1's key and label (docs/counters.md section 7).
    aeron.add_counter(
        REC_POS_TYPE_ID, rec_pos_label(3, 5, 1001, channel), rec_pos_key(3, 5, "aeron:ipc")
    ).set(12_288)


def test_values_equal_stat_once_and_the_mapping_is_read_only(driver_process) -> None:
    driver = driver_process()
    # Invoker mode: no keepalives unless we ask, so the client-heartbeat value holds still.
    with Aeron.connect(aeron_dir=driver.aeron_dir, use_conductor_invoker=True) as aeron:
        add_stream_counters(aeron)
        collector = CncCollector(driver.aeron_dir)
        try:
            samples = scrape(collector)
            exported = counter_values(samples)
            stat = stat_once(driver.aeron_dir)
            assert len(stat) == FIRST_FREE_COUNTER_ID + 1 + 5  # the driver's, client-heartbeat, the client's counters
            # the agents' timings may move between the two reads
            timings = {d.id for d in SystemCounterDescriptor if "cycle" in d.label or "NameResolver" in d.label}
            assert {k: v for k, v in exported.items() if k not in timings} == {
                k: v for k, v in stat.items() if k not in timings
            }
            assert set(exported) == set(stat)
            assert samples[("aeron_recordings_active", frozenset())] == 1
            rec = {
                dict(labels)["recording_id"]: (dict(labels), value)
                for (name, labels), value in samples.items()
                if name == "aeron_recording_position_bytes"
            }
            assert rec["3"][1] == 12_288
            assert {k: rec["3"][0][k] for k in ("session_id", "stream_id", "channel", "source_identity")} == {
                "session_id": "5",
                "stream_id": "1001",
                "channel": "aeron:udp?endpoint=localhost:40999",
                "source_identity": "aeron:ipc",
            }
            assert samples[("aeron_up", frozenset())] == 1
            assert samples[("aeron_driver_pid", frozenset())] == driver.pid
            assert (
                samples[
                    (
                        "aeron_sender_backlog_bytes",
                        frozenset(
                            {
                                ("registration_id", "77"),
                                ("session_id", "5"),
                                ("stream_id", "1001"),
                                ("channel", "aeron:udp?endpoint=localhost:40999"),
                            }
                        ),
                    )
                ]
                == 8192 - 4096
            )
            cnc = str(driver.aeron_dir / "cnc.dat")
            mappings = [
                line.split() for line in Path("/proc/self/maps").read_text().splitlines() if cnc in line
            ]
            exporter_maps = [m for m in mappings if not m[1].startswith("rw")]
            assert len(exporter_maps) == 1 and exporter_maps[0][1] == "r--s", mappings  # the client maps rw
        finally:
            collector.close()
        assert not [
            line
            for line in Path("/proc/self/maps").read_text().splitlines()
            if cnc in line and "r--s" in line
        ]


def test_survives_a_driver_restart(driver_process) -> None:
    first = driver_process()
    collector = CncCollector(first.aeron_dir, stale_after_s=1.5)
    try:
        with Aeron.connect(aeron_dir=first.aeron_dir) as aeron:
            aeron.add_counter(1001, "before restart").set(111)
            before = scrape(collector)
        assert before[("aeron_driver_pid", frozenset())] == first.pid
        assert counter_values(before)[FIRST_FREE_COUNTER_ID + 1] == 111  # after the heartbeat
        assert first.stop() == 0

        deadline = time.monotonic() + 6
        while scrape(collector)[("aeron_up", frozenset())] != 0:  # stale heartbeat: down
            assert time.monotonic() < deadline, "aeron_up stayed 1 after the driver stopped"
            time.sleep(0.1)

        # The old cnc.dat (stale but version 15) is there until the new driver replaces it.
        second = driver_process("--delete-dir-on-start")
        deadline = time.monotonic() + 10
        while scrape(collector).get(("aeron_driver_pid", frozenset())) != second.pid:
            assert time.monotonic() < deadline, "the exporter did not follow the new driver"
            time.sleep(0.05)
        with Aeron.connect(aeron_dir=second.aeron_dir) as aeron:
            aeron.add_counter(1002, "after restart").set(222)
            after = scrape(collector)
        assert after[("aeron_up", frozenset())] == 1
        assert after[("aeron_driver_pid", frozenset())] == second.pid != first.pid
        assert after[("aeron_exporter_cnc_maps_total", frozenset())] == 2
        assert counter_values(after)[FIRST_FREE_COUNTER_ID + 1] == 222
        assert not any(("label", "before restart") in labels for _name, labels in after)
    finally:
        collector.close()


def read_line(proc: subprocess.Popen, pattern: str, timeout: float = 10.0) -> re.Match[str]:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if sel.select(deadline - time.monotonic()):
                line = proc.stdout.readline()
                match = re.search(pattern, line)
                if match:
                    return match
                assert line, f"output ended before {pattern!r}"
    raise AssertionError(f"no line matching {pattern!r} within {timeout} s")


def get(url: str) -> Samples:
    with urllib.request.urlopen(url, timeout=5) as response:
        return parse(response.read().decode())


def test_run_serves_its_own_metrics_and_stops_them(driver_process) -> None:
    driver = driver_process("--metrics-port", "0")
    url = read_line(driver.proc, r"metrics on (http://\S+)")[1]
    samples = get(url)
    assert samples[("aeron_up", frozenset())] == 1
    assert samples[("aeron_driver_pid", frozenset())] == driver.pid
    assert samples[("aeron_driver_process_cpu_seconds_total", frozenset())] > 0
    assert driver.stop() == 0
    try:
        urllib.request.urlopen(url, timeout=2)
        raise AssertionError("metrics still served after the driver stopped")
    except OSError:
        pass


def test_exporter_command(driver_process, tmp_path: Path) -> None:
    driver = driver_process()
    proc = subprocess.Popen(
        [sys.executable, "-m", "driver", "exporter", "--dir", str(driver.aeron_dir), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = read_line(proc, r"serving (http://127\.0\.0\.1:\d+/metrics)")[1]
        samples = get(url)
        assert samples[("aeron_up", frozenset())] == 1
        assert samples[("aeron_driver_pid", frozenset())] == driver.pid
        port = url.rsplit(":", 1)[1].split("/")[0]
        busy = subprocess.run(
            [sys.executable, "-m", "driver", "exporter", "--dir", str(driver.aeron_dir), "--port", port],
            capture_output=True,
            text=True,
            timeout=20,
        )
        assert busy.returncode == 1 and f"cannot listen on 127.0.0.1:{port}" in busy.stderr
        proc.send_signal(signal.SIGTERM)
        out, _err = proc.communicate(timeout=10)
        assert proc.returncode == 0 and "exporter stopped" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
