"""A full file system refuses adds cleanly; a huge log is made without stalling the driver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from driver.client import Aeron, AeronError, RegistrationError
from driver.concurrent.counters import CountersReader
from tests.support import EmbeddedDriver, wait_for
from tests.support.tmpfs import mounted_tmpfs

MIB = 1024 * 1024


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "tmpfs", "16m") as mount_point:
        yield mount_point


def allocated_counters(driver: EmbeddedDriver) -> list[str]:
    cnc = driver.driver.cnc
    labels: list[str] = []
    CountersReader(cnc.counters_metadata_buffer, cnc.counters_values_buffer).for_each(
        lambda _i, _t, _k, label: labels.append(label)
    )
    return labels


@pytest.mark.parametrize("async_length", [64 * MIB, 1 * MIB], ids=["inline", "log-factory"])
def test_adds_past_the_free_space_are_refused_and_leave_nothing(small_tmpfs: Path, async_length: int) -> None:
    aeron_dir = small_tmpfs / "aeron"
    settings = dict(
        conductor_buffer_length=64 * 1024 + 768,
        to_clients_buffer_length=64 * 1024 + 128,
        loss_report_buffer_length=64 * 1024,
        publication_linger_timeout_ns=10_000_000,
        log_async_length=async_length,
    )
    with EmbeddedDriver(aeron_dir, **settings) as driver, Aeron.connect(aeron_dir=str(aeron_dir)) as aeron:
        channel = "aeron:ipc?term-length=1m"
        publications = []
        with pytest.raises(RegistrationError) as refused:
            for stream_id in range(1, 20):
                publications.append(aeron.add_exclusive_publication(channel, stream_id))
                counters_before = allocated_counters(driver)
                files_before = sorted(os.listdir(aeron_dir / "publications"))
        assert 2 <= len(publications) < 19
        assert "no space for" in str(refused.value) and "bytes" in str(refused.value)
        # Nothing of the refused add is left: no file, no counter; the driver is still up.
        assert sorted(os.listdir(aeron_dir / "publications")) == files_before
        assert allocated_counters(driver) == counters_before
        # Space freed (the driver deletes the log; the pages go once the client unmaps it too): adds succeed.
        publications.pop().close()
        wait_for(lambda: len(os.listdir(aeron_dir / "publications")) < len(files_before), 10, "log freed")

        def add_again() -> bool:
            try:
                publications.append(aeron.add_exclusive_publication(channel, 100))
            except RegistrationError:
                return False
            return True

        # Retried at a client's pace: refusals past the driver's error budget (1,000 per client per second) go
        # unanswered (docs/commands.md section 8).
        wait_for(add_again, 10, "an add after space was freed", interval=0.05)
        assert (aeron_dir / "cnc.dat").exists() and driver.driver.cnc.version == 15


SPARSE_WRITER = """
import json, sys
from driver.client import Aeron, RegistrationError

aeron_dir, channel = sys.argv[1], sys.argv[2]
payload = bytes(range(256)) * 16
with Aeron.connect(aeron_dir=aeron_dir) as aeron:
    pairs, refusal = [], None
    for stream_id in range(1, 20):
        subscription = aeron.add_subscription(channel, stream_id)
        try:
            pairs.append((aeron.add_exclusive_publication(channel, stream_id), subscription))
        except RegistrationError as e:
            refusal = str(e)
            break
    # Every publication writes past its three terms: each page of each log is written at least once.
    for publication, subscription in pairs:
        written = 0
        while written < 4 * 1024 * 1024:
            if publication.offer(payload) > 0:
                written += len(payload)
            subscription.poll(lambda *_: None, 64)
    print(json.dumps({"added": len(pairs), "refusal": refusal}))
"""


def test_sparse_logs_on_a_small_tmpfs_kill_no_client(small_tmpfs: Path) -> None:
    """Sparse logs are not reserved, yet the driver makes one only if the file system can hold it beside its
    other sparse logs: a client writing all of every log it got never faults; the rest are refused, saying why."""
    aeron_dir = small_tmpfs / "aeron"
    settings = dict(
        conductor_buffer_length=64 * 1024 + 768,
        to_clients_buffer_length=64 * 1024 + 128,
        loss_report_buffer_length=64 * 1024,
        publication_linger_timeout_ns=10_000_000,
    )
    with EmbeddedDriver(aeron_dir, **settings) as driver:
        result = subprocess.run(
            [sys.executable, "-c", SPARSE_WRITER, str(aeron_dir), "aeron:ipc?term-length=1m|sparse=true"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, f"client died (rc {result.returncode}): {result.stderr[-2000:]}"
        outcome = json.loads(result.stdout)
        assert 2 <= outcome["added"] < 19
        assert "no space for" in outcome["refusal"] and "sparse log" in outcome["refusal"]
        assert driver.driver.cnc.version == 15


def test_a_client_refuses_a_sparse_log_it_could_not_write_and_says_why(small_tmpfs: Path) -> None:
    """A sparse log made while there was room, then the file system filled by another program: a second client
    joining that shared publication would fault writing it, so its add fails naming the log and the space."""
    aeron_dir = small_tmpfs / "aeron"
    settings = dict(
        conductor_buffer_length=64 * 1024 + 768,
        to_clients_buffer_length=64 * 1024 + 128,
        loss_report_buffer_length=64 * 1024,
    )
    channel = "aeron:ipc?term-length=1m|sparse=true"
    with EmbeddedDriver(aeron_dir, **settings), Aeron.connect(aeron_dir=str(aeron_dir)) as first:
        first.add_publication(channel, 7)
        blob = small_tmpfs / "blob"
        with open(blob, "wb") as f:  # another program takes what is left
            f.write(bytes(os.statvfs(small_tmpfs).f_bavail * os.statvfs(small_tmpfs).f_frsize))
        with Aeron.connect(aeron_dir=str(aeron_dir)) as second:
            with pytest.raises(AeronError, match=r"cannot publish on .*\.logbuffer: the log is sparse") as refused:
                second.add_publication(channel, 7)
            assert "would fault" in str(refused.value)
            assert second.add_counter(1, "still alive") is not None
        blob.unlink()


def test_a_one_gib_term_add_does_not_stall_the_driver(aeron_dir: Path) -> None:
    with EmbeddedDriver(aeron_dir) as driver, Aeron.connect(aeron_dir=str(aeron_dir)) as pinger:
        ring = driver.driver.to_driver
        ages: list[int] = []
        pings: list[float] = []
        with Aeron.connect(aeron_dir=str(aeron_dir)) as big:
            future_done: list[object] = []
            adder = threading.Thread(
                target=lambda: future_done.append(
                    big.add_exclusive_publication("aeron:ipc?term-length=1g", 1)
                )
            )
            started = time.monotonic()
            adder.start()
            while adder.is_alive() and time.monotonic() - started < 60:
                ages.append(time.time_ns() // 1_000_000 - ring.consumer_heartbeat_time())
                t0 = time.monotonic()
                pinger.add_counter(1001, "ping").close()
                pings.append(time.monotonic() - t0)
                time.sleep(0.05)
            adder.join(60)
            assert future_done, "the 1 GiB add was not answered"
            future_done[0].close()
        assert len(pings) >= 3, "the add finished too fast to observe"
        assert max(ages) < 1000, f"heartbeat aged {max(ages)} ms"
        assert max(pings) < 1.0, f"a ping took {max(pings):.3f} s"
