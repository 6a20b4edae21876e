"""Text from shared files made safe to print: clients choose channels and labels, so a terminal must never
receive their control characters raw (an ESC sequence could rewrite the screen, a CR/LF forge a line)."""

from __future__ import annotations

import unicodedata

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(ch: str) -> str:
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def is_unsafe(ch: str) -> bool:
    """C0/C1 controls, DEL, and format characters (bidi overrides, zero-width marks)."""
    return unicodedata.category(ch) in ("Cc", "Cf")


def printable(text: str, keep: str = "") -> str:
    """``text`` with every control and format character escaped as ``\\n``, ``\\r``, ``\\t``, ``\\xNN`` or
    ``\\uNNNN``; characters in ``keep`` (e.g. the line breaks of a multi-line error text) stay as they are."""
    if text.isprintable():  # the common case: no control or format character at all
        return text
    return "".join(_escape_char(ch) if is_unsafe(ch) and ch not in keep else ch for ch in text)
