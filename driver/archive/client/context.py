"""The archive client's settings, each with its ``aeron.archive.*`` property and ``AERON_ARCHIVE_*`` variable
(docs/archive.md section 4).

Precedence: explicit arguments > properties (a mapping, as Java's ``-D``) > environment > default. Sizes take
k/m/g suffixes and durations ns/us/ms/s suffixes (a plain number is nanoseconds), as Agrona parses them.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from driver.archive.client.exceptions import ArchiveError
from driver.protocol.channel_uri import (
    MTU_LENGTH_PARAM_NAME,
    SPARSE_PARAM_NAME,
    TERM_LENGTH_PARAM_NAME,
    ChannelUri,
)
from driver.util.settings import (
    ConfigurationError,
    parse_bool,
    parse_duration_ns,
    parse_int,
    parse_size,
    parse_text,
    resolve_settings,
    setting,
)


class ArchiveConfigurationError(ArchiveError, ValueError):
    """A setting whose value cannot be used; the message names the setting."""


_size = parse_size
_duration_ns = parse_duration_ns
_int = parse_int
_bool = parse_bool
_str = parse_text


def _setting(prop: str, parse: Callable[[str, str], Any], default: Any) -> Any:
    return setting(prop, parse, default)


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
        try:
            values = resolve_settings(cls, explicit, properties, environ)
        except ConfigurationError as e:
            raise ArchiveConfigurationError(str(e)) from None
        # Fields that are not settings (error_handler, ...) are taken as given.
        values.update({k: v for k, v in explicit.items() if k not in values})
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
