"""Today's per-stream event counters (snd-bpe, snd-naks-received, rcv-naks-sent) with Aeron's type ids, on a
real driver with real sockets, seen by ``mediadriver stat`` as by any cnc.dat reader."""

from __future__ import annotations

import subprocess
import sys
import time

from driver.client import Aeron
from driver.concurrent.counter_types import (
    RECEIVER_NAKS_SENT_TYPE_ID,
    SENDER_BPE_TYPE_ID,
    SENDER_NAKS_RECEIVED_TYPE_ID,
)
from driver.exporter.collector import CncCollector
from harness.ports import free_port
from tests.exporter.test_exporter_driver import scrape

DEADLINE_S = 10.0


def _counters(driver) -> dict[int, tuple[str, int]]:
    found: dict[int, tuple[str, int]] = {}
    counters = driver.driver.counters

    def visit(counter_id: int, type_id: int, _key: bytes, label: str) -> None:
        found[type_id] = (label, counters.get_counter_value(counter_id))

    counters.for_each(visit)
    return found


def test_naks_sent_and_received_are_counted_per_stream_under_loss(embedded_driver) -> None:
    driver = embedded_driver(receive_data_loss_rate=0.2, receive_data_loss_seed=7)
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        subscription = aeron.add_subscription(channel, 3001)
        publication = aeron.add_publication(channel, 3001)
        received = 0

        def count(*_args: object) -> None:
            nonlocal received
            received += 1

        sent = 0
        deadline = time.monotonic() + DEADLINE_S
        while received < 200 and time.monotonic() < deadline:
            if sent < 200 and publication.offer(b"m" * 100) > 0:
                sent += 1
            subscription.poll(count, 10)
        assert received == 200
        found = _counters(driver)
    label, naks_sent = found[RECEIVER_NAKS_SENT_TYPE_ID]
    assert label.startswith("rcv-naks-sent: ") and label.endswith(f" 3001 {channel}")
    assert naks_sent > 0
    label, naks_received = found[SENDER_NAKS_RECEIVED_TYPE_ID]
    assert label.startswith("snd-naks-received: ") and naks_received > 0


def test_sender_back_pressure_events_count_when_the_receiver_window_is_full(embedded_driver) -> None:
    driver = embedded_driver()
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}|term-length=64k"
    with Aeron.connect(aeron_dir=driver.aeron_dir) as aeron:
        # never polled, and a receiver window smaller than the publication's term window: the sender has data
        # it may not send
        aeron.add_subscription(f"{channel}|rcv-wnd=8k", 3002)
        publication = aeron.add_publication(channel, 3002)
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and _counters(driver).get(SENDER_BPE_TYPE_ID, ("", 0))[1] == 0:
            publication.offer(b"m" * 992)  # 1 KiB frames: the sender reaches the 8 KiB window exactly
            time.sleep(0.001)
        label, events = _counters(driver)[SENDER_BPE_TYPE_ID]
        assert label.startswith("snd-bpe: ") and events > 0
        samples = scrape(CncCollector(driver.aeron_dir))
        exported = {
            dict(labels)["type"]: value for (name, labels), value in samples.items() if name == "aeron_stream_events_total"
        }
        assert set(exported) == {"snd-bpe", "snd-naks-received", "rcv-naks-sent"}
        assert exported["snd-bpe"] > 0
        stat = subprocess.run(
            [sys.executable, "-m", "driver", "stat", "--once", "--dir", str(driver.aeron_dir)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert stat.returncode == 0, stat.stderr
    assert "snd-bpe: " in stat.stdout and "snd-naks-received: " in stat.stdout and "rcv-naks-sent: " in stat.stdout
