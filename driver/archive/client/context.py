"""The archive client's settings, each with its ``aeron.archive.*`` property and ``AERON_ARCHIVE_*`` variable
(docs/archive.md section 4).

Precedence: explicit arguments > properties (a mapping, as Java's ``-D``) > environment > default. Sizes take
k/m/g suffixes and durations ns/us/ms/s suffixes (a plain number is nanoseconds), as Agrona parses them.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from driver.archive.client.exceptions import ArchiveError
from driver.protocol.channel_uri import (
    MTU_LENGTH_PARAM_NAME,
    SPARSE_PARAM_NAME,
    TERM_LENGTH_PARAM_NAME,
    ChannelUri,
)

_SIZE = re.compile(r"^\s*(\d+)\s*([kKmMgG]?)\s*$")
_DURATION = re.compile(r"^\s*(\d+)\s*(ns|us|ms|s)?\s*$", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_DURATION_NS = {"": 1, "ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


class ArchiveConfigurationError(ArchiveError, ValueError):
    """A setting whose value cannot be used; the message names the setting."""


def _size(name: str, text: str) -> int:
    match = _SIZE.match(text)
    if not match:
        raise ArchiveConfigurationError(f"{name}={text!r}: expected a size such as 65536, 64k or 16m")
    return int(match[1]) * _SIZE_UNITS[match[2].lower()]


def _duration_ns(name: str, text: str) -> int:
    match = _DURATION.match(text)
    if not match:
        raise ArchiveConfigurationError(
            f"{name}={text!r}: expected a duration such as 5s, 500ms or 5000000000"
        )
    return int(match[1]) * _DURATION_NS[(match[2] or "").lower()]


def _int(name: str, text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ArchiveConfigurationError(f"{name}={text!r}: expected an integer") from None


def _bool(name: str, text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ArchiveConfigurationError(f"{name}={text!r}: expected true or false")


def _str(_name: str, text: str) -> str:
    return text


def _setting(prop: str, parse: Callable[[str, str], Any], default: Any) -> Any:
    return field(default=default, metadata={"prop": prop, "parse": parse})


@dataclass
class ArchiveClientContext:
    """Where the archive listens and how long to wait for it (Java's ``AeronArchive.Context``)."""

    control_request_channel: str = _setting(
        "aeron.archive.control.channel", _str, "aeron:udp?endpoint=localhost:8010"
    )
    control_request_stream_id: int = _setting("aeron.archive.control.stream.id", _int, 10)
    local_control_channel: str = _setting("aeron.archive.local.control.channel", _str, "aeron:ipc")
    local_control_stream_id: int = _setting("aeron.archive.local.control.stream.id", _int, 11)
    control_response_channel: str = _setting(
        "aeron.archive.control.response.channel", _str, "aeron:udp?endpoint=localhost:8020"
    )
    control_response_stream_id: int = _setting("aeron.archive.control.response.stream.id", _int, 20)
    recording_events_channel: str = _setting(
        "aeron.archive.recording.events.channel", _str, "aeron:udp?endpoint=localhost:8030"
    )
    recording_events_stream_id: int = _setting("aeron.archive.recording.events.stream.id", _int, 30)
    message_timeout_ns: int = _setting("aeron.archive.message.timeout", _duration_ns, 5_000_000_000)
    control_term_buffer_length: int = _setting("aeron.archive.control.term.buffer.length", _size, 64 * 1024)
    control_mtu_length: int = _setting("aeron.archive.control.mtu.length", _size, 1408)
    control_term_buffer_sparse: bool = _setting("aeron.archive.control.term.buffer.sparse", _bool, True)
    aeron_dir: str | None = _setting("aeron.dir", _str, None)
    """The driver's dir, for the Aeron client the archive client makes when it is given none."""
    error_handler: Callable[[ArchiveError], None] | None = None
    """Receives ERROR responses nobody waits for (an error of a replay or extension after its OK);
    they are also kept for ``poll_for_error_response``."""
    invoke_aeron_client: bool = False
    """Run the Aeron client's duty cycle while waiting (an Aeron made with ``use_conductor_invoker=True``)."""

    @classmethod
    def from_sources(
        cls,
        explicit: Mapping[str, Any] | None = None,
        properties: Mapping[str, str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> ArchiveClientContext:
        """Settings from explicit values (field names), properties (``aeron.archive.*``) and the environment
        (``AERON_ARCHIVE_*``, ``AERON_DIR``), else the defaults."""
        explicit = {k: v for k, v in (explicit or {}).items() if v is not None}
        properties = properties or {}
        environ = os.environ if environ is None else environ
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(explicit) - names)
        if unknown:
            raise ArchiveConfigurationError(
                f"unknown archive client settings {unknown}: use one of {sorted(names)}"
            )
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name in explicit:
                values[f.name] = explicit[f.name]
                continue
            if "prop" not in f.metadata:
                continue
            prop, parse = f.metadata["prop"], f.metadata["parse"]
            env_name = prop.upper().replace(".", "_")
            if prop in properties:
                values[f.name] = parse(prop, properties[prop])
            elif env_name in environ:
                values[f.name] = parse(env_name, environ[env_name])
        return cls(**values)

    def replace(self, **changes: Any) -> ArchiveClientContext:
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    @property
    def message_timeout_s(self) -> float:
        return self.message_timeout_ns / 1e9

    def concluded_control_request_channel(self) -> str:
        """The request channel with the control term length, mtu and sparse flag set, as the Java client
        publishes on it (docs/archive.md section 4)."""
        uri = ChannelUri.parse(self.control_request_channel)
        uri.params[TERM_LENGTH_PARAM_NAME] = str(self.control_term_buffer_length)
        uri.params[MTU_LENGTH_PARAM_NAME] = str(self.control_mtu_length)
        uri.params[SPARSE_PARAM_NAME] = "true" if self.control_term_buffer_sparse else "false"
        return str(uri)
