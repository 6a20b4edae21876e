"""Schema 101/100 codecs: round trips over every message (hypothesis), blockLength handling, and typed errors for
anything undecodable (fuzzed)."""

from __future__ import annotations

import contextlib
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driver.archive.codecs import messages as m
from driver.archive.codecs.mark import MARK, MarkFileHeader
from driver.archive.codecs.sbe import (
    HEADER,
    HEADER_LENGTH,
    CodecError,
    MessageCodec,
    SchemaMismatchError,
    UnknownTemplateError,
)

CODECS: list[MessageCodec] = [*m.ARCHIVE.by_template.values(), *MARK.by_template.values()]
RANGES = {"b": (-128, 127), "B": (0, 255), "i": (-(2**31), 2**31 - 1), "q": (-(2**63), 2**63 - 1)}
ascii_text = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=80)


def _field_strategy(codec: MessageCodec, index: int) -> st.SearchStrategy[Any]:
    if index >= len(codec.fixed_fields):
        return ascii_text
    fixed = codec.fixed_fields[index].fixed
    if fixed.enum_type is not None:
        return st.sampled_from(list(fixed.enum_type))
    lo, hi = RANGES[fixed.fmt]
    return st.integers(lo, hi)


def messages_of(codec: MessageCodec) -> st.SearchStrategy[Any]:
    count = len(codec.fixed_fields) + len(codec.var_fields)
    return st.tuples(*(_field_strategy(codec, i) for i in range(count))).map(lambda v: codec.cls(*v))


any_message = st.sampled_from(CODECS).flatmap(lambda c: st.tuples(st.just(c), messages_of(c)))


def _schema(codec: MessageCodec) -> Any:
    return MARK if codec.schema_id == MARK.schema_id else m.ARCHIVE


@settings(max_examples=400, deadline=None)
@given(any_message)
def test_round_trip(pair: tuple[MessageCodec, Any]) -> None:
    codec, msg = pair
    encoded = codec.encode(msg)
    assert len(encoded) == HEADER_LENGTH + codec.body_length(msg)
    assert HEADER.unpack_from(encoded) == (codec.block_length, codec.template_id, codec.schema_id, 0)
    assert _schema(codec).decode(encoded) == msg


@settings(max_examples=200, deadline=None)
@given(any_message, st.binary(min_size=1, max_size=16))
def test_appended_fixed_fields_are_skipped(pair: tuple[MessageCodec, Any], extra: bytes) -> None:
    """A later version's longer block is tolerated: var data is found after the header's blockLength."""
    codec, msg = pair
    encoded = codec.encode(msg)
    split = HEADER_LENGTH + codec.block_length
    longer = bytearray(encoded[:split] + extra + encoded[split:])
    struct.pack_into("<H", longer, 0, codec.block_length + len(extra))
    assert _schema(codec).decode(bytes(longer)) == msg


def test_decode_within_a_larger_buffer_honours_offset_and_length() -> None:
    msg = m.ConnectRequest(7, 20, "aeron:udp?endpoint=localhost:8020")
    encoded = m.encode(msg)
    buffer = b"\xff" * 5 + encoded + b"\xee" * 9
    assert m.decode(buffer, 5, len(encoded)) == msg
    with pytest.raises(CodecError, match=r"ConnectRequest\.response_channel"):
        m.decode(buffer, 5, len(encoded) - 1)


def test_typed_errors_name_message_and_field() -> None:
    encoded = bytearray(m.encode(m.ConnectRequest(1, 2, "abc")))
    with pytest.raises(CodecError, match=r"truncated"):
        m.decode(encoded[:5])
    with pytest.raises(CodecError, match=r"ConnectRequest: truncated"):
        m.decode(encoded[:15])
    struct.pack_into("<I", encoded, HEADER_LENGTH + 12, 1000)
    with pytest.raises(CodecError, match=r"ConnectRequest\.response_channel: var-data length 1000 past"):
        m.decode(encoded)
    other = bytearray(encoded)
    struct.pack_into("<H", other, 4, 100)
    with pytest.raises(SchemaMismatchError, match=r"expected schemaId=101, actual=100"):
        m.decode(other)
    unknown = bytearray(encoded)
    struct.pack_into("<H", unknown, 2, 99)
    with pytest.raises(UnknownTemplateError) as info:
        m.decode(unknown)
    assert info.value.template_id == 99
    short_block = bytearray(encoded)
    struct.pack_into("<H", short_block, 0, 11)
    with pytest.raises(CodecError, match=r"ConnectRequest\.blockLength: 11 < 12"):
        m.decode(short_block)
    bad_enum = bytearray(m.encode(m.ControlResponse(1, 2, 3, m.ControlResponseCode.OK)))
    struct.pack_into("<i", bad_enum, HEADER_LENGTH + 24, 7)
    with pytest.raises(CodecError, match=r"ControlResponse\.code: unknown ControlResponseCode value 7"):
        m.decode(bad_enum)


def test_encode_rejects_what_1_15_1_could_not_carry() -> None:
    with pytest.raises(
        CodecError, match=r"ConnectRequest\.response_stream_id: value 2147483648 out of range"
    ):
        m.encode(m.ConnectRequest(1, 2**31, "x"))
    with pytest.raises(CodecError, match=r"ConnectRequest\.response_channel: not an US-ASCII"):
        m.encode(m.ConnectRequest(1, 2, "caf\u00e9"))
    with pytest.raises(CodecError, match=r"do not fit"):
        m.encode_into(bytearray(20), 0, m.ConnectRequest(1, 2, "abc"))


def test_null_enum_values_round_trip() -> None:
    msg = m.StartRecordingRequest(1, 2, 3, m.SourceLocation.NULL_VAL, "x")
    assert m.decode(m.encode(msg)) == msg
    assert m.encode(msg)[HEADER_LENGTH + 20] == 255


def test_mark_file_header_var_data_starts_at_128() -> None:
    msg = MarkFileHeader(0, 1, 2, 3, 10, 11, 30, "c", "l", "e", "/d")
    encoded = MARK.encode(msg)
    assert encoded[HEADER_LENGTH + 128 : HEADER_LENGTH + 133] == b"\x01\x00\x00\x00c"


@settings(max_examples=1500, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_raise_only_codec_errors(data: bytes) -> None:
    for schema in (m.ARCHIVE, MARK):
        with contextlib.suppress(CodecError):
            schema.decode(data)


@settings(max_examples=1500, deadline=None)
@given(any_message, st.data())
def test_mutated_messages_raise_only_codec_errors(
    pair: tuple[MessageCodec, Any], data: st.DataObject
) -> None:
    codec, msg = pair
    encoded = bytearray(codec.encode(msg))
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(0, len(encoded) - 1))
        encoded[index] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(encoded)))
    with contextlib.suppress(CodecError):
        _schema(codec).decode(bytes(encoded[:cut]))
