"""Decoding every 1.15.1 counter type from its key (counters.md §3-7), and the derived position differences."""

from __future__ import annotations

import struct

import pytest

from driver.concurrent.counters import (
    channel_status_key,
    channel_status_label,
    client_heartbeat_key,
    client_heartbeat_label,
    stream_position_key,
    stream_position_label,
)
from driver.views.counters import (
    TYPE_NAMES,
    CounterInfo,
    decode_counter,
    derived_positions,
    parse_type,
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


def derived(counters: list[CounterInfo]) -> dict[tuple[str, int], int]:
    return {(d.name, d.registration_id): d.value for d in derived_positions(counters)}


def test_derived_positions_of_a_network_stream() -> None:
    counters = [
        stream(28, 12, "pub-pos (sample)", 2, 10_000),
        stream(29, 1, "pub-lmt", 2, 64_000),
        stream(30, 2, "snd-pos", 2, 9_000),
        stream(31, 9, "snd-lmt", 2, 70_000),
        stream(32, 4, "sub-pos", 1, 8_000),
        stream(33, 3, "rcv-hwm", 3, 9_000),
        stream(34, 5, "rcv-pos", 3, 8_500),
    ]
    assert derived(counters) == {
        ("receive_gap", 3): 500,
        ("subscriber_lag", 1): 500,
        ("sender_backlog", 2): 1_000,
        ("publisher_headroom", 2): 54_000,
    }
    # pub-pos is only a sample: a sender ahead of it is no backlog.
    counters[0] = stream(28, 12, "pub-pos (sample)", 2, 8_000)
    assert derived(counters)[("sender_backlog", 2)] == 0


def test_subscriber_lag_matching() -> None:
    other = "aeron:udp?endpoint=localhost:40456|reliable=true"
    counters = [
        stream(32, 4, "sub-pos", 1, 100, channel=other),  # another URI string for the same endpoint
        stream(34, 5, "rcv-pos", 3, 300),
        stream(40, 12, "pub-pos (sample)", 8, 900, session=9, stream_id=7, channel="aeron:ipc"),
        stream(
            41, 4, "sub-pos", 10, 600, session=9, stream_id=7, channel="aeron:ipc"
        ),  # IPC: against pub-pos
        stream(42, 4, "sub-pos", 11, 600, session=99, stream_id=7, channel="aeron:ipc"),  # nothing to compare
    ]
    assert derived(counters) == {("subscriber_lag", 1): 200, ("subscriber_lag", 10): 300}
