"""Java's number parsing as Aeron 1.15.1 applies it to channel parameters (docs/uri.md section 2).

Four parsers meet in a channel URI and they disagree, so a value means what the parser its key goes through
makes of it:

- ``Integer.parseInt`` / ``Long.parseLong`` (:func:`parse_java_int`, :func:`parse_java_long`): an optional
  ``+`` or ``-`` and decimal digits (any Unicode decimal digit, as ``Character.digit``); out of range is an
  error;
- agrona's ``AsciiEncoding.parseIntAscii`` / ``parseLongAscii`` (:func:`parse_int_ascii`,
  :func:`parse_long_ascii`): an optional ``-`` and ASCII digits only, no ``+``; an empty or sign-only text
  is 0 and too many digits wrap silently;
- agrona 0.9.31 ``SystemUtil.parseSize`` / ``parseDuration`` (:func:`parse_size`,
  :func:`parse_duration_ns`), which combine the two.

Every failure is a :class:`NumberFormatError` whose message names the parameter and its value.
"""

from __future__ import annotations

import re

from driver.util.bit_util import INT64_MAX, INT64_MIN, to_int32

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

_JAVA_INTEGER = re.compile(r"[+-]?\d+")  # \d: Unicode decimal digits, as Character.digit(c, 10)
_ASCII_DIGITS = frozenset("0123456789")

# agrona 0.9.31's limits, as it has them (its k limit is 1023 below Long.MAX_VALUE / 1024).
_MAX_K_VALUE = 9007199254739968
_MAX_M_VALUE = 8796093022207
_MAX_G_VALUE = 8589934591
_SIZE_MULTIPLIERS = {"k": 1024, "m": 1024**2, "g": 1024**3}
_SIZE_LIMITS = {"k": _MAX_K_VALUE, "m": _MAX_M_VALUE, "g": _MAX_G_VALUE}
_DURATION_MULTIPLIERS = {"n": 1, "u": 1_000, "m": 1_000_000}
_SECOND_NS = 1_000_000_000


class NumberFormatError(ValueError):
    """A parameter value Java would refuse with a NumberFormatException (or an index error)."""


def to_int64(value: int) -> int:
    """Wrap to a signed 64-bit integer, as Java's long arithmetic does."""
    value &= 0xFFFF_FFFF_FFFF_FFFF
    return value - (1 << 64) if value >> 63 else value


def _java_integer(name: str, value: str, low: int, high: int, kind: str) -> int:
    if not _JAVA_INTEGER.fullmatch(value):
        raise NumberFormatError(f"{name}={value} is not {kind} (an optional sign and decimal digits)")
    number = int(value)
    if not low <= number <= high:
        raise NumberFormatError(f"{name}={value} is out of range for {kind} ({low}..{high})")
    return number


def parse_java_int(name: str, value: str) -> int:
    """``Integer.parseInt``: optional ``+``/``-`` and digits, within 32 bits."""
    return _java_integer(name, value, INT32_MIN, INT32_MAX, "a 32-bit integer")


def parse_java_long(name: str, value: str) -> int:
    """``Long.parseLong``: optional ``+``/``-`` and digits, within 64 bits."""
    return _java_integer(name, value, INT64_MIN, INT64_MAX, "a 64-bit integer")


def parse_long_ascii(name: str, value: str, text: str) -> int:
    """``AsciiEncoding.parseLongAscii`` of ``text`` (a slice of ``value``, which the message shows): an
    optional ``-`` then ASCII digits; ``""`` and ``"-"`` are 0; the result wraps at 64 bits."""
    negative = text.startswith("-")
    digits = text[1:] if negative else text
    if not set(digits) <= _ASCII_DIGITS:
        bad = next(c for c in digits if c not in _ASCII_DIGITS)
        raise NumberFormatError(f"{name}={value}: {bad!r} is not a digit (only ASCII digits, '-' in front)")
    number = int(digits) if digits else 0
    return to_int64(-number if negative else number)


def parse_int_ascii(name: str, value: str, text: str) -> int:
    """``AsciiEncoding.parseIntAscii``: as :func:`parse_long_ascii` but wrapping at 32 bits."""
    return to_int32(parse_long_ascii(name, value, text))


def parse_size(name: str, value: str) -> int:
    """agrona 0.9.31 ``SystemUtil.parseSize``: a ``Long.parseLong`` number, or ASCII digits with a ``k``,
    ``m`` or ``g`` suffix (either case, times 1024^n). Returns the 64-bit result; the driver then casts it
    to ``int`` (:func:`driver.util.bit_util.to_int32`), so ``4294968320`` is 1024 there."""
    if value == "":
        raise NumberFormatError(f"{name}= is empty: expected a size such as 65536, 64k, 16m or 1g")
    last = value[-1]
    if last.isdecimal():
        return parse_java_long(name, value)
    suffix = last.lower()
    if suffix not in _SIZE_MULTIPLIERS:
        raise NumberFormatError(f"{name}={value} should end with a digit or one of k, m, g (either case)")
    number = parse_long_ascii(name, value, value[:-1])
    if number > _SIZE_LIMITS[suffix]:
        raise NumberFormatError(f"{name}={value} would overflow a 64-bit long")
    return to_int64(number * _SIZE_MULTIPLIERS[suffix])


def _saturate(number: int) -> int:
    return max(INT64_MIN, min(INT64_MAX, number))


def parse_duration_ns(name: str, value: str) -> int:
    """agrona 0.9.31 ``SystemUtil.parseDuration``: a ``Long.parseLong`` number of ns, or ASCII digits with
    ``s``, ``ms``, ``us`` or ``ns`` (either case). Suffixed values saturate at the 64-bit limits, as
    ``TimeUnit.toNanos``; the digits may be empty (``ms`` is 0) but a lone ``s`` is an error, as in Java."""
    if value == "":
        raise NumberFormatError(
            f"{name}= is empty: expected a duration such as 5000000000, 5s, 500ms or 10us"
        )
    last = value[-1]
    if last.isdecimal():
        return parse_java_long(name, value)
    invalid = NumberFormatError(
        f"{name}={value} should end with a digit or one of s, ms, us, ns (either case)"
    )
    if last not in "sS" or len(value) < 2:
        raise invalid
    unit = value[-2]
    if unit.isdecimal():
        return _saturate(parse_long_ascii(name, value, value[:-1]) * _SECOND_NS)
    multiplier = _DURATION_MULTIPLIERS.get(unit.lower())
    if multiplier is None:
        raise invalid
    return _saturate(parse_long_ascii(name, value, value[:-2]) * multiplier)
