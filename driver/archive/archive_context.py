"""ArchiveContext: every archive setting with its ``aeron.archive.*`` property, ``AERON_ARCHIVE_*`` variable,
default and unit (docs/archive.md sections 4 and 12).

Precedence, as the driver's context: explicit values (CLI flags) > ``-Daeron.archive.x=y`` properties >
``AERON_ARCHIVE_X_Y`` environment > default. Sizes and durations are parsed as agrona's SystemUtil parses them
(``64k``, ``5s``; a plain duration is in ns), which is what the 1.15.1 archive reads.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from driver.archive.catalog import DEFAULT_MAX_ENTRIES, MAX_ENTRIES
from driver.archive.segment_file import validate_segment_length
from driver.protocol.channel_uri import ChannelUri, InvalidChannelError
from driver.util.files import FilePermissions
from driver.util.settings import (
    ConfigurationError,
    choice_parser,
    parse_bool,
    parse_duration_ns,
    parse_group,
    parse_int,
    parse_mode,
    parse_size,
    parse_text,
    resolve_settings,
    setting,
    settings_of,
    unknown_properties,
)

THREADING_MODES = ("DEDICATED", "SHARED", "INVOKER")
MAX_BLOCK_LENGTH = 2 * 1024 * 1024
"""Largest block recorded or replayed in one go (1.15.1's Archive.Configuration.MAX_BLOCK_LENGTH)."""


class ArchiveConfigurationError(ConfigurationError):
    """An archive setting has a value that cannot be used; the message names the setting."""


_size = parse_size
_duration_ns = parse_duration_ns
_int = parse_int
_bool = parse_bool
_text = parse_text
_threading_mode = choice_parser(*THREADING_MODES)
_setting = setting


@dataclass
class ArchiveContext:
    archive_dir: str = _setting("aeron.archive.dir", _text, "aeron-archive", "path", "archive directory")
    aeron_dir: str = _setting("aeron.dir", _text, "", "path", "the driver's aeron dir (default: AERON_DIR)")
    control_channel: str = _setting(
        "aeron.archive.control.channel", _text, "aeron:udp?endpoint=localhost:8010", "uri", "control requests"
    )
    control_stream_id: int = _setting("aeron.archive.control.stream.id", _int, 10, "int", "control stream")
    local_control_channel: str = _setting(
        "aeron.archive.local.control.channel", _text, "aeron:ipc", "uri", "local control requests"
    )
    local_control_stream_id: int = _setting(
        "aeron.archive.local.control.stream.id", _int, 11, "int", "local control stream"
    )
    recording_events_channel: str = _setting(
        "aeron.archive.recording.events.channel",
        _text,
        "aeron:udp?endpoint=localhost:8030",
        "uri",
        "recording events (started, progress, stopped)",
    )
    recording_events_stream_id: int = _setting(
        "aeron.archive.recording.events.stream.id", _int, 30, "int", "recording events stream"
    )
    control_term_buffer_length: int = _setting(
        "aeron.archive.control.term.buffer.length", _size, 64 * 1024, "bytes", "term length of responses"
    )
    control_mtu_length: int = _setting(
        "aeron.archive.control.mtu.length", _size, 1408, "bytes", "mtu of responses"
    )
    control_term_buffer_sparse: bool = _setting(
        "aeron.archive.control.term.buffer.sparse", _bool, True, "bool", "sparse control log buffers"
    )
    segment_file_length: int = _setting(
        "aeron.archive.segment.file.length",
        _size,
        128 * 1024 * 1024,
        "bytes",
        "segment file length (power of two, 64k..1g)",
    )
    max_concurrent_recordings: int = _setting(
        "aeron.archive.max.concurrent.recordings", _int, 128, "int", "recordings at once"
    )
    max_concurrent_replays: int = _setting(
        "aeron.archive.max.concurrent.replays", _int, 128, "int", "replays at once"
    )
    max_catalog_entries: int = _setting(
        "aeron.archive.max.catalog.entries", _int, DEFAULT_MAX_ENTRIES, "int", "catalog entries"
    )
    connect_timeout_ns: int = _setting(
        "aeron.archive.connect.timeout",
        _duration_ns,
        5_000_000_000,
        "ns",
        "a response or replay publication must connect within this",
    )
    replay_linger_timeout_ns: int = _setting(
        "aeron.archive.replay.linger.timeout",
        _duration_ns,
        5_000_000_000,
        "ns",
        "linger of replay publications without their own linger=",
    )
    file_sync_level: int = _setting(
        "aeron.archive.file.sync.level", _int, 0, "0-2", "segment files: 0 none, 1 data, 2 data+metadata"
    )
    catalog_file_sync_level: int = _setting(
        "aeron.archive.catalog.file.sync.level", _int, 0, "0-2", "catalog: 0 none, 1 data, 2 data+metadata"
    )
    record_checksums: bool = _setting(
        "aeron.archive.record.checksums",
        _bool,
        True,
        "bool",
        "the recorder writes a CRC32C per frame into <id>.crc (verify --checksums, start-up recovery)",
    )
    replay_checksums: bool = _setting(
        "aeron.archive.replay.checksums",
        _bool,
        False,
        "bool",
        "replays check each frame against <id>.crc and stop with an error at a mismatch",
    )
    index_interval_bytes: int = _setting(
        "aeron.archive.index.interval.length",
        _int,
        1024 * 1024,
        "bytes",
        "sidecar index: an entry per this many bytes",
    )
    index_interval_ns: int = _setting(
        "aeron.archive.index.interval",
        _duration_ns,
        10_000_000,
        "ns",
        "sidecar index: an entry per this much time",
    )
    replication_channel: str = _setting(
        "aeron.archive.replication.channel",
        _text,
        "aeron:udp?endpoint=localhost:0",
        "channel",
        "replication: the host the source archive replays and answers to (a free port each time)",
    )
    replication_progress_timeout_ns: int = _setting(
        "aeron.archive.replication.progress.timeout",
        _duration_ns,
        5_000_000_000,
        "ns",
        "replication: a copy behind its source that does not move for this long stops",
    )
    threading_mode: str = _setting(
        "aeron.archive.threading.mode", _threading_mode, "DEDICATED", "mode", "DEDICATED, SHARED or INVOKER"
    )
    idle_max_park_ns: int = _setting(
        "aeron.archive.idle.max.park", _duration_ns, 1_000_000, "ns", "longest idle park of an archive agent"
    )
    delete_archive_on_start: bool = _setting(
        "aeron.archive.dir.delete.on.start", _bool, False, "bool", "empty the archive dir before starting"
    )
    # The driver's file-permission settings, same properties (docs/archive.md section 15): a standalone archive
    # given the driver's -D properties gets the driver's policy; an embedded one takes the driver's for those
    # it leaves unset (driver/archive_launcher.py).
    dir_mode: int | None = _setting(
        "aeron.dir.mode",
        parse_mode,
        None,
        "octal",
        "mode of the archive dir when the archive creates it (default 0700, 0770 with aeron.dir.group)",
    )
    file_mode: int | None = _setting(
        "aeron.file.mode",
        parse_mode,
        None,
        "octal",
        "mode of archive.catalog, archive-mark.dat and segment files (default 0600, 0660 with aeron.dir.group)",
    )
    dir_group: int | None = _setting(
        "aeron.dir.group",
        parse_group,
        None,
        "group",
        "group (name or gid) owning the archive dir and files the archive creates",
    )
    unknown_properties: list[str] = field(default_factory=list)

    @classmethod
    def settings(cls) -> list[Any]:
        return settings_of(cls)

    @classmethod
    def from_sources(
        cls,
        explicit: Mapping[str, Any] | None = None,
        properties: Mapping[str, str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> ArchiveContext:
        """Flags (field names) > -D properties > AERON_ARCHIVE_* (and AERON_DIR) variables > defaults."""
        properties = dict(properties or {})
        try:
            values = resolve_settings(
                cls, dict(explicit or {}), properties, os.environ if environ is None else environ
            )
        except ArchiveConfigurationError:
            raise
        except ConfigurationError as e:
            raise ArchiveConfigurationError(str(e)) from None
        unknown = unknown_properties(cls, properties, "aeron.archive.")
        ctx = cls(**values, unknown_properties=unknown)
        ctx.validate()
        return ctx

    def validate(self) -> None:
        try:
            validate_segment_length(self.segment_file_length)
        except ValueError as e:
            raise ArchiveConfigurationError(f"aeron.archive.segment.file.length: {e}") from None
        for name, value in (
            ("aeron.archive.control.channel", self.control_channel),
            ("aeron.archive.local.control.channel", self.local_control_channel),
            ("aeron.archive.recording.events.channel", self.recording_events_channel),
        ):
            try:
                ChannelUri.parse(value)
            except InvalidChannelError as e:
                raise ArchiveConfigurationError(f"{name}: {e}") from None
        for name, value in (
            ("aeron.archive.max.concurrent.recordings", self.max_concurrent_recordings),
            ("aeron.archive.max.concurrent.replays", self.max_concurrent_replays),
        ):
            if value < 1:
                raise ArchiveConfigurationError(f"{name}={value}: must be at least 1")
        if not 1 <= self.max_catalog_entries <= MAX_ENTRIES:
            raise ArchiveConfigurationError(
                f"aeron.archive.max.catalog.entries={self.max_catalog_entries}: must be in 1..{MAX_ENTRIES}"
            )
        for name, value in (
            ("aeron.archive.file.sync.level", self.file_sync_level),
            ("aeron.archive.catalog.file.sync.level", self.catalog_file_sync_level),
        ):
            if value not in (0, 1, 2):
                raise ArchiveConfigurationError(f"{name}={value}: must be 0, 1 or 2")
        term_length = self.control_term_buffer_length
        if term_length < 64 * 1024 or term_length & (term_length - 1):
            raise ArchiveConfigurationError(
                f"aeron.archive.control.term.buffer.length={term_length}: a power of two of at least 64k"
            )
        if self.control_mtu_length < 64 or self.control_mtu_length % 32:
            raise ArchiveConfigurationError(
                f"aeron.archive.control.mtu.length={self.control_mtu_length}: a multiple of 32 of at least 64"
            )
        if self.index_interval_bytes < 32 or self.index_interval_ns <= 0:
            raise ArchiveConfigurationError(
                "aeron.archive.index.interval.length must be at least 32, aeron.archive.index.interval positive"
            )
        if self.connect_timeout_ns <= 0:
            raise ArchiveConfigurationError("aeron.archive.connect.timeout must be positive")
        if self.replay_linger_timeout_ns < 0:
            raise ArchiveConfigurationError("aeron.archive.replay.linger.timeout must not be negative")
        if not 0 < self.idle_max_park_ns <= 1_000_000:
            raise ArchiveConfigurationError("aeron.archive.idle.max.park must be between 1 ns and 1 ms")

    @property
    def file_permissions(self) -> FilePermissions:
        """Modes and group of what the archive creates, built as the driver builds its own (docs/getting-started.md, "Sharing
        the aeron dir")."""
        return FilePermissions.from_settings(self.dir_group, self.dir_mode, self.file_mode)

    @property
    def connect_timeout_ms(self) -> int:
        return self.connect_timeout_ns // 1_000_000
