"""The API's request and response models (docs/service.md section 2): pydantic validates every request, so a bad
field is a 422 naming it, and the same classes make /openapi.json."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator, model_validator

from driver.protocol.channel_uri import ChannelUri


class _Strict(BaseModel):
    """Request models: unknown fields refused and no coercion (``true`` or ``"99"`` is not a stream id, ``"0.1"``
    not a duration); an integer is still a number."""

    model_config = ConfigDict(extra="forbid", strict=True)


def _channel(value: str | None) -> str | None:
    if value is not None:
        try:
            ChannelUri.parse(value)
        except ValueError as e:
            raise ValueError(f"not an Aeron channel: {e}") from None
    return value


CHANNEL_PATTERN = r"^aeron(-spy:aeron)?:"  # in the schema only: the validator's message says more
CHANNEL_EXAMPLES = ["aeron:ipc", "aeron:udp?endpoint=127.0.0.1:40123"]


class StreamSpec(_Strict):
    channel: str = Field(
        min_length=1,
        max_length=1024,
        description="an Aeron channel, e.g. aeron:ipc (the URI grammar of docs/uri.md is checked: 422)",
        json_schema_extra={"pattern": CHANNEL_PATTERN, "examples": CHANNEL_EXAMPLES},
    )
    stream_id: int = Field(ge=-(2**31), lt=2**31)

    _check_channel = field_validator("channel")(_channel)


class Filter(_Strict):
    """Each non-empty list is one condition; an image matches a filter when it meets all of its conditions.
    Channels and source identities match as substrings, stream ids exactly."""

    stream_ids: list[int] = Field(default_factory=list, max_length=1024)
    channels: list[str] = Field(default_factory=list, max_length=1024)
    source_identities: list[str] = Field(default_factory=list, max_length=1024)

    def is_empty(self) -> bool:
        return not (self.stream_ids or self.channels or self.source_identities)

    def matches(self, channel: str, stream_id: int, source_identity: str) -> bool:
        return (
            (not self.stream_ids or stream_id in self.stream_ids)
            and (not self.channels or any(c in channel for c in self.channels))
            and (not self.source_identities or any(s in source_identity for s in self.source_identities))
        )


class RecordRequest(_Strict):
    streams: list[StreamSpec] = Field(min_length=1, max_length=256)
    duration_s: float | None = Field(default=None, gt=0, le=7 * 24 * 3600)
    max_messages: int | None = Field(default=None, ge=1)
    name: str | None = Field(default=None, min_length=1, max_length=200)
    include: Filter | None = None
    exclude: Filter | None = None

    @model_validator(mode="after")
    def _a_limit(self) -> RecordRequest:
        if self.duration_s is None and self.max_messages is None:
            raise ValueError("duration_s or max_messages is required (at least one)")
        return self

    def wants_stream(self, channel: str, stream_id: int) -> bool:
        """Whether the filters leave any image of this stream in (source identities are known per image)."""
        include, exclude = self.include, self.exclude
        if include is not None and not include.model_copy(update={"source_identities": []}).matches(
            channel, stream_id, ""
        ):
            return False
        return (
            exclude is None
            or bool(exclude.source_identities)
            or not ((exclude.stream_ids or exclude.channels) and exclude.matches(channel, stream_id, ""))
        )

    def wants(self, channel: str, stream_id: int, source_identity: str) -> bool:
        include, exclude = self.include, self.exclude
        if (
            include is not None
            and not include.is_empty()
            and not include.matches(channel, stream_id, source_identity)
        ):
            return False
        return (
            exclude is None or exclude.is_empty() or not exclude.matches(channel, stream_id, source_identity)
        )


class RecordStatus(BaseModel):
    state: str = Field(description="idle, running, stopping, done, cancelled or failed")
    running: bool
    dataset_id: str | None = None
    name: str | None = None
    messages: int = 0
    bytes: int = 0
    duration_s: float = 0.0
    error: str | None = None


class TimeRange(_Strict):
    """Seconds from the data set's start (its recording's start), or absolute times: ISO 8601 with a zone, e.g.
    ``2026-11-27T10:00:00.250Z``; each end given one way at most."""

    start_s: float = Field(default=0.0, ge=0)
    end_s: float | None = Field(default=None, gt=0)
    start: AwareDatetime | None = Field(
        default=None, strict=False, description="absolute start (UTC or a zone)"
    )
    end: AwareDatetime | None = Field(default=None, strict=False, description="absolute end (UTC or a zone)")

    @field_validator("start", "end", mode="before")
    @classmethod
    def _iso_text(cls, value: object) -> object:
        if value is not None and not isinstance(value, str):
            raise ValueError("an ISO 8601 date and time with a zone, e.g. 2026-11-27T10:00:00Z")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> TimeRange:
        if "start_s" in self.model_fields_set and self.start is not None:
            raise ValueError("give start_s or start, not both")
        if self.end_s is not None and self.end is not None:
            raise ValueError("give end_s or end, not both")
        if self.end_s is not None and self.end_s <= self.start_s:
            raise ValueError("end_s must be after start_s")
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise ValueError("end must be after start")
        return self

    def bounds_ns(self, origin_ns: int) -> tuple[int, int | None]:
        """(start, end) in epoch ns; relative times count from ``origin_ns`` (the data set's start)."""
        start = _epoch_ns(self.start) if self.start is not None else origin_ns + round(self.start_s * 1e9)
        if self.end is not None:
            return start, _epoch_ns(self.end)
        return start, None if self.end_s is None else origin_ns + round(self.end_s * 1e9)


def _epoch_ns(moment: datetime) -> int:
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


class ReplayRequest(_Strict):
    dataset_id: str = Field(min_length=1, max_length=64)
    streams: list[StreamSpec] | None = Field(
        default=None, description="replay only the recordings of these recorded channel/stream pairs"
    )
    time_range: TimeRange | None = None
    channel: str | None = Field(
        default=None,
        min_length=1,
        max_length=1024,
        description="target channel",
        json_schema_extra={"pattern": CHANNEL_PATTERN, "examples": CHANNEL_EXAMPLES},
    )
    stream_id: int | None = Field(default=None, ge=-(2**31), lt=2**31, description="target stream")
    rate: float = Field(default=1.0, gt=0, le=1000, description="relative to the recorded timing")
    repeat: int = Field(default=1, ge=1, le=1_000_000)
    max_idle_gap_s: float | None = Field(default=None, ge=0)

    _check_channel = field_validator("channel")(_channel)


class ReplayStatus(BaseModel):
    state: str = Field(description="idle, running, done, cancelled or failed")
    running: bool
    replay_id: str | None = Field(default=None, description="this replay's id (/replays/{replay_id})")
    dataset_id: str | None = None
    messages: int = 0
    bytes: int = 0
    duration_s: float = 0.0
    repeats_done: int = 0
    repeat: int = 0
    error: str | None = None


class RecordingInfo(BaseModel):
    recording_id: int
    source_channel: str
    source_stream_id: int
    source_session_id: int
    source_identity: str
    start_position: int
    stop_position: int
    start_time_ns: int
    messages: int
    bytes: int


class DataSet(BaseModel):
    """The manifest, ``<archive dir>/datasets/<id>.json``."""

    id: str
    name: str
    created: str
    streams: list[StreamSpec]
    recordings: list[RecordingInfo]
    messages: int
    bytes: int
    start_time_ns: int
    end_time_ns: int
    span_s: float
    imported_from: str | None = None


class ReplayList(BaseModel):
    replays: list[ReplayStatus]


class DataSetList(BaseModel):
    datasets: list[DataSet]


class ServiceStatus(BaseModel):
    """Both jobs in one answer, for pages and dashboards that poll."""

    record: RecordStatus
    replay: ReplayStatus


class ErrorBody(BaseModel):
    error: str
    detail: list[dict] | None = None


API = "/api/v1"
ERRORS = {status: {"model": ErrorBody} for status in (400, 401, 404, 405, 409, 411, 413, 422, 507)}
"""The error answers every route may give, for /openapi.json (app.py's handlers make each one ErrorBody)."""
