"""Decoding every 1.15.1 counter type from its key (docs/counters.md sections 3-7)."""

from __future__ import annotations

import struct

import pytest

from driver.concurrent.counter_types import (
    TYPE_NAMES,
    CounterInfo,
    channel_status_key,
    channel_status_label,
    client_heartbeat_key,
    client_heartbeat_label,
    decode_counter,
    parse_type,
    stream_position_key,
    stream_position_label,
)

CHANNEL = "aeron:udp?endpoint=localhost:40456"


def stream(
    cid: int,
    type_id: int,
    name: str,
    reg: int,
    value: int,
    session: int = 7,
    stream_id: int = 1001,
    channel: str = CHANNEL,
) -> CounterInfo:
    key = stream_position_key(reg, session, stream_id, channel)
    return decode_counter(
        cid, type_id, key, stream_position_label(name, reg, session, stream_id, channel), value
    )


@pytest.mark.parametrize(
    ("type_id", "name"),
    [
        (1, "pub-lmt"),
        (2, "snd-pos"),
        (3, "rcv-hwm"),
        (4, "sub-pos"),
        (5, "rcv-pos"),
        (9, "snd-lmt"),
        (10, "per-image"),
        (12, "pub-pos"),
    ],
)
def test_stream_position_keys(type_id: int, name: str) -> None:
    c = stream(40, type_id, name, reg=5, value=4096, session=-952689119, stream_id=1001)
    assert (c.registration_id, c.session_id, c.stream_id, c.channel) == (5, -952689119, 1001, CHANNEL)
    assert c.type_name == name
    assert c.stream_key == (-952689119, 1001, CHANNEL)
    assert c.value == 4096


def test_long_channels_come_truncated_from_the_key_as_the_java_driver_writes_them() -> None:
    channel = (
        "aeron:udp?endpoint=localhost:40456|interface=127.0.0.1|mtu=8192|term-length=65536|ttl=4|alias=long"
    )
    c = stream(30, 2, "snd-pos", 1, 0, channel=channel)
    assert c.channel == channel[:92]


def test_a_corrupt_stream_key_falls_back_to_the_label() -> None:
    key = struct.pack("<qiii", 1, 2, 3, 5000)  # channel length beyond the key
    c = decode_counter(33, 4, key, f"sub-pos: 11 22 33 {CHANNEL} @128", 0)
    assert (c.registration_id, c.session_id, c.stream_id, c.channel) == (11, 22, 33, CHANNEL)


def test_channel_status_takes_the_channel_from_the_label_because_the_key_is_truncated() -> None:
    key = channel_status_key(CHANNEL)
    assert len(key) == len(CHANNEL)  # the 1.15.1 quirk: n - 4 channel bytes
    for type_id, name in ((6, "snd-channel"), (7, "rcv-channel")):
        c = decode_counter(25, type_id, key, channel_status_label(name, CHANNEL), 1)
        assert c.channel == CHANNEL and c.type_name == name and c.value == 1
        assert c.stream_key is None
    odd = decode_counter(25, 6, key + bytes(112 - len(key)), "some other label", 1)
    assert odd.channel == CHANNEL[:-4]


def test_client_heartbeat_and_recording_position() -> None:
    c = decode_counter(26, 11, client_heartbeat_key(42), client_heartbeat_label(42), 1_700_000_000_123)
    assert (c.client_id, c.type_name) == (42, "client-heartbeat")
    source = "127.0.0.1:50123"
    key = struct.pack("<qii", 9, -17, len(source)) + source.encode()
    rec = decode_counter(40, 100, key, "rec-pos: 9 -17 1001 aeron:udp?endpoint=localhost:40456", 2048)
    assert (rec.recording_id, rec.session_id, rec.stream_id, rec.channel, rec.source_identity) == (
        9,
        -17,
        1001,
        CHANNEL,
        source,
    )
    assert rec.type_name == "rec-pos" and rec.stream_key is None


def test_unknown_and_system_types_keep_only_the_label() -> None:
    c = decode_counter(50, 1001, b"\x01" * 16, "my app counter", 5)
    assert c.type_name == "unknown" and c.label == "my app counter" and c.stream_id is None
    s = decode_counter(0, 0, struct.pack("<i", 0), "Bytes sent", 5)
    assert s.type_name == "system" and s.channel is None


def test_parse_type_accepts_names_aliases_and_ids() -> None:
    for type_id, name in TYPE_NAMES.items():
        assert parse_type(name) == type_id
    assert parse_type("pub-pos (sample)") == 12
    assert parse_type(" RCV-POS ") == 5
    assert parse_type("1001") == 1001
    with pytest.raises(ValueError, match="unknown counter type 'rcv-posx'"):
        parse_type("rcv-posx")
