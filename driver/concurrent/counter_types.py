"""What Aeron 1.15.1 puts in a counter's type id, key and label (docs/counters.md sections 2-7), both ways.

The driver encodes keys and labels when it allocates its counters; the CLI's views and the exporter decode
them from any 1.15.1 cnc.dat (ours or the Java driver's). Labels are encoded ASCII-safe and truncated
exactly where the Java driver truncates them.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from driver.concurrent.counters import MAX_KEY_LENGTH, MAX_LABEL_LENGTH, CountersReader, java_ascii
from driver.util.bit_util import SIZE_OF_INT32, SIZE_OF_INT64

# Type ids (docs/counters.md section 3).
SYSTEM_COUNTER_TYPE_ID = 0
PUBLISHER_LIMIT_TYPE_ID = 1
SENDER_POSITION_TYPE_ID = 2
RECEIVER_HWM_TYPE_ID = 3
SUBSCRIBER_POSITION_TYPE_ID = 4
RECEIVER_POS_TYPE_ID = 5
SEND_CHANNEL_STATUS_TYPE_ID = 6
RECEIVE_CHANNEL_STATUS_TYPE_ID = 7
SENDER_LIMIT_TYPE_ID = 9
PER_IMAGE_TYPE_ID = 10
CLIENT_HEARTBEAT_TYPE_ID = 11
PUBLISHER_POS_TYPE_ID = 12
SENDER_BPE_TYPE_ID = 13  # today's Aeron (1.18+), not in 1.15.1: docs/counters.md section 8
LOCAL_SOCKET_ADDRESS_TYPE_ID = 14
FLOW_CONTROL_RECEIVERS_TYPE_ID = 17
SENDER_NAKS_RECEIVED_TYPE_ID = 19
RECEIVER_NAKS_SENT_TYPE_ID = 20
RECORDING_POSITION_TYPE_ID = 100  # Aeron Archive's RecordingPos, allocated through ADD_COUNTER
CLIENT_CLOSES_TYPE_ID = 1100
"""This driver's count of clients that closed cleanly (docs/counters.md section 9): not a type-0 system counter, so
that no tool reading today's Aeron's system counters by id mistakes it for one (Aeron has used id 40 since)."""

# Label prefixes, as the Java driver writes them.
PUBLISHER_POS_NAME = "pub-pos (sample)"
PUBLISHER_LIMIT_NAME = "pub-lmt"
SENDER_POSITION_NAME = "snd-pos"
SENDER_LIMIT_NAME = "snd-lmt"
SUBSCRIBER_POSITION_NAME = "sub-pos"
RECEIVER_HWM_NAME = "rcv-hwm"
RECEIVER_POS_NAME = "rcv-pos"
CLIENT_HEARTBEAT_NAME = "client-heartbeat"
SENDER_BPE_NAME = "snd-bpe"
SENDER_NAKS_RECEIVED_NAME = "snd-naks-received"
RECEIVER_NAKS_SENT_NAME = "rcv-naks-sent"
SEND_LOCAL_SOCKET_ADDRESS_NAME = "snd-local-sockaddr"
RECEIVE_LOCAL_SOCKET_ADDRESS_NAME = "rcv-local-sockaddr"
LOCAL_SOCKET_ADDRESS_TYPE_NAME = "local-sockaddr"
FLOW_CONTROL_RECEIVERS_NAME = "fc-receivers"
SEND_CHANNEL_STATUS_NAME = "snd-channel"
RECEIVE_CHANNEL_STATUS_NAME = "rcv-channel"

_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_STREAM_KEY_HEAD = struct.Struct("<qiii")
_REC_KEY_HEAD = struct.Struct("<qii")


# StreamPositionCounter key: registration id | session id | stream id | channel length | channel.
STREAM_REGISTRATION_ID_OFFSET = 0
STREAM_SESSION_ID_OFFSET = STREAM_REGISTRATION_ID_OFFSET + SIZE_OF_INT64
STREAM_STREAM_ID_OFFSET = STREAM_SESSION_ID_OFFSET + SIZE_OF_INT32
STREAM_CHANNEL_LENGTH_OFFSET = STREAM_STREAM_ID_OFFSET + SIZE_OF_INT32
STREAM_CHANNEL_OFFSET = STREAM_CHANNEL_LENGTH_OFFSET + SIZE_OF_INT32
# 1.15.1 bytecode: StreamPositionCounter.MAX_CHANNEL_LENGTH = 92 (20 + 92 = 112, the whole key).
STREAM_MAX_CHANNEL_LENGTH = MAX_KEY_LENGTH - STREAM_CHANNEL_OFFSET
# Sub-pos labels get " @<join position>" only while shorter than this (SubscriberPos).
JOIN_POSITION_LABEL_LIMIT = 360

# Local socket address key (today's Aeron): channel status counter id | address length | ASCII address.
LOCAL_SOCKET_ADDRESS_STATUS_ID_OFFSET = 0
LOCAL_SOCKET_ADDRESS_LENGTH_OFFSET = LOCAL_SOCKET_ADDRESS_STATUS_ID_OFFSET + SIZE_OF_INT32
LOCAL_SOCKET_ADDRESS_STRING_OFFSET = LOCAL_SOCKET_ADDRESS_LENGTH_OFFSET + SIZE_OF_INT32
LOCAL_SOCKET_ADDRESS_MAX_LENGTH = len("[ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255]:65536")

CHANNEL_STATUS_CHANNEL_OFFSET = SIZE_OF_INT32
CHANNEL_STATUS_MAX_CHANNEL_LENGTH = MAX_KEY_LENGTH - CHANNEL_STATUS_CHANNEL_OFFSET  # 108



def _label(prefix: str, tail: str) -> str:
    """``prefix`` then as much of ``tail`` as fits in MAX_LABEL_LENGTH, encoded as the Java driver does."""
    head = java_ascii(prefix)
    return (head + java_ascii(tail)[: max(0, MAX_LABEL_LENGTH - len(head))]).decode("ascii")


def stream_position_key(registration_id: int, session_id: int, stream_id: int, channel: str) -> bytes:
    """Key of pub-lmt/snd-pos/snd-lmt/pub-pos/sub-pos/rcv-hwm/rcv-pos counters; ``20 + n`` bytes."""
    channel_bytes = java_ascii(channel)[:STREAM_MAX_CHANNEL_LENGTH]
    return _STREAM_KEY_HEAD.pack(registration_id, session_id, stream_id, len(channel_bytes)) + channel_bytes


def stream_position_label(
    name: str,
    registration_id: int,
    session_id: int,
    stream_id: int,
    channel: str,
    join_position: int | None = None,
) -> str:
    """``<name>: <registrationId> <sessionId> <streamId> <channel>[ @<joinPosition>]``, at most 380 chars."""
    label = _label(f"{name}: {registration_id} {session_id} {stream_id} ", channel)
    if join_position is not None and len(label) < JOIN_POSITION_LABEL_LIMIT:
        label = f"{label} @{join_position}"[:MAX_LABEL_LENGTH]
    return label


def channel_status_key(channel: str) -> bytes:
    """Send/receive channel status key exactly as 1.15.1 writes it.

    The driver lays out ``int32 n | n channel bytes`` but passes ``n`` as the key length, so only
    the length and the first ``n - 4`` channel bytes reach the record (docs/counters.md §5).
    """
    channel_bytes = java_ascii(channel)[:CHANNEL_STATUS_MAX_CHANNEL_LENGTH]
    return (_I32.pack(len(channel_bytes)) + channel_bytes)[: len(channel_bytes)]


def channel_status_label(name: str, channel: str) -> str:
    """``snd-channel: <channel>`` / ``rcv-channel: <channel>``, at most 380 chars."""
    return _label(f"{name}: ", channel)


def format_socket_address(host: str, port: int) -> str:
    """``127.0.0.1:40123`` / ``[::1]:40123``, as Aeron writes a bound address."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def local_socket_address_key(channel_status_id: int, address: str) -> bytes:
    text = java_ascii(address)[:LOCAL_SOCKET_ADDRESS_MAX_LENGTH]
    return _I32.pack(channel_status_id) + _I32.pack(len(text)) + text


def local_socket_address_label(name: str, channel_status_id: int, address: str) -> str:
    """``snd-local-sockaddr: <channel status id> <address>`` (or rcv-)."""
    return _label(f"{name}: {channel_status_id} ", address)


def client_heartbeat_key(client_id: int) -> bytes:
    return _I64.pack(client_id)


def client_heartbeat_label(client_id: int) -> str:
    return f"{CLIENT_HEARTBEAT_NAME}: {client_id}"


# --- decoding ----------------------------------------------------------------------------------------

# rec-pos key: recording id | session id | source identity length | source identity (≤ 96 bytes).
RECORDING_SOURCE_IDENTITY_OFFSET = 16
RECORDING_MAX_SOURCE_IDENTITY_LENGTH = 96

# The ``type`` label of every known type id; unknown ids get "unknown" (and keep their id elsewhere).
TYPE_NAMES: dict[int, str] = {
    SYSTEM_COUNTER_TYPE_ID: "system",
    PUBLISHER_LIMIT_TYPE_ID: PUBLISHER_LIMIT_NAME,
    SENDER_POSITION_TYPE_ID: SENDER_POSITION_NAME,
    RECEIVER_HWM_TYPE_ID: RECEIVER_HWM_NAME,
    SUBSCRIBER_POSITION_TYPE_ID: SUBSCRIBER_POSITION_NAME,
    RECEIVER_POS_TYPE_ID: RECEIVER_POS_NAME,
    SEND_CHANNEL_STATUS_TYPE_ID: SEND_CHANNEL_STATUS_NAME,
    RECEIVE_CHANNEL_STATUS_TYPE_ID: RECEIVE_CHANNEL_STATUS_NAME,
    SENDER_LIMIT_TYPE_ID: SENDER_LIMIT_NAME,
    PER_IMAGE_TYPE_ID: "per-image",
    CLIENT_HEARTBEAT_TYPE_ID: CLIENT_HEARTBEAT_NAME,
    PUBLISHER_POS_TYPE_ID: "pub-pos",
    SENDER_BPE_TYPE_ID: SENDER_BPE_NAME,
    LOCAL_SOCKET_ADDRESS_TYPE_ID: LOCAL_SOCKET_ADDRESS_TYPE_NAME,
    FLOW_CONTROL_RECEIVERS_TYPE_ID: FLOW_CONTROL_RECEIVERS_NAME,
    SENDER_NAKS_RECEIVED_TYPE_ID: SENDER_NAKS_RECEIVED_NAME,
    RECEIVER_NAKS_SENT_TYPE_ID: RECEIVER_NAKS_SENT_NAME,
    RECORDING_POSITION_TYPE_ID: "rec-pos",
    CLIENT_CLOSES_TYPE_ID: "client-closes",
}
UNKNOWN_TYPE_NAME = "unknown"
_TYPE_ALIASES = {
    PUBLISHER_POS_NAME: PUBLISHER_POS_TYPE_ID,
    "rec-pos": RECORDING_POSITION_TYPE_ID,
    SEND_LOCAL_SOCKET_ADDRESS_NAME: LOCAL_SOCKET_ADDRESS_TYPE_ID,
    RECEIVE_LOCAL_SOCKET_ADDRESS_NAME: LOCAL_SOCKET_ADDRESS_TYPE_ID,
}

# Types whose key is a StreamPositionCounter key (the set StreamStat and AeronStat treat as streams).
STREAM_COUNTER_TYPE_IDS = frozenset(
    {
        PUBLISHER_LIMIT_TYPE_ID,
        SENDER_POSITION_TYPE_ID,
        RECEIVER_HWM_TYPE_ID,
        SUBSCRIBER_POSITION_TYPE_ID,
        RECEIVER_POS_TYPE_ID,
        SENDER_LIMIT_TYPE_ID,
        PER_IMAGE_TYPE_ID,
        PUBLISHER_POS_TYPE_ID,
        SENDER_BPE_TYPE_ID,
        SENDER_NAKS_RECEIVED_TYPE_ID,
        RECEIVER_NAKS_SENT_TYPE_ID,
        FLOW_CONTROL_RECEIVERS_TYPE_ID,
    }
)
STREAM_EVENT_COUNTER_TYPE_IDS = frozenset(
    {SENDER_BPE_TYPE_ID, SENDER_NAKS_RECEIVED_TYPE_ID, RECEIVER_NAKS_SENT_TYPE_ID}
)
"""Stream counters that count events (a running total) rather than hold a position."""
CHANNEL_STATUS_TYPE_IDS = frozenset({SEND_CHANNEL_STATUS_TYPE_ID, RECEIVE_CHANNEL_STATUS_TYPE_ID})

_REC_KEY_HEAD = struct.Struct("<qii")
# "<name>: <registrationId> <sessionId> <streamId> <channel>[ @<joinPosition>]"
_STREAM_LABEL = re.compile(r"^[^:]*: (-?\d+) (-?\d+) (-?\d+) (.*?)(?: @-?\d+)?$", re.DOTALL)
# "rec-pos: <recordingId> <sessionId> <streamId> <strippedChannel>"
_REC_LABEL = re.compile(r"^[^:]*: -?\d+ -?\d+ (-?\d+) (.*)$", re.DOTALL)


def type_name(type_id: int) -> str:
    return TYPE_NAMES.get(type_id, UNKNOWN_TYPE_NAME)


def parse_type(text: str) -> int:
    """A type id from a name (``rcv-pos``, ``pub-pos (sample)``, ``system``) or a decimal id."""
    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    for type_id, name in TYPE_NAMES.items():
        if name == text.lower():
            return type_id
    if text.lower() in _TYPE_ALIASES:
        return _TYPE_ALIASES[text.lower()]
    known = ", ".join(sorted(TYPE_NAMES.values()))
    raise ValueError(f"unknown counter type {text!r}: use a type id or one of {known}")


@dataclass(frozen=True)
class CounterInfo:
    """One allocated counter with what its key (or, where the key cannot say, its label) tells."""

    counter_id: int
    type_id: int
    label: str
    value: int
    registration_id: int | None = None  # publication/subscription registration or image correlation id
    session_id: int | None = None
    stream_id: int | None = None
    channel: str | None = None
    client_id: int | None = None  # client-heartbeat
    channel_status_id: int | None = None  # local-sockaddr: the channel status counter of its endpoint
    local_address: str | None = None  # local-sockaddr: the bound address
    recording_id: int | None = None  # rec-pos
    source_identity: str | None = None  # rec-pos

    @property
    def type_name(self) -> str:
        return type_name(self.type_id)

    @property
    def stream_key(self) -> tuple[int, int, str] | None:
        """(session id, stream id, channel) for stream position counters, as StreamStat groups them."""
        if self.type_id in STREAM_COUNTER_TYPE_IDS and self.session_id is not None:
            return (self.session_id, self.stream_id or 0, self.channel or "")
        return None


def _ascii(data: bytes) -> str:
    return data.decode("ascii", "replace")


def _label_tail(label: str, prefix: str) -> str | None:
    return label[len(prefix) :] if label.startswith(prefix) else None


def decode_counter(counter_id: int, type_id: int, key: bytes, label: str, value: int) -> CounterInfo:
    """Decode one counter's key (docs/counters.md sections 4-7); falls back to the label where the key is unusable."""
    base = CounterInfo(counter_id, type_id, label, value)
    if type_id in STREAM_COUNTER_TYPE_IDS:
        if len(key) >= STREAM_CHANNEL_OFFSET:
            registration_id, session_id, stream_id, length = _STREAM_KEY_HEAD.unpack_from(key, 0)
            if 0 <= length <= min(STREAM_MAX_CHANNEL_LENGTH, len(key) - STREAM_CHANNEL_OFFSET):
                channel = _ascii(key[STREAM_CHANNEL_OFFSET : STREAM_CHANNEL_OFFSET + length])
                return _replace(base, registration_id, session_id, stream_id, channel)
        match = _STREAM_LABEL.match(label)  # a foreign or corrupt key: the label has the same fields
        if match:
            reg, session, stream, channel = match.groups()
            return _replace(base, int(reg), int(session), int(stream), channel)
        return base
    if type_id in CHANNEL_STATUS_TYPE_IDS:
        # 1.15.1 writes a truncated key (docs/counters.md section 5): the channel is whole only in the label.
        channel = _label_tail(label, f"{type_name(type_id)}: ")
        if channel is None and len(key) >= CHANNEL_STATUS_CHANNEL_OFFSET:
            length = _I32.unpack_from(key, 0)[0]
            length = max(0, min(length - CHANNEL_STATUS_CHANNEL_OFFSET, CHANNEL_STATUS_MAX_CHANNEL_LENGTH))
            channel = _ascii(key[CHANNEL_STATUS_CHANNEL_OFFSET : CHANNEL_STATUS_CHANNEL_OFFSET + length])
        return CounterInfo(counter_id, type_id, label, value, channel=channel)
    if type_id == LOCAL_SOCKET_ADDRESS_TYPE_ID and len(key) >= LOCAL_SOCKET_ADDRESS_STRING_OFFSET:
        status_id, length = struct.unpack_from("<ii", key, 0)
        length = max(0, min(length, LOCAL_SOCKET_ADDRESS_MAX_LENGTH, len(key) - LOCAL_SOCKET_ADDRESS_STRING_OFFSET))
        address = _ascii(key[LOCAL_SOCKET_ADDRESS_STRING_OFFSET : LOCAL_SOCKET_ADDRESS_STRING_OFFSET + length])
        return CounterInfo(counter_id, type_id, label, value, channel_status_id=status_id, local_address=address)
    if type_id == CLIENT_HEARTBEAT_TYPE_ID and len(key) >= 8:
        return CounterInfo(counter_id, type_id, label, value, client_id=_I64.unpack_from(key, 0)[0])
    if type_id == RECORDING_POSITION_TYPE_ID and len(key) >= RECORDING_SOURCE_IDENTITY_OFFSET:
        recording_id, session_id, length = _REC_KEY_HEAD.unpack_from(key, 0)
        length = max(0, min(length, RECORDING_MAX_SOURCE_IDENTITY_LENGTH, len(key) - RECORDING_SOURCE_IDENTITY_OFFSET))
        source = _ascii(key[RECORDING_SOURCE_IDENTITY_OFFSET : RECORDING_SOURCE_IDENTITY_OFFSET + length])
        match = _REC_LABEL.match(label)
        return CounterInfo(
            counter_id,
            type_id,
            label,
            value,
            session_id=session_id,
            stream_id=int(match.group(1)) if match else None,
            channel=match.group(2) if match else None,
            recording_id=recording_id,
            source_identity=source,
        )
    return base


def _replace(
    base: CounterInfo, registration_id: int, session_id: int, stream_id: int, channel: str
) -> CounterInfo:
    return CounterInfo(
        base.counter_id,
        base.type_id,
        base.label,
        base.value,
        registration_id=registration_id,
        session_id=session_id,
        stream_id=stream_id,
        channel=channel,
    )


def read_counters(reader: CountersReader) -> list[CounterInfo]:
    """Every allocated counter, in id order, with its value read right after its metadata."""
    found: list[CounterInfo] = []
    reader.for_each(
        lambda counter_id, type_id, key, label: found.append(
            decode_counter(counter_id, type_id, key, label, reader.get_counter_value(counter_id))
        )
    )
    return found
