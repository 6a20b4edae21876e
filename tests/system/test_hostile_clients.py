"""Careless or hostile local clients cannot crash the driver or make other clients lose driver events.

A hostile client here writes straight into cnc.dat's to-driver ring (docs/ringbuffers.md section 1.1) or sends
commands no well-behaved client would (docs/commands.md sections 7 and 8). A bystander client on the same driver
keeps exchanging messages over IPC throughout, and must never fail.
"""

from __future__ import annotations

import re
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from driver.client import Aeron
from driver.client.exceptions import RegistrationError
from driver.concurrent.cnc_file import CNC_FILE, CncFile
from driver.concurrent.counter_types import CLIENT_CLOSES_TYPE_ID, SYSTEM_COUNTER_TYPE_ID
from driver.concurrent.counters import CountersReader
from driver.concurrent.error_log import format_error_log
from driver.concurrent.ring_buffer import HEADER_LENGTH, TAIL_POSITION_OFFSET, ManyToOneRingBuffer
from driver.protocol import control_protocol as cp
from driver.status.system_counters import SystemCounterDescriptor as SC
from tests.support import free_port, wait_for

SETTINGS = {
    "timer_interval_ns": 10_000_000,
    "client_liveness_timeout_ns": 3_000_000_000,
    "publication_linger_timeout_ns": 10_000_000,
    "image_liveness_timeout_ns": 300_000_000,
}


class Bystander:
    """A well-behaved client that runs its own duty cycle, so a test can make it pause."""

    def __init__(self, aeron_dir: Path, stream_id: int = 77) -> None:
        self.client = Aeron.connect(aeron_dir=aeron_dir, use_conductor_invoker=True)
        self.subscription = self.client.add_subscription("aeron:ipc", stream_id)
        self.publication = self.client.add_publication("aeron:ipc", stream_id)
        self.received: list[bytes] = []
        self.sent = 0
        self._until(lambda: self.subscription.is_connected and self.publication.is_connected, "connect")

    def _until(self, predicate, what: str, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not predicate():
            assert time.monotonic() < deadline, f"bystander: timed out waiting to {what}"
            self.client.do_work()
            time.sleep(0.001)

    def exchange(self) -> None:
        """One message there and back through the driver's IPC log; raises if the client failed."""
        message = f"message {self.sent}".encode()
        self._until(lambda: self.publication.offer(message) > 0, "offer")
        self.sent += 1
        self._until(
            lambda: (
                self.subscription.poll(
                    lambda buf, off, length, _h: self.received.append(buf.get_bytes(off, length)), 10
                )
                > 0
                or len(self.received) >= self.sent
            ),
            "receive",
        )
        self.client.do_work()

    def close(self) -> None:
        self.client.close()


class RawRing:
    """The to-driver ring of a driver's cnc.dat, mapped as any local process can map it."""

    def __init__(self, aeron_dir: Path) -> None:
        self.cnc = CncFile.map_existing(aeron_dir / CNC_FILE, writable=True)
        self.buffer = self.cnc.to_driver_buffer
        self.ring = ManyToOneRingBuffer(self.buffer)

    def claim(self, claim_length: int) -> int:
        """CAS the tail forward by ``claim_length`` as a producer does; returns the claimed index."""
        capacity = self.ring.capacity
        tail_index = capacity + TAIL_POSITION_OFFSET
        while True:
            tail = self.buffer.get_int64_volatile(tail_index)
            index = tail & (capacity - 1)
            assert index + max(claim_length, HEADER_LENGTH) <= capacity, "test claims never wrap"
            if self.buffer.compare_and_set_int64(tail_index, tail, tail + claim_length):
                return index

    def write_record(self, claim_length: int, length_field: int, msg_type_id: int, body: bytes) -> int:
        index = self.claim(claim_length)
        self.buffer.put_bytes(index + HEADER_LENGTH, body[: max(0, claim_length - HEADER_LENGTH)])
        self.buffer.put_int32(index + 4, msg_type_id)
        self.buffer.put_int32_release(index, length_field)
        return index

    def close(self) -> None:
        self.cnc.close()


def errors_logged(driver) -> str:
    return format_error_log(driver.cnc.error_log_buffer)


def add_publication_body(client_id: int, correlation_id: int, channel: str) -> bytes:
    data = channel.encode()
    return struct.pack("<qqii", client_id, correlation_id, 9, len(data)) + data


# (claim length, length field, type id): a 40-byte claim with lengths that lie, and claims whose size breaks
# the 8-byte alignment of the ring.
LYING_RECORDS = [
    pytest.param(40, 0x7FFFFFF8, 1, id="length 0x7FFFFFF8"),
    pytest.param(40, 3, 1, id="length 3"),
    pytest.param(40, 2 * 1024 * 1024, 1, id="length 2 MiB"),
    pytest.param(40, -0x7FFFFFF8, 1, id="negative length"),
    pytest.param(40, -3, 1, id="small negative length"),
    pytest.param(40, 40, 0, id="type id 0"),
    pytest.param(13, 13, 1, id="unaligned claim of 13"),
    pytest.param(44, 44, 1, id="unaligned claim of 44"),
]


@pytest.mark.parametrize(("claim_length", "length_field", "msg_type_id"), LYING_RECORDS)
def test_lying_records_are_counted_logged_and_skipped(
    embedded_driver, claim_length: int, length_field: int, msg_type_id: int
) -> None:
    embedded = embedded_driver(**SETTINGS)
    driver = embedded.driver
    bystander = Bystander(embedded.aeron_dir)
    raw = RawRing(embedded.aeron_dir)
    try:
        errors = driver.system_counters.get(SC.ERRORS)
        heap = driver.cnc.to_clients_buffer.get_bytes(0, 64)
        before = errors.get()
        body = add_publication_body(bystander.client.client_id, 10**9, "aeron:ipc") * 2
        raw.write_record(claim_length, length_field, msg_type_id, body)
        # The driver keeps serving: the bystander's messages and commands still go through.
        for _ in range(5):
            bystander.exchange()
        wait_for(lambda: errors.get() > before, 10, "the corrupt record to be counted")
        log = errors_logged(driver)
        assert "corrupt to-driver record skipped" in log, log
        extra = bystander.client.add_subscription("aeron:ipc", 78)  # a command after the corrupt record
        extra.close()
        bystander.exchange()
        assert driver.to_driver.consumer_heartbeat_time() > 0
        assert driver.cnc.to_clients_buffer.get_bytes(0, 64) != bytes(64) or heap == bytes(64)
        assert embedded._thread.is_alive()
    finally:
        raw.close()
        bystander.close()


def test_a_long_channel_is_refused_with_the_limit_named(embedded_driver) -> None:
    embedded = embedded_driver(**SETTINGS)
    bystander = Bystander(embedded.aeron_dir)
    try:
        with Aeron.connect(aeron_dir=embedded.aeron_dir) as careless:
            long_alias = "x" * 5000
            channels = [
                f"aeron:ipc?alias={long_alias}",
                f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}|alias={long_alias}",
            ]
            for channel in channels:
                for add in (careless.add_publication, careless.add_subscription):
                    with pytest.raises(
                        RegistrationError, match=r"channel of \d+ bytes is longer than the \d+-byte maximum"
                    ):
                        add(channel, 5)
                    bystander.exchange()
            # Just under the limit still works, and its events reach everyone.
            limit = int(
                __import__("re").search(
                    r"the (\d+)-byte maximum",
                    _refusal(careless, f"aeron:ipc?alias={long_alias}"),
                )[1]
            )
            prefix = "aeron:ipc?alias="
            fits = prefix + "y" * (limit - len(prefix))
            subscription = careless.add_subscription(fits, 6)
            publication = careless.add_publication(fits, 6)
            wait_for(lambda: subscription.is_connected, 10, "the image of a channel at the limit")
            publication.close()
            subscription.close()
        for _ in range(5):
            bystander.exchange()
    finally:
        bystander.close()


def _refusal(client: Aeron, channel: str) -> str:
    try:
        client.add_publication(channel, 5)
    except RegistrationError as e:
        return str(e)
    raise AssertionError(f"{channel[:40]}... was accepted")


def test_reused_correlation_ids_are_refused_and_nothing_outlives_the_clients(embedded_driver) -> None:
    embedded = embedded_driver(**SETTINGS)
    driver = embedded.driver
    conductor = driver.conductor
    bystander = Bystander(embedded.aeron_dir)
    raw = RawRing(embedded.aeron_dir)
    try:
        client_id = raw.ring.next_correlation_id()
        used = raw.ring.next_correlation_id()
        events = bystander.client.conductor  # the bystander sees every broadcast event too
        refusals: list[str] = []
        original = events._on_event

        def spy(msg_type_id: int, body: memoryview) -> None:
            if msg_type_id == cp.Event.ON_ERROR:
                error = cp.decode_error(body)
                if error.offending_correlation_id == used:
                    refusals.append(error.message)
            original(msg_type_id, body)

        events._on_event = spy
        sub = struct.pack("<qqqi", client_id, used, -1, 9) + struct.pack("<i", 9) + b"aeron:ipc"
        counter = (
            struct.pack("<qqi", client_id, used, 1001)
            + struct.pack("<i", 0)
            + struct.pack("<i", 5)
            + b"label"
        )
        assert raw.ring.write(cp.Command.ADD_PUBLICATION, add_publication_body(client_id, used, "aeron:ipc"))
        assert raw.ring.write(cp.Command.ADD_PUBLICATION, add_publication_body(client_id, used, "aeron:ipc"))
        assert raw.ring.write(
            cp.Command.ADD_EXCLUSIVE_PUBLICATION, add_publication_body(client_id, used, "aeron:ipc")
        )
        assert raw.ring.write(cp.Command.ADD_SUBSCRIPTION, sub)
        assert raw.ring.write(cp.Command.ADD_COUNTER, counter)
        deadline = time.monotonic() + 10
        while len(refusals) < 4:
            assert time.monotonic() < deadline, f"refusals so far: {refusals}"
            bystander.exchange()
        assert all(f"correlation id {used} is already in use" in r for r in refusals), refusals
        assert len(conductor._publication_links) == 2  # the bystander's and the first ADD
        # The careless client goes away (CLIENT_CLOSE), then the bystander: nothing is left behind.
        assert raw.ring.write(cp.Command.CLIENT_CLOSE, struct.pack("<qq", client_id, 0))
        bystander.exchange()
    finally:
        raw.close()
        bystander.close()

    def nothing_left() -> bool:
        return not (
            conductor._publication_links
            or conductor._subscription_links
            or conductor._counter_links
            or conductor._ipc_publications
            or conductor._network_publications
            or conductor._images
            or conductor.clients
        )

    wait_for(nothing_left, 15, "the driver to free every link, publication and client")
    def counter_types() -> set[int]:
        types: set[int] = set()
        CountersReader(driver.cnc.counters_metadata_buffer, driver.cnc.counters_values_buffer).for_each(
            lambda _id, type_id, _key, _label: types.add(type_id)
        )
        return types

    # A large log is freed on the driver's log thread: its counters go once that is done, just after the lists.
    wait_for(lambda: counter_types() == {SYSTEM_COUNTER_TYPE_ID, CLIENT_CLOSES_TYPE_ID}, 5, "only the driver's own counters to remain")
    # The driver's thread deletes a log just after it drops the publication from its lists.
    wait_for(
        lambda: (
            not any((embedded.aeron_dir / "publications").iterdir())
            and not any((embedded.aeron_dir / "images").iterdir())
        ),
        5,
        "every log file to be deleted",
    )


FLOODER = textwrap.dedent(
    """
    import struct, sys, time
    from pathlib import Path
    from driver.concurrent.cnc_file import CNC_FILE, CncFile
    from driver.concurrent.ring_buffer import ManyToOneRingBuffer

    cnc = CncFile.map_existing(Path(sys.argv[1]) / CNC_FILE, writable=True)
    ring = ManyToOneRingBuffer(cnc.to_driver_buffer)
    client_id = ring.next_correlation_id()
    bad_channel = b"aeron:bogus?x=y"
    add = struct.pack("<qqii", client_id, 1, 9, len(bad_channel)) + bad_channel
    remove = struct.pack("<qqq", client_id, 2, 123456789)
    end = time.monotonic() + float(sys.argv[2])
    written = 0
    while time.monotonic() < end:
        for _ in range(100):
            written += ring.write(1, add) + ring.write(2, remove) + ring.write(0x55, b"")
    print(written)
    cnc.close()
    """
)


def test_a_client_flooding_bad_commands_cannot_lap_a_pausing_bystander(embedded_driver) -> None:
    embedded = embedded_driver(**SETTINGS)
    driver = embedded.driver
    bystander = Bystander(embedded.aeron_dir)
    flooder = subprocess.Popen(
        [sys.executable, "-c", FLOODER, str(embedded.aeron_dir), "2.0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        end = time.monotonic() + 3.0
        while time.monotonic() < end:
            bystander.exchange()
            time.sleep(0.1)  # the bystander stops reading driver events for 100 ms at a time
        out, err = flooder.communicate(timeout=30)
        assert flooder.returncode == 0, err
        assert int(out) > 10_000, f"the flood was too small to matter: {out}"
        for _ in range(5):
            bystander.exchange()
        assert driver.conductor._command_adapter.suppressed_errors > 0
        log = errors_logged(driver)
        assert "caused more ON_ERRORs than the budget" in log, log
        # The bystander's own errors are answered again once the flood is over.
        time.sleep(1.1)
        with pytest.raises(RegistrationError, match="not supported"):
            bystander.client.add_publication("aeron:bogus?x=y", 1)
    finally:
        if flooder.poll() is None:
            flooder.kill()
            flooder.wait()
        bystander.close()


def test_a_record_running_past_the_buffer_is_logged_with_its_own_type_id(embedded_driver) -> None:
    embedded = embedded_driver(**SETTINGS)
    driver = embedded.driver
    raw = RawRing(embedded.aeron_dir)
    try:
        errors = driver.system_counters.get(SC.ERRORS)
        before = errors.get()
        raw.write_record(40, 2 * 1024 * 1024, 119, bytes(32))
        wait_for(lambda: errors.get() > before, 10, "the corrupt record to be counted")
        [line] = [line for line in errors_logged(driver).splitlines() if "corrupt to-driver record" in line]
        assert re.search(
            r"CorruptCommandRecordError: corrupt to-driver record skipped \(\d+ bytes from index (\d+)\): record at index \1 "
            r"\(length 2097152, type id 119\): runs \d+ bytes past the end of the \d+-byte buffer$",
            line,
        ), line
    finally:
        raw.close()
