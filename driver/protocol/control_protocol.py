"""Client <-> driver command and event messages of Aeron 1.15.1 (docs/commands.md).

Encoders return ``bytes`` ready to be written as a ring/broadcast record body; decoders take a
``memoryview`` of a record body and return a small dataclass, raising ``MalformedCommandError`` with a
message that says what is wrong instead of reading past the record.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from driver.util.bit_util import align


class Command(IntEnum):
    ADD_PUBLICATION = 0x01
    REMOVE_PUBLICATION = 0x02
    ADD_EXCLUSIVE_PUBLICATION = 0x03
    ADD_SUBSCRIPTION = 0x04
    REMOVE_SUBSCRIPTION = 0x05
    CLIENT_KEEPALIVE = 0x06
    ADD_DESTINATION = 0x07
    REMOVE_DESTINATION = 0x08
    ADD_COUNTER = 0x09
    REMOVE_COUNTER = 0x0A
    CLIENT_CLOSE = 0x0B
    ADD_RCV_DESTINATION = 0x0C
    REMOVE_RCV_DESTINATION = 0x0D
    TERMINATE_DRIVER = 0x0E
    """Not in 1.15.1 (Aeron 1.17): a token for the driver's termination validator."""


class Event(IntEnum):
    ON_ERROR = 0x0F01
    ON_AVAILABLE_IMAGE = 0x0F02
    ON_PUBLICATION_READY = 0x0F03
    ON_OPERATION_SUCCESS = 0x0F04
    ON_UNAVAILABLE_IMAGE = 0x0F05
    ON_EXCLUSIVE_PUBLICATION_READY = 0x0F06
    ON_SUBSCRIPTION_READY = 0x0F07
    ON_COUNTER_READY = 0x0F08
    ON_UNAVAILABLE_COUNTER = 0x0F09
    ON_CLIENT_TIMEOUT = 0x0F0A


class ErrorCode(IntEnum):
    GENERIC_ERROR = 0
    INVALID_CHANNEL = 1
    UNKNOWN_SUBSCRIPTION = 2
    UNKNOWN_PUBLICATION = 3
    CHANNEL_ENDPOINT_ERROR = 4
    UNKNOWN_COUNTER = 5


class MalformedCommandError(ValueError):
    """A record body too short or with lengths pointing outside it."""


CORRELATED_MESSAGE_LENGTH = 16
CLIENT_ID_OFFSET = 0
CORRELATION_ID_OFFSET = 8
MAX_KEY_LENGTH = 112
MAX_LABEL_LENGTH = 380

_CORRELATED = struct.Struct("<qq")
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")


def _need(body: memoryview, length: int, what: str) -> None:
    if len(body) < length:
        raise MalformedCommandError(f"{what}: record body is {len(body)} bytes, needs at least {length}")


def _string(body: memoryview, offset: int, what: str, encoding: str = "ascii") -> tuple[str, int]:
    """Read an int32 length-prefixed string; returns (text, offset just past it)."""
    _need(body, offset + 4, what)
    (length,) = _I32.unpack_from(body, offset)
    if length < 0 or offset + 4 + length > len(body):
        raise MalformedCommandError(
            f"{what}: string length {length} at offset {offset} runs past the {len(body)}-byte record"
        )
    end = offset + 4 + length
    return bytes(body[offset + 4 : end]).decode(encoding, "replace"), end


def _ascii(text: str) -> bytes:
    return text.encode("ascii", "replace")


# --- client -> driver -------------------------------------------------------------------------


@dataclass(frozen=True)
class CorrelatedMessage:
    client_id: int
    correlation_id: int


@dataclass(frozen=True)
class PublicationMessage:
    client_id: int
    correlation_id: int
    stream_id: int
    channel: str


@dataclass(frozen=True)
class SubscriptionMessage:
    client_id: int
    correlation_id: int
    registration_correlation_id: int
    stream_id: int
    channel: str


@dataclass(frozen=True)
class TerminateDriverMessage:
    client_id: int
    correlation_id: int
    token: bytes


@dataclass(frozen=True)
class RemoveMessage:
    client_id: int
    correlation_id: int
    registration_id: int


@dataclass(frozen=True)
class DestinationMessage:
    client_id: int
    correlation_id: int
    registration_correlation_id: int
    channel: str


@dataclass(frozen=True)
class CounterMessage:
    client_id: int
    correlation_id: int
    type_id: int
    key: bytes
    label: str


def decode_correlated(body: memoryview, what: str = "command") -> CorrelatedMessage:
    _need(body, CORRELATED_MESSAGE_LENGTH, what)
    return CorrelatedMessage(*_CORRELATED.unpack_from(body, 0))


def decode_publication(body: memoryview) -> PublicationMessage:
    _need(body, 24, "publication message")
    client_id, correlation_id = _CORRELATED.unpack_from(body, 0)
    (stream_id,) = _I32.unpack_from(body, 16)
    channel, _ = _string(body, 20, "publication message channel")
    return PublicationMessage(client_id, correlation_id, stream_id, channel)


def decode_subscription(body: memoryview) -> SubscriptionMessage:
    _need(body, 32, "subscription message")
    client_id, correlation_id = _CORRELATED.unpack_from(body, 0)
    (registration_correlation_id,) = _I64.unpack_from(body, 16)
    (stream_id,) = _I32.unpack_from(body, 24)
    channel, _ = _string(body, 28, "subscription message channel")
    return SubscriptionMessage(client_id, correlation_id, registration_correlation_id, stream_id, channel)


TERMINATE_TOKEN_LENGTH_OFFSET = CORRELATED_MESSAGE_LENGTH
TERMINATE_TOKEN_OFFSET = TERMINATE_TOKEN_LENGTH_OFFSET + 4


def decode_terminate_driver(body: memoryview) -> TerminateDriverMessage:
    _need(body, TERMINATE_TOKEN_OFFSET, "terminate driver message")
    client_id, correlation_id = _CORRELATED.unpack_from(body, 0)
    (length,) = _I32.unpack_from(body, TERMINATE_TOKEN_LENGTH_OFFSET)
    if length < 0 or length > len(body) - TERMINATE_TOKEN_OFFSET:
        raise MalformedCommandError(
            f"terminate driver message: token length {length} does not fit the "
            f"{len(body) - TERMINATE_TOKEN_OFFSET} bytes after it"
        )
    token = bytes(body[TERMINATE_TOKEN_OFFSET : TERMINATE_TOKEN_OFFSET + length])
    return TerminateDriverMessage(client_id, correlation_id, token)


def encode_terminate_driver(client_id: int, correlation_id: int, token: bytes = b"") -> bytes:
    return _CORRELATED.pack(client_id, correlation_id) + _I32.pack(len(token)) + token


def decode_remove(body: memoryview) -> RemoveMessage:
    _need(body, 24, "remove message")
    client_id, correlation_id = _CORRELATED.unpack_from(body, 0)
    (registration_id,) = _I64.unpack_from(body, 16)
    return RemoveMessage(client_id, correlation_id, registration_id)


def decode_destination(body: memoryview) -> DestinationMessage:
    _need(body, 28, "destination message")
    client_id, correlation_id = _CORRELATED.unpack_from(body, 0)
    (registration_correlation_id,) = _I64.unpack_from(body, 16)
    channel, _ = _string(body, 24, "destination message channel")
    return DestinationMessage(client_id, correlation_id, registration_correlation_id, channel)


def decode_counter(body: memoryview) -> CounterMessage:
    _need(body, 24, "counter message")
    client_id, correlation_id = _CORRELATED.unpack_from(body, 0)
    (type_id,) = _I32.unpack_from(body, 16)
    (key_length,) = _I32.unpack_from(body, 20)
    if not 0 <= key_length <= MAX_KEY_LENGTH:
        raise MalformedCommandError(
            f"counter message: key length {key_length} is outside 0..{MAX_KEY_LENGTH}"
        )
    if 24 + key_length > len(body):
        raise MalformedCommandError(
            f"counter message: key length {key_length} at offset 20 runs past the {len(body)}-byte record"
        )
    key = bytes(body[24 : 24 + key_length])
    label_offset = 24 + align(key_length, 4)
    label, _ = _string(body, label_offset, "counter message label")
    if len(label) > MAX_LABEL_LENGTH:
        raise MalformedCommandError(f"counter message: label length {len(label)} > {MAX_LABEL_LENGTH}")
    return CounterMessage(client_id, correlation_id, type_id, key, label)


def encode_correlated(client_id: int, correlation_id: int) -> bytes:
    return _CORRELATED.pack(client_id, correlation_id)


def encode_publication(client_id: int, correlation_id: int, stream_id: int, channel: str) -> bytes:
    data = _ascii(channel)
    return _CORRELATED.pack(client_id, correlation_id) + struct.pack("<ii", stream_id, len(data)) + data


def encode_subscription(client_id: int, correlation_id: int, stream_id: int, channel: str) -> bytes:
    data = _ascii(channel)
    return _CORRELATED.pack(client_id, correlation_id) + struct.pack("<qii", -1, stream_id, len(data)) + data


def encode_remove(client_id: int, correlation_id: int, registration_id: int) -> bytes:
    return _CORRELATED.pack(client_id, correlation_id) + _I64.pack(registration_id)


def encode_destination(client_id: int, correlation_id: int, registration_id: int, channel: str) -> bytes:
    data = _ascii(channel)
    return _CORRELATED.pack(client_id, correlation_id) + struct.pack("<qi", registration_id, len(data)) + data


def encode_counter(client_id: int, correlation_id: int, type_id: int, key: bytes, label: str) -> bytes:
    if len(key) > MAX_KEY_LENGTH:
        raise ValueError(f"counter key is {len(key)} bytes; the limit is {MAX_KEY_LENGTH}")
    label_bytes = _ascii(label)
    if len(label_bytes) > MAX_LABEL_LENGTH:
        raise ValueError(f"counter label is {len(label_bytes)} characters; the limit is {MAX_LABEL_LENGTH}")
    padded_key = key + bytes(align(len(key), 4) - len(key))
    return (
        _CORRELATED.pack(client_id, correlation_id)
        + struct.pack("<ii", type_id, len(key))
        + padded_key
        + _I32.pack(len(label_bytes))
        + label_bytes
    )


# --- driver -> client -------------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorResponse:
    offending_correlation_id: int
    error_code: int
    message: str


@dataclass(frozen=True)
class PublicationBuffersReady:
    correlation_id: int
    registration_id: int
    session_id: int
    stream_id: int
    publication_limit_counter_id: int
    channel_status_indicator_id: int
    log_file_name: str


@dataclass(frozen=True)
class SubscriptionReady:
    correlation_id: int
    channel_status_indicator_id: int


@dataclass(frozen=True)
class ImageBuffersReady:
    correlation_id: int
    session_id: int
    stream_id: int
    subscription_registration_id: int
    subscriber_position_id: int
    log_file_name: str
    source_identity: str


@dataclass(frozen=True)
class ImageMessage:
    correlation_id: int
    subscription_registration_id: int
    stream_id: int
    channel: str


@dataclass(frozen=True)
class CounterUpdate:
    correlation_id: int
    counter_id: int


def encode_error(offending_correlation_id: int, error_code: int, message: str) -> bytes:
    data = message.encode("utf-8", "replace")
    return struct.pack("<qii", offending_correlation_id, error_code, len(data)) + data


def decode_error(body: memoryview) -> ErrorResponse:
    _need(body, 16, "error response")
    correlation_id, code = struct.unpack_from("<qi", body, 0)
    message, _ = _string(body, 12, "error response message", "utf-8")
    return ErrorResponse(correlation_id, code, message)


def encode_publication_ready(
    correlation_id: int,
    registration_id: int,
    session_id: int,
    stream_id: int,
    publication_limit_counter_id: int,
    channel_status_indicator_id: int,
    log_file_name: str,
) -> bytes:
    data = _ascii(log_file_name)
    return (
        struct.pack(
            "<qqiiiii",
            correlation_id,
            registration_id,
            session_id,
            stream_id,
            publication_limit_counter_id,
            channel_status_indicator_id,
            len(data),
        )
        + data
    )


def decode_publication_ready(body: memoryview) -> PublicationBuffersReady:
    _need(body, 36, "publication ready")
    fields = struct.unpack_from("<qqiiii", body, 0)
    name, _ = _string(body, 32, "publication ready log file name")
    return PublicationBuffersReady(*fields, name)


def encode_subscription_ready(correlation_id: int, channel_status_indicator_id: int) -> bytes:
    return struct.pack("<qi", correlation_id, channel_status_indicator_id)


def decode_subscription_ready(body: memoryview) -> SubscriptionReady:
    _need(body, 12, "subscription ready")
    return SubscriptionReady(*struct.unpack_from("<qi", body, 0))


def encode_image_ready(
    correlation_id: int,
    session_id: int,
    stream_id: int,
    subscription_registration_id: int,
    subscriber_position_id: int,
    log_file_name: str,
    source_identity: str,
) -> bytes:
    name = _ascii(log_file_name)
    source = _ascii(source_identity)
    head = struct.pack(
        "<qiiqii",
        correlation_id,
        session_id,
        stream_id,
        subscription_registration_id,
        subscriber_position_id,
        len(name),
    )
    padded_name = name + bytes(align(len(name), 4) - len(name))
    return head + padded_name + _I32.pack(len(source)) + source


def decode_image_ready(body: memoryview) -> ImageBuffersReady:
    _need(body, 32, "image ready")
    correlation_id, session_id, stream_id, subscription_registration_id, position_id = struct.unpack_from(
        "<qiiqi", body, 0
    )
    name, end = _string(body, 28, "image ready log file name")
    source, _ = _string(body, 28 + align(end - 28, 4), "image ready source identity")
    return ImageBuffersReady(
        correlation_id, session_id, stream_id, subscription_registration_id, position_id, name, source
    )


def encode_image_message(
    correlation_id: int, subscription_registration_id: int, stream_id: int, channel: str
) -> bytes:
    data = _ascii(channel)
    return struct.pack("<qqii", correlation_id, subscription_registration_id, stream_id, len(data)) + data


def decode_image_message(body: memoryview) -> ImageMessage:
    _need(body, 24, "image message")
    fields = struct.unpack_from("<qqi", body, 0)
    channel, _ = _string(body, 20, "image message channel")
    return ImageMessage(*fields, channel)


def encode_operation_succeeded(correlation_id: int) -> bytes:
    return _I64.pack(correlation_id)


def decode_operation_succeeded(body: memoryview) -> int:
    _need(body, 8, "operation succeeded")
    return _I64.unpack_from(body, 0)[0]


def encode_counter_update(correlation_id: int, counter_id: int) -> bytes:
    return struct.pack("<qi", correlation_id, counter_id)


def decode_counter_update(body: memoryview) -> CounterUpdate:
    _need(body, 12, "counter update")
    return CounterUpdate(*struct.unpack_from("<qi", body, 0))


def encode_client_timeout(client_id: int) -> bytes:
    return _I64.pack(client_id)


def decode_client_timeout(body: memoryview) -> int:
    _need(body, 8, "client timeout")
    return _I64.unpack_from(body, 0)[0]
