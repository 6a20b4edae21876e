"""The SBE machinery shared by both archive schemas: the 8-byte message header, field types, and one codec per
message derived from a single NamedTuple definition (docs/archive.md section 1).

A message is declared once, as a NamedTuple whose annotations carry the SBE encoding::

    @message(template_id=2, block_length=12)
    class ConnectRequest(NamedTuple):
        correlation_id: Int64
        response_stream_id: Int32
        response_channel: VarAscii

Fixed fields are laid out one after the other (chained offsets) unless a field names its offset with ``At(n)``;
the block length is the schema's (it may leave reserved room after the last field, as the mark file's does). Var-data fields follow the
fixed block in declaration order, each a uint32 length and US-ASCII bytes.

Decoders honour the header's blockLength: a longer block (fields appended by a later version) is skipped as a
1.15.1 decoder does; anything that cannot be decoded raises ``CodecError`` naming the message and the field,
never reading past the buffer.
"""

from __future__ import annotations

import enum
import struct
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, NamedTuple, TypeVar

# ---------------------------------------------------------------------------------------------------------------
# Message header: uint16 blockLength, templateId, schemaId, version (docs/archive.md section 1).

HEADER = struct.Struct("<HHHH")
BLOCK_LENGTH_OFFSET = 0
TEMPLATE_ID_OFFSET = BLOCK_LENGTH_OFFSET + 2
SCHEMA_ID_OFFSET = TEMPLATE_ID_OFFSET + 2
VERSION_OFFSET = SCHEMA_ID_OFFSET + 2
HEADER_LENGTH = VERSION_OFFSET + 2

VAR_LENGTH = struct.Struct("<I")
VAR_LENGTH_LENGTH = VAR_LENGTH.size
VAR_DATA_MAX_LENGTH = 1 << 30

INT32_NULL = -(2**31)
INT64_NULL = -(2**63)
UINT8_NULL = 255


class MessageHeader(NamedTuple):
    block_length: int
    template_id: int
    schema_id: int
    version: int


class CodecError(ValueError):
    """A message that cannot be encoded or decoded; ``message`` and ``field`` name where."""

    def __init__(self, message: str, field: str | None, reason: str) -> None:
        self.message = message
        self.field = field
        self.reason = reason
        where = f"{message}.{field}" if field else message
        super().__init__(f"{where}: {reason}")


class SchemaMismatchError(CodecError):
    """The header names another schema (1.15.1 throws ``expected schemaId=101, actual=N``)."""


class UnknownTemplateError(CodecError):
    """A template id this schema does not define (1.15.1 ignores such messages)."""

    def __init__(self, message: str, template_id: int) -> None:
        self.template_id = template_id
        super().__init__(message, "templateId", f"unknown template id {template_id}")


# ---------------------------------------------------------------------------------------------------------------
# Field types, attached to annotations with typing.Annotated.


@dataclass(frozen=True)
class Fixed:
    """A fixed-size primitive: struct format character, size, optional enum it decodes into."""

    fmt: str
    size: int
    enum_type: type[enum.IntEnum] | None = None


@dataclass(frozen=True)
class At:
    """Places a fixed field at an explicit offset in the block (leaving a gap before it)."""

    offset: int


class _Var:
    """Marks a var-data field: uint32 length + US-ASCII."""


VAR_ASCII = _Var()

Int8 = Annotated[int, Fixed("b", 1)]
UInt8 = Annotated[int, Fixed("B", 1)]
Int32 = Annotated[int, Fixed("i", 4)]
Int64 = Annotated[int, Fixed("q", 8)]
VarAscii = Annotated[str, VAR_ASCII]

E = TypeVar("E", bound=enum.IntEnum)


def enum_field(enum_type: type[E], encoding: Any) -> Any:
    """An enum stored as ``encoding`` (Int32 or UInt8): decoded into ``enum_type``, unknown values rejected."""
    fixed = next(m for m in typing.get_args(encoding)[1:] if isinstance(m, Fixed))
    return Annotated[enum_type, Fixed(fixed.fmt, fixed.size, enum_type)]


# ---------------------------------------------------------------------------------------------------------------
# Per-message codec.


@dataclass(frozen=True)
class FieldLayout:
    name: str
    offset: int
    fixed: Fixed


T = TypeVar("T", bound=tuple[Any, ...])


class MessageCodec:
    """Encoder and decoder of one message type, built from its NamedTuple definition."""

    def __init__(self, cls: type, schema_id: int, version: int, template_id: int, block_length: int) -> None:
        self.cls = cls
        self.name = cls.__name__
        self.schema_id = schema_id
        self.version = version
        self.template_id = template_id
        self.block_length = block_length
        hints = typing.get_type_hints(cls, include_extras=True)
        fixed: list[FieldLayout] = []
        var: list[str] = []
        next_offset = 0
        for name in cls._fields:  # type: ignore[attr-defined]
            extras = typing.get_args(hints[name])[1:]
            if VAR_ASCII in extras:
                var.append(name)
                continue
            if var:
                raise TypeError(f"{self.name}.{name}: fixed field after var data")
            kind = next(m for m in extras if isinstance(m, Fixed))
            at = next((m.offset for m in extras if isinstance(m, At)), next_offset)
            if at < next_offset:
                raise TypeError(f"{self.name}.{name}: offset {at} overlaps the previous field")
            fixed.append(FieldLayout(name, at, kind))
            next_offset = at + kind.size
        if next_offset > block_length:
            raise TypeError(f"{self.name}: fields end at {next_offset}, past block length {block_length}")
        self.fixed_fields = tuple(fixed)
        self.var_fields = tuple(var)
        self.offsets = {f.name: f.offset for f in fixed}
        fmt, at = "<", 0
        for f in fixed:
            fmt += f"{f.offset - at}x" if f.offset > at else ""
            fmt += f.fixed.fmt
            at = f.offset + f.fixed.size
        self.block = struct.Struct(fmt)
        self._fixed_count = len(fixed)
        self._enums = tuple((i, f.fixed.enum_type) for i, f in enumerate(fixed) if f.fixed.enum_type)

    # -- encoding ------------------------------------------------------------------------------------------------

    def _var_bytes(self, msg: tuple[Any, ...]) -> list[bytes]:
        out = []
        for i, name in enumerate(self.var_fields, self._fixed_count):
            value = msg[i]
            try:
                data = value.encode("ascii")
            except (UnicodeEncodeError, AttributeError) as exc:
                raise CodecError(self.name, name, f"not an US-ASCII string: {value!r}") from exc
            if len(data) > VAR_DATA_MAX_LENGTH:
                raise CodecError(self.name, name, f"length {len(data)} exceeds {VAR_DATA_MAX_LENGTH}")
            out.append(data)
        return out

    def _pack_block(self, buffer: Any, offset: int, msg: tuple[Any, ...]) -> None:
        values = msg[: self._fixed_count]
        try:
            self.block.pack_into(buffer, offset, *values)
        except struct.error as exc:
            for f, v in zip(self.fixed_fields, values, strict=True):
                try:
                    struct.pack("<" + f.fixed.fmt, v)
                except struct.error:
                    raise CodecError(self.name, f.name, f"value {v!r} out of range") from exc
            raise CodecError(self.name, None, str(exc)) from exc

    def body_length(self, msg: tuple[Any, ...]) -> int:
        """Encoded length of the body (block + var data), without the message header."""
        return self.block_length + sum(
            VAR_LENGTH_LENGTH + len(msg[i]) for i in range(self._fixed_count, len(msg))
        )

    def encode_body_into(self, buffer: Any, offset: int, msg: tuple[Any, ...]) -> int:
        """Writes the body (no header) at ``offset``; returns its length. Used where 1.15.1 stores bodies bare
        (the catalog, the mark file)."""
        var = self._var_bytes(msg)
        end = offset + self.block_length + sum(VAR_LENGTH_LENGTH + len(d) for d in var)
        if offset < 0 or end > len(buffer):
            raise CodecError(self.name, None, f"{end - offset} bytes do not fit at offset {offset}")
        self._pack_block(buffer, offset, msg)
        at = offset + self.block_length
        for data in var:
            VAR_LENGTH.pack_into(buffer, at, len(data))
            at += VAR_LENGTH_LENGTH
            buffer[at : at + len(data)] = data
            at += len(data)
        return at - offset

    def encode_into(self, buffer: Any, offset: int, msg: tuple[Any, ...]) -> int:
        """Writes header + body at ``offset``; returns the total length."""
        if offset < 0 or offset + HEADER_LENGTH > len(buffer):
            raise CodecError(self.name, None, f"header does not fit at offset {offset}")
        length = self.encode_body_into(buffer, offset + HEADER_LENGTH, msg)
        HEADER.pack_into(buffer, offset, self.block_length, self.template_id, self.schema_id, self.version)
        return HEADER_LENGTH + length

    def encode(self, msg: tuple[Any, ...]) -> bytes:
        buffer = bytearray(HEADER_LENGTH + self.body_length(msg))
        self.encode_into(buffer, 0, msg)
        return bytes(buffer)

    # -- decoding ------------------------------------------------------------------------------------------------

    def decode_body(self, buffer: Any, offset: int, block_length: int, limit: int | None = None) -> Any:
        """Decodes a body whose fixed block is ``block_length`` bytes, reading nothing at or past ``limit``."""
        end = len(buffer) if limit is None else min(limit, len(buffer))
        if block_length < self.block_length:
            raise CodecError(self.name, "blockLength", f"{block_length} < {self.block_length}")
        if offset < 0 or offset + block_length > end:
            raise CodecError(self.name, None, f"truncated: block of {block_length} past {end - offset} bytes")
        values = list(self.block.unpack_from(buffer, offset))
        for i, enum_type in self._enums:
            try:
                values[i] = enum_type(values[i])
            except ValueError as exc:
                raise CodecError(
                    self.name, self.fixed_fields[i].name, f"unknown {enum_type.__name__} value {values[i]}"
                ) from exc
        at = offset + block_length
        for name in self.var_fields:
            if at + VAR_LENGTH_LENGTH > end:
                raise CodecError(self.name, name, "truncated: var-data length past the buffer")
            (length,) = VAR_LENGTH.unpack_from(buffer, at)
            at += VAR_LENGTH_LENGTH
            if at + length > end:
                raise CodecError(self.name, name, f"var-data length {length} past the buffer")
            values.append(bytes(buffer[at : at + length]).decode("ascii", "replace"))
            at += length
        return self.cls(*values)


class Schema:
    """The messages of one SBE schema, by template id and by class."""

    def __init__(self, name: str, schema_id: int, version: int) -> None:
        self.name = name
        self.schema_id = schema_id
        self.version = version
        self.by_template: dict[int, MessageCodec] = {}
        self.by_class: dict[type, MessageCodec] = {}

    def message(self, template_id: int, block_length: int) -> Callable[[type[T]], type[T]]:
        """Class decorator registering a NamedTuple as a message of this schema."""

        def register(cls: type[T]) -> type[T]:
            codec = MessageCodec(cls, self.schema_id, self.version, template_id, block_length)
            if template_id in self.by_template:
                raise TypeError(f"template id {template_id} used twice")
            self.by_template[template_id] = codec
            self.by_class[cls] = codec
            return cls

        return register

    def codec(self, cls: type) -> MessageCodec:
        return self.by_class[cls]

    def encode(self, msg: tuple[Any, ...]) -> bytes:
        return self.by_class[type(msg)].encode(msg)

    def encode_into(self, buffer: Any, offset: int, msg: tuple[Any, ...]) -> int:
        return self.by_class[type(msg)].encode_into(buffer, offset, msg)

    def decode_header(self, buffer: Any, offset: int = 0, length: int | None = None) -> MessageHeader:
        end = len(buffer) if length is None else min(offset + length, len(buffer))
        if offset < 0 or offset + HEADER_LENGTH > end:
            raise CodecError(self.name, "messageHeader", f"truncated: {max(end - offset, 0)} bytes")
        header = MessageHeader(*HEADER.unpack_from(buffer, offset))
        if header.schema_id != self.schema_id:
            raise SchemaMismatchError(
                self.name, "schemaId", f"expected schemaId={self.schema_id}, actual={header.schema_id}"
            )
        return header

    def decode(self, buffer: Any, offset: int = 0, length: int | None = None) -> Any:
        """Decodes one message (header + body) from ``buffer[offset:offset + length]``.

        The schema version is not checked, as 1.15.1 does not check it (docs/archive.md section 12)."""
        end = len(buffer) if length is None else min(offset + length, len(buffer))
        header = self.decode_header(buffer, offset, end - offset)
        codec = self.by_template.get(header.template_id)
        if codec is None:
            raise UnknownTemplateError(self.name, header.template_id)
        return codec.decode_body(buffer, offset + HEADER_LENGTH, header.block_length, end)
