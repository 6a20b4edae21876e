"""Settings as Aeron reads them: each a dataclass field carrying its ``aeron.*`` property, parser, unit and
help text; values come from explicit arguments (CLI flags), then ``-D`` properties, then ``AERON_*`` environment
variables (the property upper-cased, dots as underscores), else the default.

The driver's, the archive's and the archive client's contexts are all built this way, with these parsers: sizes
and durations as agrona's ``SystemUtil`` parses them (driver/util/java_numbers.py), so a value means here what it
means to the Java driver and archive.
"""

from __future__ import annotations

import grp
from collections.abc import Callable, Mapping
from dataclasses import Field, field, fields
from typing import Any

from driver.util.java_numbers import INT32_MAX, NumberFormatError, parse_java_long
from driver.util.java_numbers import parse_duration_ns as parse_java_duration_ns
from driver.util.java_numbers import parse_size as parse_java_size

Parser = Callable[[str, str], Any]


class ConfigurationError(ValueError):
    """A setting has a value that cannot be used; the message names the setting."""


def setting(prop: str, parse: Parser, default: Any, unit: str = "", doc: str = "") -> Any:
    """A dataclass field that is a setting (see the module docstring)."""
    return field(default=default, metadata={"prop": prop, "parse": parse, "unit": unit, "doc": doc})


def settings_of(cls: type) -> list[Field[Any]]:
    return [f for f in fields(cls) if "prop" in f.metadata]  # type: ignore[arg-type]


def resolve_settings(
    cls: type,
    explicit: Mapping[str, Any],
    properties: Mapping[str, str],
    environ: Mapping[str, str],
) -> dict[str, Any]:
    """The value of every setting of ``cls`` that is given somewhere, by precedence; unset ones are left out
    (their defaults apply). Explicit strings go through the setting's parser too, so that a flag's "shared"
    becomes SHARED and a bad value is refused as a bad property would be."""
    values: dict[str, Any] = {}
    for f in settings_of(cls):
        prop, parse = f.metadata["prop"], f.metadata["parse"]
        env_name = prop.upper().replace(".", "_")
        if explicit.get(f.name) is not None:
            raw = explicit[f.name]
            values[f.name] = parse(prop, raw) if isinstance(raw, str) else raw
        elif prop in properties:
            values[f.name] = parse(prop, properties[prop])
        elif env_name in environ:
            values[f.name] = parse(env_name, environ[env_name])
    return values


def unknown_properties(cls: type, properties: Mapping[str, str], namespace: str) -> list[str]:
    """Properties in ``namespace`` that no setting of ``cls`` knows (reported, not fatal, as in Java)."""
    known = {f.metadata["prop"] for f in settings_of(cls)}
    return sorted(p for p in properties if p.startswith(namespace) and p not in known)


# --- parsers: (name, text) -> value, ConfigurationError naming the setting ----------------------------------


def parse_text(_name: str, text: str) -> str:
    return text


def parse_int(name: str, text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ConfigurationError(f"{name}={text!r}: expected an integer") from None


def parse_size(name: str, text: str) -> int:
    """agrona's ``SystemUtil.getSizeAsInt``: ``parseSize`` (k/m/g suffixes), then 0..2^31-1. Spaces around the
    value are ignored (environment variables often carry them)."""
    try:
        value = parse_java_size(name, text.strip())
    except NumberFormatError as ex:
        raise ConfigurationError(
            f"{name}={text!r}: expected a size such as 65536, 64k, 16m or 1g ({ex})"
        ) from None
    if not 0 <= value <= INT32_MAX:
        raise ConfigurationError(f"{name}={text!r}: a size must be 0..{INT32_MAX}, got {value}")
    return value


def parse_duration_ns(name: str, text: str) -> int:
    """agrona's ``SystemUtil.getDurationInNanos``: ``parseDuration`` (ns, or s/ms/us/ns suffixes), not
    negative. Spaces around the value are ignored."""
    try:
        value = parse_java_duration_ns(name, text.strip())
    except NumberFormatError as ex:
        raise ConfigurationError(
            f"{name}={text!r}: expected a duration such as 5000000000, 5s, 500ms or 10us ({ex})"
        ) from None
    if value < 0:
        raise ConfigurationError(f"{name}={text!r}: a duration must not be negative")
    return value


def parse_ms(name: str, text: str) -> int:
    """Millisecond settings (aeron.driver.timeout): plain numbers are ms, suffixes are honoured."""
    stripped = text.strip()
    if stripped[-1:].isdecimal():
        try:
            value = parse_java_long(name, stripped)
        except NumberFormatError:
            value = -1
        if value < 0:
            raise ConfigurationError(
                f"{name}={text!r}: expected milliseconds such as 10000 or a duration like 10s"
            )
        return value
    return parse_duration_ns(name, text) // 1_000_000


def parse_bool(name: str, text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off", ""):
        return False
    raise ConfigurationError(f"{name}={text!r}: expected true or false")


def parse_mode(name: str, text: str) -> int | None:
    """An octal file mode such as 0700 or 750 (no setuid/setgid/sticky bits: 0o777 at most)."""
    value = text.strip()
    if not value:
        return None
    try:
        mode = int(value, 8)
    except ValueError:
        mode = -1
    if not 0 <= mode <= 0o777:
        raise ConfigurationError(f"{name}={text!r}: expected an octal mode such as 0700, 0750 or 0770")
    return mode


def parse_group(name: str, text: str) -> int | None:
    """A group name or numeric gid; the group must exist."""
    value = text.strip()
    if not value:
        return None
    try:
        return grp.getgrgid(int(value)).gr_gid if value.isdigit() else grp.getgrnam(value).gr_gid
    except (KeyError, OverflowError):
        raise ConfigurationError(f"{name}={text!r}: no such group on this system") from None


def choice_parser(*choices: str) -> Parser:
    """A parser taking one of ``choices``, case-insensitively, as written in ``choices``."""

    def parse(name: str, text: str) -> str:
        value = text.strip().upper()
        for choice in choices:
            if value == choice.upper():
                return choice
        raise ConfigurationError(f"{name}={text!r}: expected {', '.join(choices)}")

    return parse
