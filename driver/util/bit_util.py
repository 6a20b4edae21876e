"""Small integer helpers shared by every layout."""

SIZE_OF_INT32 = 4
SIZE_OF_INT64 = 8
CACHE_LINE_LENGTH = 64
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


def align(value: int, alignment: int) -> int:
    """Round ``value`` up to a multiple of ``alignment`` (a power of two)."""
    return (value + alignment - 1) & ~(alignment - 1)


def is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def to_int32(value: int) -> int:
    """Wrap to a signed 32-bit integer, as Java's int arithmetic does."""
    value &= 0xFFFFFFFF
    return value - 0x1_0000_0000 if value & 0x8000_0000 else value


def java_hex(value: int, bits: int = 32) -> str:
    """Lower-case hex of the two's complement value, like Integer/Long.toHexString."""
    return format(value & ((1 << bits) - 1), "x")
