"""Client <-> driver command and event messages against docs/commands.md: exact bytes, round trips, garbage."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driver.protocol import control_protocol as cp
from driver.protocol.control_protocol import MalformedCommandError
from driver.util.bit_util import align

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
ASCII = st.text(alphabet=st.characters(max_codepoint=127), max_size=300)
KEYS = st.binary(max_size=cp.MAX_KEY_LENGTH)
LABELS = st.text(alphabet=st.characters(max_codepoint=127), max_size=cp.MAX_LABEL_LENGTH)
UTF8 = st.text(alphabet=st.characters(codec="utf-8"), max_size=300)
TRAILER = st.binary(max_size=16)


def view(data: bytes) -> memoryview:
    return memoryview(data)


def i32(data: bytes, offset: int) -> int:
    return struct.unpack_from("<i", data, offset)[0]


def i64(data: bytes, offset: int) -> int:
    return struct.unpack_from("<q", data, offset)[0]


# --- type ids --------------------------------------------------------------------------------------------


def test_command_type_ids_match_spec_table() -> None:
    assert {c.name: c.value for c in cp.Command} == {
        "ADD_PUBLICATION": 0x01,
        "REMOVE_PUBLICATION": 0x02,
        "ADD_EXCLUSIVE_PUBLICATION": 0x03,
        "ADD_SUBSCRIPTION": 0x04,
        "REMOVE_SUBSCRIPTION": 0x05,
        "CLIENT_KEEPALIVE": 0x06,
        "ADD_DESTINATION": 0x07,
        "REMOVE_DESTINATION": 0x08,
        "ADD_COUNTER": 0x09,
        "REMOVE_COUNTER": 0x0A,
        "CLIENT_CLOSE": 0x0B,
        "ADD_RCV_DESTINATION": 0x0C,
        "REMOVE_RCV_DESTINATION": 0x0D,
        "TERMINATE_DRIVER": 0x0E,  # Aeron 1.17, after the spec's 1.15.1 table
    }


def test_event_type_ids_match_spec_table() -> None:
    assert {e.name: e.value for e in cp.Event} == {
        "ON_ERROR": 0x0F01,
        "ON_AVAILABLE_IMAGE": 0x0F02,
        "ON_PUBLICATION_READY": 0x0F03,
        "ON_OPERATION_SUCCESS": 0x0F04,
        "ON_UNAVAILABLE_IMAGE": 0x0F05,
        "ON_EXCLUSIVE_PUBLICATION_READY": 0x0F06,
        "ON_SUBSCRIPTION_READY": 0x0F07,
        "ON_COUNTER_READY": 0x0F08,
        "ON_UNAVAILABLE_COUNTER": 0x0F09,
        "ON_CLIENT_TIMEOUT": 0x0F0A,
    }


def test_error_codes_match_spec() -> None:
    assert [(e.name, e.value) for e in cp.ErrorCode] == [
        ("GENERIC_ERROR", 0),
        ("INVALID_CHANNEL", 1),
        ("UNKNOWN_SUBSCRIPTION", 2),
        ("UNKNOWN_PUBLICATION", 3),
        ("CHANNEL_ENDPOINT_ERROR", 4),
        ("UNKNOWN_COUNTER", 5),
    ]


def test_limits() -> None:
    assert cp.CORRELATED_MESSAGE_LENGTH == 16
    assert (cp.CLIENT_ID_OFFSET, cp.CORRELATION_ID_OFFSET) == (0, 8)
    assert (cp.MAX_KEY_LENGTH, cp.MAX_LABEL_LENGTH) == (112, 380)


# --- exact layouts: client -> driver ---------------------------------------------------------------------


def test_correlated_message_layout() -> None:
    data = cp.encode_correlated(0x0102030405060708, -1)
    assert data == struct.pack("<qq", 0x0102030405060708, -1)
    assert len(data) == 16
    assert cp.decode_correlated(view(data)) == cp.CorrelatedMessage(0x0102030405060708, -1)


def test_publication_message_layout() -> None:
    channel = "aeron:udp?endpoint=localhost:40123"
    data = cp.encode_publication(7, 8, 1001, channel)
    assert len(data) == 24 + len(channel)
    assert i64(data, 0) == 7
    assert i64(data, 8) == 8
    assert i32(data, 16) == 1001
    assert i32(data, 20) == len(channel)
    assert data[24:] == channel.encode("ascii")


def test_publication_message_decodes_hand_built_bytes() -> None:
    channel = b"aeron:ipc"
    data = struct.pack("<qqii", 3, 4, -9, len(channel)) + channel
    assert cp.decode_publication(view(data)) == cp.PublicationMessage(3, 4, -9, "aeron:ipc")


def test_subscription_message_layout() -> None:
    channel = "aeron:udp?endpoint=224.0.1.1:40456|interface=192.168.1.0/24"
    data = cp.encode_subscription(11, 12, 10, channel)
    assert len(data) == 32 + len(channel)
    assert (i64(data, 0), i64(data, 8)) == (11, 12)
    assert i64(data, 16) == -1, "the client sends -1 as registration_correlation_id"
    assert i32(data, 24) == 10
    assert i32(data, 28) == len(channel)
    assert data[32:] == channel.encode("ascii")
    assert cp.decode_subscription(view(data)) == cp.SubscriptionMessage(11, 12, -1, 10, channel)


def test_subscription_message_decodes_a_registration_id_other_than_minus_one() -> None:
    data = struct.pack("<qqqii", 1, 2, 77, 5, 9) + b"aeron:ipc"
    assert cp.decode_subscription(view(data)) == cp.SubscriptionMessage(1, 2, 77, 5, "aeron:ipc")


def test_remove_message_layout() -> None:
    data = cp.encode_remove(1, 2, 3)
    assert data == struct.pack("<qqq", 1, 2, 3)
    assert len(data) == 24
    assert cp.decode_remove(view(data)) == cp.RemoveMessage(1, 2, 3)


def test_destination_message_layout() -> None:
    channel = "aeron:udp?endpoint=localhost:40124"
    data = cp.encode_destination(21, 22, 23, channel)
    assert len(data) == 28 + len(channel)
    assert (i64(data, 0), i64(data, 8), i64(data, 16)) == (21, 22, 23)
    assert i32(data, 24) == len(channel)
    assert data[28:] == channel.encode("ascii")
    assert cp.decode_destination(view(data)) == cp.DestinationMessage(21, 22, 23, channel)


@pytest.mark.parametrize("key_length", [0, 1, 2, 3, 4, 5, 8, 111, 112])
def test_counter_message_layout(key_length: int) -> None:
    key = bytes(range(1, key_length + 1))
    label = "my counter label"
    data = cp.encode_counter(5, 6, 1101, key, label)
    label_offset = 24 + align(key_length, 4)
    assert len(data) == label_offset + 4 + len(label)
    assert (i64(data, 0), i64(data, 8)) == (5, 6)
    assert i32(data, 16) == 1101
    assert i32(data, 20) == key_length
    assert data[24 : 24 + key_length] == key
    assert data[24 + key_length : label_offset] == bytes(label_offset - 24 - key_length), (
        "key padding is zero"
    )
    assert i32(data, label_offset) == len(label)
    assert data[label_offset + 4 :] == label.encode("ascii")
    assert cp.decode_counter(view(data)) == cp.CounterMessage(5, 6, 1101, key, label)


def test_counter_message_as_the_java_client_writes_it() -> None:
    """Java writes type_id as an int64 at 16, then key_length over bytes 20..23; the driver reads int32 @16."""
    key, label = b"\x01\x02\x03\x04\x05", b"label"
    data = bytearray(struct.pack("<qqq", 1, 2, -5))
    struct.pack_into("<i", data, 20, len(key))
    data += key + bytes(3) + struct.pack("<i", len(label)) + label
    assert cp.decode_counter(view(bytes(data))) == cp.CounterMessage(1, 2, -5, key, "label")


def test_counter_encoder_enforces_client_limits() -> None:
    cp.encode_counter(1, 2, 3, bytes(112), "x" * 380)
    with pytest.raises(ValueError, match="key"):
        cp.encode_counter(1, 2, 3, bytes(113), "")
    with pytest.raises(ValueError, match="label"):
        cp.encode_counter(1, 2, 3, b"", "x" * 381)


def test_client_strings_are_ascii_with_question_marks_for_other_characters() -> None:
    data = cp.encode_publication(1, 2, 3, "aeron:ipc?alias=caf\u00e9")
    assert data[24:] == b"aeron:ipc?alias=caf?"
    assert i32(data, 20) == 20
    assert cp.decode_publication(view(data)).channel == "aeron:ipc?alias=caf?"


def test_bytes_above_127_in_a_command_decode_without_raising() -> None:
    data = struct.pack("<qqii", 1, 2, 3, 3) + b"a\xffb"
    assert cp.decode_publication(view(data)).channel == "a\ufffdb"


# --- exact layouts: driver -> client ---------------------------------------------------------------------


def test_error_response_layout() -> None:
    message = "Unknown publication: 42 \u2013 n\u00e4h"
    encoded = message.encode("utf-8")
    data = cp.encode_error(42, cp.ErrorCode.UNKNOWN_PUBLICATION, message)
    assert len(data) == 16 + len(encoded)
    assert i64(data, 0) == 42
    assert i32(data, 8) == 3
    assert i32(data, 12) == len(encoded), "length is in UTF-8 bytes, not characters"
    assert data[16:] == encoded
    assert cp.decode_error(view(data)) == cp.ErrorResponse(42, 3, message)


def test_publication_buffers_ready_layout() -> None:
    name = "/dev/shm/aeron-x/publications/1.logbuffer"
    data = cp.encode_publication_ready(1, 2, -3, 4, 5, -1, name)
    assert len(data) == 36 + len(name)
    assert (i64(data, 0), i64(data, 8)) == (1, 2)
    assert [i32(data, o) for o in (16, 20, 24, 28, 32)] == [-3, 4, 5, -1, len(name)]
    assert data[36:] == name.encode("ascii")
    assert cp.decode_publication_ready(view(data)) == cp.PublicationBuffersReady(1, 2, -3, 4, 5, -1, name)


def test_subscription_ready_layout() -> None:
    data = cp.encode_subscription_ready(99, 7)
    assert data == struct.pack("<qi", 99, 7)
    assert len(data) == 12
    assert cp.decode_subscription_ready(view(data)) == cp.SubscriptionReady(99, 7)


def test_operation_succeeded_layout() -> None:
    data = cp.encode_operation_succeeded(-2)
    assert data == struct.pack("<q", -2)
    assert cp.decode_operation_succeeded(view(data)) == -2


@pytest.mark.parametrize("name_length", [0, 1, 2, 3, 4, 5, 41])
def test_image_buffers_ready_layout(name_length: int) -> None:
    name = ("n" * name_length).encode()
    source = b"127.0.0.1:40123"
    data = cp.encode_image_ready(10, -11, 12, 13, 14, name.decode(), source.decode())
    source_offset = 32 + align(name_length, 4)
    assert len(data) == source_offset + 4 + len(source)
    assert i64(data, 0) == 10
    assert (i32(data, 8), i32(data, 12)) == (-11, 12)
    assert i64(data, 16) == 13
    assert i32(data, 24) == 14
    assert i32(data, 28) == name_length
    assert data[32 : 32 + name_length] == name
    assert data[32 + name_length : source_offset] == bytes(source_offset - 32 - name_length)
    assert i32(data, source_offset) == len(source)
    assert data[source_offset + 4 :] == source
    assert cp.decode_image_ready(view(data)) == cp.ImageBuffersReady(
        10, -11, 12, 13, 14, name.decode(), source.decode()
    )


def test_image_message_layout() -> None:
    channel = "aeron:udp?endpoint=localhost:40123"
    data = cp.encode_image_message(1, 2, 3, channel)
    assert len(data) == 24 + len(channel)
    assert (i64(data, 0), i64(data, 8)) == (1, 2)
    assert (i32(data, 16), i32(data, 20)) == (3, len(channel))
    assert data[24:] == channel.encode("ascii")
    assert cp.decode_image_message(view(data)) == cp.ImageMessage(1, 2, 3, channel)


def test_counter_update_layout() -> None:
    data = cp.encode_counter_update(123, 45)
    assert data == struct.pack("<qi", 123, 45)
    assert cp.decode_counter_update(view(data)) == cp.CounterUpdate(123, 45)


def test_client_timeout_layout() -> None:
    data = cp.encode_client_timeout(77)
    assert data == struct.pack("<q", 77)
    assert cp.decode_client_timeout(view(data)) == 77


# --- round trips (trailing bytes after a message are ignored, as Java's flyweights do) -------------------


@given(INT64, INT64, TRAILER)
def test_correlated_round_trip(client_id: int, correlation_id: int, trailer: bytes) -> None:
    body = view(cp.encode_correlated(client_id, correlation_id) + trailer)
    assert cp.decode_correlated(body) == cp.CorrelatedMessage(client_id, correlation_id)


@given(INT64, INT64, INT32, ASCII, TRAILER)
def test_publication_round_trip(
    client_id: int, corr: int, stream_id: int, channel: str, trailer: bytes
) -> None:
    body = view(cp.encode_publication(client_id, corr, stream_id, channel) + trailer)
    assert cp.decode_publication(body) == cp.PublicationMessage(client_id, corr, stream_id, channel)


@given(INT64, INT64, INT32, ASCII, TRAILER)
def test_subscription_round_trip(
    client_id: int, corr: int, stream_id: int, channel: str, trailer: bytes
) -> None:
    body = view(cp.encode_subscription(client_id, corr, stream_id, channel) + trailer)
    assert cp.decode_subscription(body) == cp.SubscriptionMessage(client_id, corr, -1, stream_id, channel)


@given(INT64, INT64, INT64, TRAILER)
def test_remove_round_trip(client_id: int, corr: int, registration_id: int, trailer: bytes) -> None:
    body = view(cp.encode_remove(client_id, corr, registration_id) + trailer)
    assert cp.decode_remove(body) == cp.RemoveMessage(client_id, corr, registration_id)


@given(INT64, INT64, INT64, ASCII, TRAILER)
def test_destination_round_trip(client_id: int, corr: int, reg: int, channel: str, trailer: bytes) -> None:
    body = view(cp.encode_destination(client_id, corr, reg, channel) + trailer)
    assert cp.decode_destination(body) == cp.DestinationMessage(client_id, corr, reg, channel)


@given(INT64, INT64, INT32, KEYS, LABELS, TRAILER)
def test_counter_round_trip(
    client_id: int, corr: int, type_id: int, key: bytes, label: str, trailer: bytes
) -> None:
    data = cp.encode_counter(client_id, corr, type_id, key, label)
    assert len(data) == 24 + align(len(key), 4) + 4 + len(label)
    assert cp.decode_counter(view(data + trailer)) == cp.CounterMessage(client_id, corr, type_id, key, label)


@given(INT64, INT32, UTF8, TRAILER)
def test_error_round_trip(correlation_id: int, code: int, message: str, trailer: bytes) -> None:
    body = view(cp.encode_error(correlation_id, code, message) + trailer)
    assert cp.decode_error(body) == cp.ErrorResponse(correlation_id, code, message)


@given(INT64, INT64, INT32, INT32, INT32, INT32, ASCII, TRAILER)
def test_publication_ready_round_trip(
    corr: int, reg: int, session: int, stream: int, limit_id: int, status_id: int, name: str, trailer: bytes
) -> None:
    body = view(cp.encode_publication_ready(corr, reg, session, stream, limit_id, status_id, name) + trailer)
    expected = cp.PublicationBuffersReady(corr, reg, session, stream, limit_id, status_id, name)
    assert cp.decode_publication_ready(body) == expected


@given(INT64, INT32, TRAILER)
def test_subscription_ready_round_trip(corr: int, status_id: int, trailer: bytes) -> None:
    body = view(cp.encode_subscription_ready(corr, status_id) + trailer)
    assert cp.decode_subscription_ready(body) == cp.SubscriptionReady(corr, status_id)


@given(INT64, TRAILER)
def test_operation_succeeded_round_trip(corr: int, trailer: bytes) -> None:
    assert cp.decode_operation_succeeded(view(cp.encode_operation_succeeded(corr) + trailer)) == corr


@given(INT64, INT32, INT32, INT64, INT32, ASCII, ASCII, TRAILER)
def test_image_ready_round_trip(
    corr: int,
    session: int,
    stream: int,
    sub_reg: int,
    position_id: int,
    name: str,
    source: str,
    trailer: bytes,
) -> None:
    data = cp.encode_image_ready(corr, session, stream, sub_reg, position_id, name, source)
    assert len(data) == 32 + align(len(name), 4) + 4 + len(source)
    expected = cp.ImageBuffersReady(corr, session, stream, sub_reg, position_id, name, source)
    assert cp.decode_image_ready(view(data + trailer)) == expected


@given(INT64, INT64, INT32, ASCII, TRAILER)
def test_image_message_round_trip(corr: int, sub_reg: int, stream: int, channel: str, trailer: bytes) -> None:
    body = view(cp.encode_image_message(corr, sub_reg, stream, channel) + trailer)
    assert cp.decode_image_message(body) == cp.ImageMessage(corr, sub_reg, stream, channel)


@given(INT64, INT32, TRAILER)
def test_counter_update_round_trip(corr: int, counter_id: int, trailer: bytes) -> None:
    body = view(cp.encode_counter_update(corr, counter_id) + trailer)
    assert cp.decode_counter_update(body) == cp.CounterUpdate(corr, counter_id)


@given(INT64, TRAILER)
def test_client_timeout_round_trip(client_id: int, trailer: bytes) -> None:
    assert cp.decode_client_timeout(view(cp.encode_client_timeout(client_id) + trailer)) == client_id


def test_decoders_read_a_record_body_at_a_nonzero_offset_of_a_larger_buffer() -> None:
    """Bodies arrive as slices of the ring buffer; offsets are relative to the slice."""
    data = cp.encode_counter(1, 2, 3, b"abcde", "label")
    buffer = bytearray(64) + bytearray(data) + bytearray(32)
    body = memoryview(buffer)[64 : 64 + len(data)]
    assert cp.decode_counter(body) == cp.CounterMessage(1, 2, 3, b"abcde", "label")


# --- malformed bodies ------------------------------------------------------------------------------------

SAMPLES: list[tuple[str, Callable[[memoryview], Any], bytes]] = [
    ("correlated", cp.decode_correlated, cp.encode_correlated(1, 2)),
    ("publication", cp.decode_publication, cp.encode_publication(1, 2, 3, "aeron:ipc")),
    ("subscription", cp.decode_subscription, cp.encode_subscription(1, 2, 3, "aeron:ipc")),
    ("remove", cp.decode_remove, cp.encode_remove(1, 2, 3)),
    ("destination", cp.decode_destination, cp.encode_destination(1, 2, 3, "aeron:udp?endpoint=a:1")),
    ("counter", cp.decode_counter, cp.encode_counter(1, 2, 3, b"keyed", "a label")),
    ("error", cp.decode_error, cp.encode_error(1, 0, "oops")),
    (
        "publication_ready",
        cp.decode_publication_ready,
        cp.encode_publication_ready(1, 2, 3, 4, 5, 6, "f.log"),
    ),
    ("subscription_ready", cp.decode_subscription_ready, cp.encode_subscription_ready(1, 2)),
    ("operation_succeeded", cp.decode_operation_succeeded, cp.encode_operation_succeeded(1)),
    ("image_ready", cp.decode_image_ready, cp.encode_image_ready(1, 2, 3, 4, 5, "i.logbuffer", "1.2.3.4:5")),
    ("image_message", cp.decode_image_message, cp.encode_image_message(1, 2, 3, "aeron:ipc")),
    ("counter_update", cp.decode_counter_update, cp.encode_counter_update(1, 2)),
    ("client_timeout", cp.decode_client_timeout, cp.encode_client_timeout(1)),
]
DECODERS = [decoder for _, decoder, _ in SAMPLES]
SAMPLE_IDS = [name for name, _, _ in SAMPLES]


@pytest.mark.parametrize(("decoder", "data"), [(d, b) for _, d, b in SAMPLES], ids=SAMPLE_IDS)
def test_every_truncation_raises_malformed_command_error(
    decoder: Callable[[memoryview], Any], data: bytes
) -> None:
    decoder(view(data))
    for length in range(len(data)):
        with pytest.raises(MalformedCommandError):
            decoder(view(data[:length]))


def test_malformed_command_error_is_a_value_error() -> None:
    assert issubclass(MalformedCommandError, ValueError)


@pytest.mark.parametrize(
    ("decoder", "length", "names"),
    [
        (cp.decode_correlated, 15, "command"),
        (cp.decode_publication, 23, "publication message"),
        (cp.decode_subscription, 31, "subscription message"),
        (cp.decode_remove, 23, "remove message"),
        (cp.decode_destination, 27, "destination message"),
        (cp.decode_counter, 23, "counter message"),
        (cp.decode_error, 15, "error response"),
        (cp.decode_publication_ready, 35, "publication ready"),
        (cp.decode_subscription_ready, 11, "subscription ready"),
        (cp.decode_operation_succeeded, 7, "operation succeeded"),
        (cp.decode_image_ready, 31, "image ready"),
        (cp.decode_image_message, 23, "image message"),
        (cp.decode_counter_update, 11, "counter update"),
        (cp.decode_client_timeout, 7, "client timeout"),
    ],
)
def test_short_body_message_names_the_message_and_both_lengths(
    decoder: Callable[[memoryview], Any], length: int, names: str
) -> None:
    with pytest.raises(MalformedCommandError) as info:
        decoder(view(bytes(length)))
    message = str(info.value)
    assert names in message
    assert f"is {length} bytes" in message
    assert f"needs at least {length + 1}" in message


def test_channel_length_past_the_record_is_named() -> None:
    data = struct.pack("<qqii", 1, 2, 3, 100) + b"aeron:ipc"
    with pytest.raises(MalformedCommandError, match=r"publication message channel.*length 100 at offset 20"):
        cp.decode_publication(view(data))


def test_negative_channel_length_is_named() -> None:
    data = struct.pack("<qqqii", 1, 2, -1, 3, -4) + b"aeron:ipc"
    with pytest.raises(MalformedCommandError, match=r"subscription message channel.*length -4 at offset 28"):
        cp.decode_subscription(view(data))


@pytest.mark.parametrize("key_length", [-1, 113, 2**31 - 1])
def test_counter_key_length_out_of_range_is_named(key_length: int) -> None:
    data = struct.pack("<qqii", 1, 2, 3, key_length) + bytes(200)
    with pytest.raises(MalformedCommandError, match=rf"counter message: key length {key_length}\b.*0\.\.112"):
        cp.decode_counter(view(data))


def test_counter_key_running_past_the_record_is_named() -> None:
    data = struct.pack("<qqii", 1, 2, 3, 20) + bytes(8)
    with pytest.raises(
        MalformedCommandError, match=r"counter message: key length 20 .*runs past the 32-byte record"
    ):
        cp.decode_counter(view(data))


def test_counter_label_length_past_the_record_is_named() -> None:
    data = struct.pack("<qqii", 1, 2, 3, 0) + struct.pack("<i", 50) + b"short"
    with pytest.raises(MalformedCommandError, match=r"counter message label.*length 50 at offset 24"):
        cp.decode_counter(view(data))


def test_counter_label_over_the_client_limit_is_named() -> None:
    label = b"x" * 381
    data = struct.pack("<qqii", 1, 2, 3, 0) + struct.pack("<i", len(label)) + label
    with pytest.raises(MalformedCommandError, match=r"counter message: label length 381 > 380"):
        cp.decode_counter(view(data))


def test_image_ready_source_identity_past_the_record_is_named() -> None:
    data = bytearray(cp.encode_image_ready(1, 2, 3, 4, 5, "abcde", "src"))
    struct.pack_into("<i", data, 32 + 8, 999)
    with pytest.raises(MalformedCommandError, match=r"image ready source identity.*length 999 at offset 40"):
        cp.decode_image_ready(view(bytes(data)))


def test_error_message_length_past_the_record_is_named() -> None:
    data = struct.pack("<qii", 1, 0, 5) + b"abc"
    with pytest.raises(MalformedCommandError, match=r"error response message.*length 5 at offset 12"):
        cp.decode_error(view(data))


def _decode_or_malformed(decoder: Callable[[memoryview], Any], data: bytes) -> None:
    try:
        decoder(view(data))
    except MalformedCommandError as e:
        assert str(e), "a MalformedCommandError must say what is wrong"


@settings(max_examples=300)
@given(st.sampled_from(DECODERS), st.binary(max_size=600))
def test_random_bytes_give_a_result_or_malformed_command_error(
    decoder: Callable[[memoryview], Any], data: bytes
) -> None:
    _decode_or_malformed(decoder, data)


@st.composite
def mutated_sample(draw: st.DrawFn) -> tuple[Callable[[memoryview], Any], bytes]:
    """A valid encoding with some int32 fields (the lengths) overwritten and the end cut or extended."""
    _, decoder, data = draw(st.sampled_from(SAMPLES))
    raw = bytearray(data)
    for _ in range(draw(st.integers(0, 3))):
        if len(raw) < 4:
            break
        offset = draw(st.integers(0, len(raw) - 4))
        struct.pack_into(
            "<i",
            raw,
            offset,
            draw(st.sampled_from([-(2**31), -1, 0, 1, 3, 112, 113, 381, 2**31 - 1]) | INT32),
        )
    cut = draw(st.integers(0, len(raw) + 8))
    raw = raw[:cut] + bytes(max(0, cut - len(raw)))
    return decoder, bytes(raw)


@settings(max_examples=200)
@given(mutated_sample())
def test_mutated_valid_bodies_give_a_result_or_malformed_command_error(
    sample: tuple[Callable[[memoryview], Any], bytes],
) -> None:
    _decode_or_malformed(*sample)


@pytest.mark.parametrize("decoder", DECODERS, ids=SAMPLE_IDS)
def test_decoders_accept_bytes_and_memoryview_alike(decoder: Callable[[memoryview], Any]) -> None:
    data = dict(zip(DECODERS, (s[2] for s in SAMPLES), strict=True))[decoder]
    assert decoder(data) == decoder(memoryview(data))  # type: ignore[arg-type]
