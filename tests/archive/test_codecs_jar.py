"""Our schema 101/100 encodings against the bytes 1.15.1's generated encoders produce (ArchiveCodecSamples.java),
byte for byte, and our decoders on theirs."""

from __future__ import annotations

from typing import Any

import pytest

from driver.archive.codecs import messages as m
from driver.archive.codecs.mark import MARK, MarkFileHeader

pytestmark = pytest.mark.interop

A, B, C, D, E = 0x0102030405060708, -2, -(2**63), 2**63 - 1, 12345678901
N, J, K = 0x0A0B0C0D, -7, -(2**31)

# The same samples, field for field, as tests/archive/java/ArchiveCodecSamples.java.
SAMPLES: dict[str, Any] = {
    "ControlResponse": m.ControlResponse(A, B, C, m.ControlResponseCode.ERROR, "unknown recording id 7"),
    "ControlResponseOk": m.ControlResponse(1, 2, 3, m.ControlResponseCode.RECORDING_UNKNOWN, ""),
    "CatalogHeader": m.CatalogHeader(N, 1024),
    "RecordingDescriptorHeader": m.RecordingDescriptorHeader(N, 1, -3),
    "RecordingDescriptor": m.RecordingDescriptor(
        A, B, E, C, D, -1, A + 1, N, 1 << 27, 65536, 1408, K, J,
        "aeron:udp?endpoint=localhost:40123",
        "aeron:udp?endpoint=localhost:40123|term-length=65536",
        "127.0.0.1:55555",
    ),
    "RecordingStarted": m.RecordingStarted(E, A, K, J, "aeron:ipc", "aeron:ipc"),
    "RecordingProgress": m.RecordingProgress(E, A, D),
    "RecordingStopped": m.RecordingStopped(E, A, C),
    "ConnectRequest": m.ConnectRequest(A, J, "aeron:udp?endpoint=localhost:8020"),
    "CloseSessionRequest": m.CloseSessionRequest(B),
    "StartRecordingRequest": m.StartRecordingRequest(
        A, B, N, m.SourceLocation.REMOTE, "aeron:udp?endpoint=localhost:40124"
    ),
    "StopRecordingRequest": m.StopRecordingRequest(A, B, J, "aeron:ipc"),
    "ReplayRequest": m.ReplayRequest(A, B, E, -1, D, N, "aeron:udp?endpoint=localhost:40125"),
    "StopReplayRequest": m.StopReplayRequest(A, B, C),
    "ListRecordingsRequest": m.ListRecordingsRequest(A, B, E, K),
    "ListRecordingsForUriRequest": m.ListRecordingsForUriRequest(A, B, E, N, J, "endpoint=localhost"),
    "ListRecordingRequest": m.ListRecordingRequest(A, B, E),
    "ExtendRecordingRequest": m.ExtendRecordingRequest(A, B, E, J, m.SourceLocation.LOCAL, "aeron:ipc?tags=1"),
    "RecordingPositionRequest": m.RecordingPositionRequest(A, B, E),
    "TruncateRecordingRequest": m.TruncateRecordingRequest(A, B, E, D),
    "StopRecordingSubscriptionRequest": m.StopRecordingSubscriptionRequest(A, B, C),
    "StopPositionRequest": m.StopPositionRequest(A, B, E),
    "FindLastMatchingRecordingRequest": m.FindLastMatchingRecordingRequest(A, B, E, K, N, "localhost:40126"),
    "MarkFileHeader": MarkFileHeader(
        0, E, E - 5, 4242, 10, 11, 30,
        "aeron:udp?endpoint=localhost:8010", "aeron:ipc", "aeron:udp?endpoint=localhost:8030",
        "/dev/shm/aeron-test",
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def java_encodings(archive_java: Any) -> dict[str, bytes]:
    result = archive_java.run("ArchiveCodecSamples", check=True, timeout=60.0)
    lines = [line.split(" ") for line in result.stdout.splitlines() if line.strip()]
    return {name: bytes.fromhex(hexed) for name, hexed in lines}


def _schema(name: str) -> Any:
    return MARK if name == "MarkFileHeader" else m.ARCHIVE


def test_every_message_is_sampled(java_encodings: dict[str, bytes]) -> None:
    sampled = {type(msg) for msg in SAMPLES.values()}
    assert sampled == (set(m.ARCHIVE.by_class) - m.EXTENSIONS) | set(MARK.by_class)
    assert set(java_encodings) == set(SAMPLES)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_encoding_matches_jar_byte_for_byte(name: str, java_encodings: dict[str, bytes]) -> None:
    ours = _schema(name).encode(SAMPLES[name])
    assert ours.hex() == java_encodings[name].hex()


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_decoding_the_jars_bytes_gives_the_sample(name: str, java_encodings: dict[str, bytes]) -> None:
    assert _schema(name).decode(java_encodings[name]) == SAMPLES[name]
