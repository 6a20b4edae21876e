"""Aeron 1.15.1 channel URIs (docs/uri.md §1, §2, §5): grammar, parameter names and a string builder.

Grammar, exactly as ``io.aeron.ChannelUri.parse`` of 1.15.1::

    [aeron-spy:]aeron:<media>[?<key>=<value>(|<key>=<value>)*]

- media is everything up to ``?`` or the end; a ``:`` inside it is an error;
- a key runs to the first ``=``, a value to the next ``|`` or the end: no escaping, no URL decoding, so a value
  may contain ``=`` and ``:`` (and a key may even contain ``|``, as in Java);
- a later duplicate key overrides an earlier one; an empty value is allowed; input that ends inside a key
  (``aeron:udp?``, a trailing ``|``, ``...|mtu``) is an error.

The one thing added to Java's grammar is the media check: the driver only serves ``udp`` and ``ipc`` (1.15.1
reports any other media later, when ``UdpChannel`` rejects it), so :meth:`ChannelUri.parse` rejects other
media by default; pass ``allowed_media=None`` for the bare grammar.

Errors are :class:`InvalidChannelError`, whose message is ``"<uri>: <what is wrong>"``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field

from driver.protocol.control_protocol import ErrorCode
from driver.util.java_numbers import NumberFormatError, parse_java_int

# --- names (CommonContext / ChannelUri of 1.15.1) --------------------------------------------------------

AERON_SCHEME = "aeron"
AERON_PREFIX = "aeron:"
SPY_QUALIFIER = "aeron-spy"
SPY_PREFIX = "aeron-spy:"
UDP_MEDIA = "udp"
IPC_MEDIA = "ipc"
IPC_CHANNEL = "aeron:ipc"
SUPPORTED_MEDIA = (UDP_MEDIA, IPC_MEDIA)

ENDPOINT_PARAM_NAME = "endpoint"
INTERFACE_PARAM_NAME = "interface"
MDC_CONTROL_PARAM_NAME = "control"
MDC_CONTROL_MODE_PARAM_NAME = "control-mode"
MDC_CONTROL_MODE_MANUAL = "manual"
MDC_CONTROL_MODE_DYNAMIC = "dynamic"
TTL_PARAM_NAME = "ttl"
MTU_LENGTH_PARAM_NAME = "mtu"
TERM_LENGTH_PARAM_NAME = "term-length"
INITIAL_TERM_ID_PARAM_NAME = "init-term-id"
TERM_ID_PARAM_NAME = "term-id"
TERM_OFFSET_PARAM_NAME = "term-offset"
SESSION_ID_PARAM_NAME = "session-id"
LINGER_PARAM_NAME = "linger"
RELIABLE_STREAM_PARAM_NAME = "reliable"
SPARSE_PARAM_NAME = "sparse"
TAGS_PARAM_NAME = "tags"
ALIAS_PARAM_NAME = "alias"

# --- keys Aeron's driver learned after 1.15.1 (docs/uri.md section 6) ---------------------------------------

EOS_PARAM_NAME = "eos"
TETHER_PARAM_NAME = "tether"
GROUP_PARAM_NAME = "group"
REJOIN_PARAM_NAME = "rejoin"
CONGESTION_CONTROL_PARAM_NAME = "cc"
FLOW_CONTROL_PARAM_NAME = "fc"
GROUP_TAG_PARAM_NAME = "gtag"
SPIES_SIMULATE_CONNECTION_PARAM_NAME = "ssc"
ATS_PARAM_NAME = "ats"
SOCKET_SNDBUF_PARAM_NAME = "so-sndbuf"
SOCKET_RCVBUF_PARAM_NAME = "so-rcvbuf"
RECEIVER_WINDOW_LENGTH_PARAM_NAME = "rcv-wnd"
MEDIA_RCV_TIMESTAMP_OFFSET_PARAM_NAME = "media-rcv-ts-offset"
CHANNEL_RCV_TIMESTAMP_OFFSET_PARAM_NAME = "channel-rcv-ts-offset"
CHANNEL_SND_TIMESTAMP_OFFSET_PARAM_NAME = "channel-snd-ts-offset"
RESPONSE_ENDPOINT_PARAM_NAME = "response-endpoint"
RESPONSE_CORRELATION_ID_PARAM_NAME = "response-correlation-id"
NAK_DELAY_PARAM_NAME = "nak-delay"
UNTETHERED_WINDOW_LIMIT_TIMEOUT_PARAM_NAME = "untethered-window-limit-timeout"
UNTETHERED_LINGER_TIMEOUT_PARAM_NAME = "untethered-linger-timeout"
UNTETHERED_RESTING_TIMEOUT_PARAM_NAME = "untethered-resting-timeout"
MAX_RESEND_PARAM_NAME = "max-resend"
STREAM_ID_PARAM_NAME = "stream-id"
PUBLICATION_WINDOW_LENGTH_PARAM_NAME = "pub-wnd"
CONTROL_MODE_RESPONSE = "response"

MODERN_PARAM_NAMES = (
    EOS_PARAM_NAME,
    TETHER_PARAM_NAME,
    GROUP_PARAM_NAME,
    REJOIN_PARAM_NAME,
    CONGESTION_CONTROL_PARAM_NAME,
    FLOW_CONTROL_PARAM_NAME,
    GROUP_TAG_PARAM_NAME,
    SPIES_SIMULATE_CONNECTION_PARAM_NAME,
    ATS_PARAM_NAME,
    SOCKET_SNDBUF_PARAM_NAME,
    SOCKET_RCVBUF_PARAM_NAME,
    RECEIVER_WINDOW_LENGTH_PARAM_NAME,
    MEDIA_RCV_TIMESTAMP_OFFSET_PARAM_NAME,
    CHANNEL_RCV_TIMESTAMP_OFFSET_PARAM_NAME,
    CHANNEL_SND_TIMESTAMP_OFFSET_PARAM_NAME,
    RESPONSE_ENDPOINT_PARAM_NAME,
    RESPONSE_CORRELATION_ID_PARAM_NAME,
    NAK_DELAY_PARAM_NAME,
    UNTETHERED_WINDOW_LIMIT_TIMEOUT_PARAM_NAME,
    UNTETHERED_LINGER_TIMEOUT_PARAM_NAME,
    UNTETHERED_RESTING_TIMEOUT_PARAM_NAME,
    MAX_RESEND_PARAM_NAME,
    STREAM_ID_PARAM_NAME,
    PUBLICATION_WINDOW_LENGTH_PARAM_NAME,
)
"""Every key a driver of today's Aeron reads that 1.15.1's did not."""

HONOURED_MODERN_PARAM_NAMES = frozenset(
    {
        STREAM_ID_PARAM_NAME,
        SOCKET_SNDBUF_PARAM_NAME,
        SOCKET_RCVBUF_PARAM_NAME,
        RECEIVER_WINDOW_LENGTH_PARAM_NAME,
        TETHER_PARAM_NAME,
        UNTETHERED_WINDOW_LIMIT_TIMEOUT_PARAM_NAME,
        UNTETHERED_LINGER_TIMEOUT_PARAM_NAME,
        UNTETHERED_RESTING_TIMEOUT_PARAM_NAME,
        # read by clients only (the client's response subscription); Aeron's driver ignores it too
        RESPONSE_ENDPOINT_PARAM_NAME,
        RESPONSE_CORRELATION_ID_PARAM_NAME,  # response channels over UDP (driver/protocol/response_channel.py)
    }
)
"""The modern keys this driver gives their meaning (or, as Aeron's driver, leaves to the client)."""

UNSUPPORTED_PARAM_NAMES = tuple(name for name in MODERN_PARAM_NAMES if name not in HONOURED_MODERN_PARAM_NAMES)
"""Modern keys refused with an error rather than silently ignored (docs/uri.md section 6)."""

TAG_PREFIX = "tag:"
INVALID_TAG = -1
"""``Aeron.NULL_VALUE``: the reserved tag value meaning "no tag"."""

ALL_PARAM_NAMES = (
    ENDPOINT_PARAM_NAME,
    INTERFACE_PARAM_NAME,
    MDC_CONTROL_PARAM_NAME,
    MDC_CONTROL_MODE_PARAM_NAME,
    TTL_PARAM_NAME,
    MTU_LENGTH_PARAM_NAME,
    TERM_LENGTH_PARAM_NAME,
    INITIAL_TERM_ID_PARAM_NAME,
    TERM_ID_PARAM_NAME,
    TERM_OFFSET_PARAM_NAME,
    SESSION_ID_PARAM_NAME,
    LINGER_PARAM_NAME,
    RELIABLE_STREAM_PARAM_NAME,
    SPARSE_PARAM_NAME,
    TAGS_PARAM_NAME,
    ALIAS_PARAM_NAME,
)
"""Every key the 1.15.1 driver or its builders know (uri.md §2)."""

BUILDER_PARAM_ORDER = (
    TAGS_PARAM_NAME,
    ENDPOINT_PARAM_NAME,
    INTERFACE_PARAM_NAME,
    MDC_CONTROL_PARAM_NAME,
    MDC_CONTROL_MODE_PARAM_NAME,
    MTU_LENGTH_PARAM_NAME,
    TERM_LENGTH_PARAM_NAME,
    INITIAL_TERM_ID_PARAM_NAME,
    TERM_ID_PARAM_NAME,
    TERM_OFFSET_PARAM_NAME,
    SESSION_ID_PARAM_NAME,
    TTL_PARAM_NAME,
    RELIABLE_STREAM_PARAM_NAME,
    LINGER_PARAM_NAME,
    ALIAS_PARAM_NAME,
    SPARSE_PARAM_NAME,
)
"""Key order of ``ChannelUriStringBuilder.build()`` in 1.15.1 (uri.md §5)."""


class InvalidChannelError(ValueError):
    """A channel a client asked for that the driver cannot serve; the client gets an ON_ERROR.

    ``uri`` is the channel string as given, ``reason`` what is wrong with it, and ``error_code`` the code
    Aeron 1.15.1 sends for this kind of failure: INVALID_CHANNEL (1) for grammar, address and UDP channel
    errors (``UdpChannel.parse`` wraps them in ``InvalidChannelException``), GENERIC_ERROR (0) for
    publication/subscription parameter errors (``PublicationParams`` throws plain exceptions).
    """

    def __init__(self, uri: str, reason: str, *, error_code: ErrorCode = ErrorCode.INVALID_CHANNEL) -> None:
        super().__init__(f"{uri}: {reason}")
        self.uri = uri
        self.reason = reason
        self.error_code = error_code


# --- the URI ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class ChannelUri:
    """A parsed channel URI. Equality ignores ``original`` (the text it was parsed from)."""

    prefix: str
    media: str
    params: dict[str, str] = field(default_factory=dict)
    original: str = field(default="", compare=False)

    @classmethod
    def parse(cls, text: str, *, allowed_media: Collection[str] | None = SUPPORTED_MEDIA) -> ChannelUri:
        position = 0
        prefix = ""
        if text.startswith(SPY_PREFIX):
            prefix = SPY_QUALIFIER
            position = len(SPY_PREFIX)
        if not text.startswith(AERON_PREFIX, position):
            expected = "'aeron:' after 'aeron-spy:'" if prefix else "'aeron:' (or 'aeron-spy:aeron:')"
            raise InvalidChannelError(
                text,
                f"a channel URI must start with {expected}, found {text[position : position + 6]!r} "
                f"(at offset {position})",
            )
        position += len(AERON_PREFIX)

        query = text.find("?", position)
        media_end = len(text) if query < 0 else query
        media = text[position:media_end]
        colon = media.find(":")
        if colon >= 0:
            raise InvalidChannelError(
                text, f"':' is not allowed in the media name {media!r} (at offset {position + colon})"
            )
        if allowed_media is not None and media not in allowed_media:
            raise InvalidChannelError(
                text, f"media {media!r} is not supported: use {' or '.join(allowed_media)}"
            )

        params: dict[str, str] = {}
        if query >= 0:
            start = query + 1
            length = len(text)
            while True:
                equals = text.find("=", start)
                if equals < 0:
                    key = text[start:]
                    if key:
                        reason = f"parameter {key!r} has no '='"
                    elif start == query + 1:
                        reason = "'?' is not followed by a parameter"
                    else:
                        reason = "'|' is not followed by a parameter"
                    raise InvalidChannelError(text, f"{reason} (at offset {length})")
                bar = text.find("|", equals + 1)
                value_end = length if bar < 0 else bar
                params[text[start:equals]] = text[equals + 1 : value_end]
                if bar < 0:
                    break
                start = bar + 1

        return cls(prefix, media, params, text)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.params.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self.params

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.params.items())

    @property
    def is_ipc(self) -> bool:
        return self.media == IPC_MEDIA

    @property
    def is_udp(self) -> bool:
        return self.media == UDP_MEDIA

    @property
    def is_spy(self) -> bool:
        return self.prefix == SPY_QUALIFIER

    @property
    def tags(self) -> tuple[str, ...]:
        """The ``tags`` value split on ``,`` (as ``ChannelUri.splitTags``), or ``()`` when absent."""
        value = self.params.get(TAGS_PARAM_NAME)
        return () if value is None else tuple(value.split(","))

    @property
    def channel_tag(self) -> str | None:
        tags = self.tags
        return tags[0] if tags else None

    @property
    def entity_tag(self) -> str | None:
        tags = self.tags
        return tags[1] if len(tags) > 1 else None

    def __str__(self) -> str:
        head = f"{self.prefix}:{AERON_PREFIX}" if self.prefix else AERON_PREFIX
        if not self.params:
            return f"{head}{self.media}"
        return f"{head}{self.media}?" + "|".join(f"{k}={v}" for k, v in self.params.items())


def refuse_unsupported_params(uri: ChannelUri) -> None:
    """Refuse a key today's Aeron gives a meaning that this driver does not, rather than ignore it silently;
    keys no Aeron driver reads (``alias``, typos) stay ignored, as Aeron ignores them."""
    for name in UNSUPPORTED_PARAM_NAMES:
        if name in uri.params:
            raise InvalidChannelError(
                uri.original or str(uri), f"parameter {name!r} is not supported by this driver"
            )
    mode = uri.params.get(MDC_CONTROL_MODE_PARAM_NAME)
    if mode == CONTROL_MODE_RESPONSE and CONTROL_MODE_RESPONSE not in SUPPORTED_CONTROL_MODES:
        raise InvalidChannelError(
            uri.original or str(uri), f"{MDC_CONTROL_MODE_PARAM_NAME}={mode} is not supported by this driver"
        )


SUPPORTED_CONTROL_MODES = frozenset({MDC_CONTROL_MODE_MANUAL, MDC_CONTROL_MODE_DYNAMIC, CONTROL_MODE_RESPONSE})


SUBSCRIPTION_ONLY_PARAM_NAMES = (
    UNTETHERED_WINDOW_LIMIT_TIMEOUT_PARAM_NAME,
    UNTETHERED_LINGER_TIMEOUT_PARAM_NAME,
    UNTETHERED_RESTING_TIMEOUT_PARAM_NAME,
)
"""Honoured on subscriptions; Aeron also reads them on a publication (for its subscribers), this driver not."""


def refuse_subscription_only_params(uri: ChannelUri) -> None:
    for name in SUBSCRIPTION_ONLY_PARAM_NAMES:
        if name in uri.params:
            raise InvalidChannelError(
                uri.original or str(uri),
                f"parameter {name!r} is not supported on a publication by this driver: "
                "give it on the tether=false subscription",
            )


def check_publication_stream_id(uri: ChannelUri, stream_id: int) -> None:
    """A publication's ``stream-id``, when given, must be the stream id of the command."""
    text = uri.params.get(STREAM_ID_PARAM_NAME)
    if text is None:
        return
    try:
        configured = parse_java_int(STREAM_ID_PARAM_NAME, text)
    except NumberFormatError as ex:
        raise InvalidChannelError(uri.original or str(uri), str(ex)) from None
    if configured != stream_id:
        raise InvalidChannelError(
            uri.original or str(uri),
            f"{STREAM_ID_PARAM_NAME}={configured} does not match the publication's stream id {stream_id}",
        )


def is_tagged(value: str) -> bool:
    """``session-id=tag:<n>`` style value (ChannelUri.isTagged)."""
    return value.startswith(TAG_PREFIX)


# --- builder ---------------------------------------------------------------------------------------------

_BUILDER_KEYS = {name.replace("-", "_"): name for name in BUILDER_PARAM_ORDER} | {
    name: name for name in BUILDER_PARAM_ORDER
}


def build_channel(media: str, *, prefix: str = "", **params: object) -> str:
    """Build a channel string with keys in ``ChannelUriStringBuilder`` order (uri.md §5).

    Keys are given as Python names (``term_length=65536``, ``control_mode="manual"``) or, through ``**{}``,
    as the URI names. ``None`` values are left out, booleans become ``true``/``false``, anything else is
    ``str()``-ed. A tagged session id is passed as the string ``"tag:<n>"``. Unlike Java's builder, ``linger``
    is written as given (1.15.1's builder truncates it to a 32-bit int, which turns 5 s into ~0.7 s).
    """
    values: dict[str, str] = {}
    for name, value in params.items():
        key = _BUILDER_KEYS.get(name)
        if key is None:
            raise TypeError(
                f"build_channel() got an unknown parameter {name!r}: use one of {list(_BUILDER_KEYS)}"
            )
        if value is None:
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        if "|" in text:
            raise ValueError(f"build_channel(): value {text!r} of {key!r} contains '|', which ends a value")
        values[key] = text
    head = f"{prefix}:{AERON_PREFIX}" if prefix else AERON_PREFIX
    body = "|".join(f"{key}={values[key]}" for key in BUILDER_PARAM_ORDER if key in values)
    return f"{head}{media}?{body}" if body else f"{head}{media}"
