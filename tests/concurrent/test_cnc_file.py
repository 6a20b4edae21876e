"""cnc.dat (CnC version 15) against docs/cnc.md: file length, region offsets, header fields, version checks."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from driver.concurrent import cnc_file as cf
from driver.concurrent.broadcast import BroadcastReceiver, BroadcastTransmitter, CopyBroadcastReceiver
from driver.concurrent.cnc_file import CNC_FILE, CNC_VERSION, CncError, CncFile, CncLengths, check_version
from driver.concurrent.counters import CountersManager, CountersReader
from driver.concurrent.error_log import DistinctErrorLog, ErrorLogReader
from driver.concurrent.ring_buffer import ManyToOneRingBuffer
from driver.context import DriverContext

DEFAULT_FILE_LENGTH = 8_392_704
DEFAULT_REGION_OFFSETS = [128, 1_049_472, 2_098_176, 6_292_480, 7_341_056]
LIVENESS_NS = 5_000_000_000
START_MS = 1_700_000_000_123
PID = 424242


def default_lengths() -> CncLengths:
    ctx = DriverContext.from_sources(environ={})
    return CncLengths(
        to_driver=ctx.conductor_buffer_length,
        to_clients=ctx.to_clients_buffer_length,
        counters_metadata=ctx.counters_metadata_buffer_length,
        counters_values=ctx.counters_values_buffer_length,
        error_log=ctx.error_buffer_length,
    )


SMALL = CncLengths(
    to_driver=1024 + 768, to_clients=1024 + 128, counters_metadata=2048, counters_values=512, error_log=1024
)


@pytest.fixture
def directory(aeron_dir: Path) -> Path:
    aeron_dir.mkdir(parents=True)
    return aeron_dir


def create(directory: Path, lengths: CncLengths | None = None) -> CncFile:
    return CncFile.create(directory, lengths or default_lengths(), LIVENESS_NS, START_MS, PID)


def raw(directory: Path) -> bytes:
    return (directory / CNC_FILE).read_bytes()


def i32(data: bytes, offset: int) -> int:
    return struct.unpack_from("<i", data, offset)[0]


def i64(data: bytes, offset: int) -> int:
    return struct.unpack_from("<q", data, offset)[0]


def test_header_layout_constants() -> None:
    assert cf.CNC_VERSION == 15
    assert cf.CNC_FILE == "cnc.dat"
    assert [
        cf.CNC_VERSION_FIELD_OFFSET,
        cf.TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET,
        cf.TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET,
        cf.COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET,
        cf.COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET,
        cf.ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET,
        cf.CLIENT_LIVENESS_TIMEOUT_FIELD_OFFSET,
        cf.START_TIMESTAMP_FIELD_OFFSET,
        cf.PID_FIELD_OFFSET,
    ] == [0, 4, 8, 12, 16, 20, 24, 32, 40]
    assert cf.META_DATA_LENGTH == 48
    assert cf.END_OF_METADATA_OFFSET == 128


def test_default_lengths_give_the_1_15_1_file_length(directory: Path) -> None:
    lengths = default_lengths()
    assert cf.cnc_file_length(lengths, 4096) == DEFAULT_FILE_LENGTH
    with create(directory):
        assert (directory / CNC_FILE).stat().st_size == DEFAULT_FILE_LENGTH


def test_file_length_is_page_aligned(directory: Path) -> None:
    assert SMALL.total() == 128 + 1792 + 1152 + 2048 + 512 + 1024
    assert cf.cnc_file_length(SMALL, 4096) == 8192
    assert cf.cnc_file_length(SMALL, 65536) == 65536
    with create(directory, SMALL):
        assert (directory / CNC_FILE).stat().st_size == 8192


def test_region_offsets_and_lengths_with_defaults(directory: Path) -> None:
    with create(directory) as cnc:
        regions = [
            cnc.to_driver_buffer,
            cnc.to_clients_buffer,
            cnc.counters_metadata_buffer,
            cnc.counters_values_buffer,
            cnc.error_log_buffer,
        ]
        assert [len(r) for r in regions] == [1_049_344, 1_048_704, 4_194_304, 1_048_576, 1_048_576]
        for number, region in enumerate(regions, start=1):
            region.put_int64(0, 0x1100 + number)
            region.put_int64(len(region) - 8, 0x2200 + number)
    data = raw(directory)
    for number, offset in enumerate(DEFAULT_REGION_OFFSETS, start=1):
        assert i64(data, offset) == 0x1100 + number, f"region {number} does not start at {offset}"
    ends = [*DEFAULT_REGION_OFFSETS[1:], DEFAULT_REGION_OFFSETS[-1] + 1_048_576]
    for number, end in enumerate(ends, start=1):
        assert i64(data, end - 8) == 0x2200 + number, f"region {number} does not end at {end}"
    assert data[ends[-1] :] == bytes(DEFAULT_FILE_LENGTH - ends[-1]), (
        "page padding after the error log is zero"
    )


def test_to_driver_consumer_heartbeat_is_at_the_spec_absolute_offset(directory: Path) -> None:
    with create(directory) as cnc:
        ring = ManyToOneRingBuffer(cnc.to_driver_buffer)
        ring.set_consumer_heartbeat_time(1_234_567)
    assert i64(raw(directory), 1_049_344) == 1_234_567


def test_header_fields_at_offsets_4_to_47(directory: Path) -> None:
    with create(directory):
        data = raw(directory)
    assert i32(data, 0) == 0
    assert i32(data, 4) == 1_049_344
    assert i32(data, 8) == 1_048_704
    assert i32(data, 12) == 4_194_304
    assert i32(data, 16) == 1_048_576
    assert i32(data, 20) == 1_048_576
    assert i64(data, 24) == LIVENESS_NS
    assert i64(data, 32) == START_MS
    assert i64(data, 40) == PID
    assert data[48:128] == bytes(80), "48..127 is zero padding"


def test_header_accessors(directory: Path) -> None:
    with create(directory, SMALL) as cnc:
        assert cnc.lengths() == SMALL
        assert cnc.client_liveness_timeout_ns == LIVENESS_NS
        assert cnc.start_timestamp_ms == START_MS
        assert cnc.pid == PID
        assert cnc.writable
        assert cnc.path == directory / CNC_FILE


def test_version_is_zero_until_signal_ready_then_15(directory: Path) -> None:
    with create(directory) as cnc:
        assert cnc.version == 0
        assert i32(raw(directory), 0) == 0
        with pytest.raises(CncError, match="version 0"):
            check_version(cnc)
        cnc.signal_ready()
        assert cnc.version == CNC_VERSION == 15
        assert i32(raw(directory), 0) == 15
        check_version(cnc)


def test_create_replaces_a_stale_file_with_a_zero_filled_one(directory: Path) -> None:
    (directory / CNC_FILE).write_bytes(b"\xff" * (DEFAULT_FILE_LENGTH + 4096))
    with create(directory, SMALL) as cnc:
        assert cnc.version == 0
        assert cnc.to_driver_buffer.get_bytes(0, len(cnc.to_driver_buffer)) == bytes(
            len(cnc.to_driver_buffer)
        )
    data = raw(directory)
    assert len(data) == 8192
    assert data[128:] == bytes(8192 - 128)


def test_map_existing_sees_what_the_creator_wrote(directory: Path) -> None:
    with create(directory, SMALL) as creator:
        creator.signal_ready()
        creator.counters_values_buffer.put_int64(128, 99)
        with CncFile.map_existing(directory / CNC_FILE) as other:
            check_version(other)
            assert other.lengths() == SMALL
            assert other.pid == PID
            assert other.counters_values_buffer.get_int64(128) == 99
            other.counters_values_buffer.put_int64(128, 100)
        assert creator.counters_values_buffer.get_int64(128) == 100


def test_map_existing_read_only(directory: Path) -> None:
    with create(directory, SMALL) as creator:
        creator.signal_ready()
    with CncFile.map_existing(directory / CNC_FILE, writable=False) as cnc:
        assert not cnc.writable
        check_version(cnc)
        assert cnc.lengths() == SMALL
        with pytest.raises(TypeError):
            cnc.counters_values_buffer.put_int64(0, 1)


def test_map_existing_of_a_missing_file_raises_file_not_found(directory: Path) -> None:
    with pytest.raises(FileNotFoundError):
        CncFile.map_existing(directory / CNC_FILE)


@pytest.mark.parametrize("size", [0, 4, 127])
def test_map_existing_of_a_too_short_file_raises_cnc_error(directory: Path, size: int) -> None:
    path = directory / CNC_FILE
    path.write_bytes(struct.pack("<i", 15).ljust(size, b"\0")[:size])
    with pytest.raises(CncError, match=rf"{size} bytes, too short"):
        CncFile.map_existing(path)


def test_map_existing_with_header_lengths_past_the_end_raises_cnc_error(directory: Path) -> None:
    path = directory / CNC_FILE
    header = bytearray(4096)
    struct.pack_into("<iiiiii", header, 0, 15, 1_049_344, 1_048_704, 4_194_304, 1_048_576, 1_048_576)
    path.write_bytes(bytes(header))
    with pytest.raises(CncError, match=r"header lengths need 8389632 bytes but the file has 4096"):
        CncFile.map_existing(path)


def test_map_existing_with_a_negative_header_length_raises_cnc_error(directory: Path) -> None:
    path = directory / CNC_FILE
    header = bytearray(4096)
    struct.pack_into("<iiiiii", header, 0, 15, 1024, -512, 0, 0, 0)
    path.write_bytes(bytes(header))
    with pytest.raises(CncError):
        CncFile.map_existing(path)


def test_check_version_of_another_aeron_version_names_both_versions(directory: Path) -> None:
    with create(directory, SMALL) as cnc:
        cnc.buffer.put_int32_volatile(0, 16)
    with CncFile.map_existing(directory / CNC_FILE, writable=False) as cnc:
        assert cnc.version == 16
        with pytest.raises(CncError) as info:
            check_version(cnc)
    message = str(info.value)
    assert "version 16" in message
    assert "version 15" in message
    assert str(directory / CNC_FILE) in message


def test_close_releases_the_mapping_after_every_region_was_used(directory: Path) -> None:
    """The ring, broadcast, counters and error log wrappers must not pin the mapping after close()."""
    seen: list[tuple[int, bytes]] = []
    cnc = create(directory)
    ring = ManyToOneRingBuffer(cnc.to_driver_buffer)
    assert ring.write(7, b"to the driver")
    ring.read(lambda type_id, buffer, index, length: seen.append((type_id, buffer.get_bytes(index, length))))
    assert ring.write(8, b"left for the next reader")

    transmitter = BroadcastTransmitter(cnc.to_clients_buffer)
    receiver = CopyBroadcastReceiver(BroadcastReceiver(cnc.to_clients_buffer))
    transmitter.transmit(0x0F04, b"\x01" * 8)
    assert receiver.receive(lambda type_id, body: seen.append((type_id, bytes(body)))) == 1

    manager = CountersManager(cnc.counters_metadata_buffer, cnc.counters_values_buffer, lambda: START_MS)
    counter_id = manager.allocate("a counter", 1, b"key")
    cnc.counters_values_buffer.put_int64(counter_id * 128, 42)
    labels: list[str] = []
    CountersReader(cnc.counters_metadata_buffer, cnc.counters_values_buffer).for_each(
        lambda cid, type_id, key, label: labels.append(label)
    )

    log = DistinctErrorLog(cnc.error_log_buffer, lambda: START_MS)
    assert log.record(RuntimeError("boom"))
    assert ErrorLogReader.has_errors(cnc.error_log_buffer)

    views = [cnc.to_driver_buffer.view[0:16], cnc.error_log_buffer.view]
    del views  # a caller's short-lived slices are gone by close time
    cnc.signal_ready()
    cnc.close()  # must not raise BufferError ("cannot close exported pointers exist")
    cnc.close()  # idempotent

    assert seen == [(7, b"to the driver"), (0x0F04, b"\x01" * 8)]
    assert labels == ["a counter"]
    with CncFile.map_existing(directory / CNC_FILE) as again:
        check_version(again)
        assert again.counters_values_buffer.get_int64(counter_id * 128) == 42
        assert ErrorLogReader.has_errors(again.error_log_buffer)
        leftover: list[bytes] = []
        ManyToOneRingBuffer(again.to_driver_buffer).read(
            lambda type_id, buffer, index, length: leftover.append(buffer.get_bytes(index, length))
        )
        assert leftover == [b"left for the next reader"]


def test_regions_are_unusable_after_close(directory: Path) -> None:
    cnc = create(directory, SMALL)
    region = cnc.to_clients_buffer
    cnc.close()
    with pytest.raises((ValueError, TypeError, AttributeError)):
        region.get_int64(0)


def test_context_manager_closes_even_when_the_body_raises(directory: Path) -> None:
    with pytest.raises(RuntimeError, match="inside"), create(directory, SMALL) as cnc:
        cnc.to_driver_buffer.put_int64(0, 1)
        raise RuntimeError("inside")
    assert cnc.buffer is None
