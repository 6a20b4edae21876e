"""Channel strings the archive derives from what clients send (docs/archive.md sections 5, 6 and 8)."""

from __future__ import annotations

from driver.protocol.channel_uri import (
    ALIAS_PARAM_NAME,
    ENDPOINT_PARAM_NAME,
    INTERFACE_PARAM_NAME,
    MDC_CONTROL_PARAM_NAME,
    SESSION_ID_PARAM_NAME,
    TAGS_PARAM_NAME,
    ChannelUri,
    build_channel,
)

STRIPPED_PARAMS = (
    ENDPOINT_PARAM_NAME,
    INTERFACE_PARAM_NAME,
    MDC_CONTROL_PARAM_NAME,
    TAGS_PARAM_NAME,
    ALIAS_PARAM_NAME,
    SESSION_ID_PARAM_NAME,
)
KEY_PARAMS = (ENDPOINT_PARAM_NAME, INTERFACE_PARAM_NAME, MDC_CONTROL_PARAM_NAME, TAGS_PARAM_NAME)


def stripped_params(uri: ChannelUri) -> dict[str, str]:
    """The parameters a stripped channel keeps: endpoint, interface, control, tags, alias, session-id."""
    return {name: value for name in STRIPPED_PARAMS if (value := uri.get(name)) is not None}


def strip_channel(uri: ChannelUri, **extra: object) -> str:
    """``uri`` stripped, plus ``extra`` parameters, in ChannelUriStringBuilder key order (docs/uri.md section 5)."""
    return build_channel(uri.media, **stripped_params(uri), **extra)


def recording_key(stream_id: int, uri: ChannelUri) -> str:
    """``<streamId>:<media>?endpoint=…|interface=…|control=…|tags=…``: what one recording subscription is for."""
    params = "|".join(f"{name}={uri.get(name)}" for name in KEY_PARAMS if uri.get(name) is not None)
    return f"{stream_id}:{uri.media}?{params}" if params else f"{stream_id}:{uri.media}"
