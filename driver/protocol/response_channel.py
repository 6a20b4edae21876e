"""Response channels (today's Aeron, 1.44+; docs/uri.md section 6): what a channel asks for and the checks.

A client opens a response subscription (``control-mode=response|control=<server>``), then a request
publication to the server naming that subscription (``response-correlation-id=<its registration id>``).
The server's image of that publication answers through a response publication
(``control-mode=response|control=<server>|response-correlation-id=<the image's correlation id>``) that
sends only to the client that opened the path. This module holds the parsing and the rules; the conductor,
sender and receiver move the frames (docs/wire.md, RSP_SETUP).
"""

from __future__ import annotations

from dataclasses import dataclass

from driver.protocol.channel_uri import (
    CONTROL_MODE_RESPONSE,
    MDC_CONTROL_MODE_PARAM_NAME,
    MDC_CONTROL_PARAM_NAME,
    RESPONSE_CORRELATION_ID_PARAM_NAME,
    ChannelUri,
    InvalidChannelError,
)
from driver.protocol.frames import SEND_RESPONSE_SETUP_FLAG
from driver.util.java_numbers import NumberFormatError, parse_java_long

PROTOTYPE_CORRELATION_ID = "prototype"
"""Aeron's placeholder for channels the Archive completes later; this driver has no use for it."""


@dataclass(frozen=True, slots=True)
class ResponseParams:
    is_response: bool
    """``control-mode=response``: a response subscription, or a response publication."""
    correlation_id: int | None
    """``response-correlation-id``: a request publication names its response subscription's registration
    id, a response publication the correlation id of the image it answers. None when absent."""

    @property
    def is_request(self) -> bool:
        """A publication that asks the server's driver for a response channel."""
        return not self.is_response and self.correlation_id is not None

    @property
    def setup_flags(self) -> int:
        """The flags of the publication's SETUP frames (0 for all but request publications, as in 1.15.1)."""
        return SEND_RESPONSE_SETUP_FLAG if self.is_request else 0


NO_RESPONSE = ResponseParams(False, None)


def _text(uri: ChannelUri) -> str:
    return uri.original or str(uri)


def response_params(uri: ChannelUri) -> ResponseParams:
    """Read ``control-mode=response`` and ``response-correlation-id``; a bad value raises InvalidChannelError."""
    is_response = uri.params.get(MDC_CONTROL_MODE_PARAM_NAME) == CONTROL_MODE_RESPONSE
    text = uri.params.get(RESPONSE_CORRELATION_ID_PARAM_NAME)
    correlation_id = None
    if text is not None:
        if text == PROTOTYPE_CORRELATION_ID:
            raise InvalidChannelError(
                _text(uri), f"{RESPONSE_CORRELATION_ID_PARAM_NAME}={text} is not supported by this driver"
            )
        try:
            value = parse_java_long(RESPONSE_CORRELATION_ID_PARAM_NAME, text)
        except NumberFormatError:
            value = -2
        if value < -1:
            raise InvalidChannelError(
                _text(uri), f"{RESPONSE_CORRELATION_ID_PARAM_NAME}={text}: must be a number of -1 or more"
            )
        correlation_id = None if value == -1 else value
    if is_response and MDC_CONTROL_PARAM_NAME not in uri.params:
        raise InvalidChannelError(
            _text(uri),
            f"{MDC_CONTROL_MODE_PARAM_NAME}={CONTROL_MODE_RESPONSE} needs {MDC_CONTROL_PARAM_NAME}=host:port "
            "(the server's response address)",
        )
    return ResponseParams(is_response, correlation_id)


def refuse_response_params(uri: ChannelUri, what: str) -> None:
    """Response channels are UDP only here (Aeron also has them over IPC)."""
    if uri.params.get(MDC_CONTROL_MODE_PARAM_NAME) == CONTROL_MODE_RESPONSE:
        raise InvalidChannelError(
            _text(uri), f"{MDC_CONTROL_MODE_PARAM_NAME}={CONTROL_MODE_RESPONSE} is not supported on {what} here"
        )
    if RESPONSE_CORRELATION_ID_PARAM_NAME in uri.params:
        raise InvalidChannelError(
            _text(uri), f"{RESPONSE_CORRELATION_ID_PARAM_NAME} is not supported on {what} here"
        )


def response_publication_error(params: ResponseParams, image_flags: int | None) -> str | None:
    """Why a response publication cannot answer the image its ``response-correlation-id`` names (its SETUP
    flags, None when no such image), or None when it can."""
    if params.correlation_id is None:
        return (
            f"{MDC_CONTROL_MODE_PARAM_NAME}={CONTROL_MODE_RESPONSE} on a publication needs "
            f"{RESPONSE_CORRELATION_ID_PARAM_NAME}=<the correlation id of the image it answers>"
        )
    if image_flags is None:
        return f"{RESPONSE_CORRELATION_ID_PARAM_NAME}={params.correlation_id}: no image has that correlation id"
    if not image_flags & SEND_RESPONSE_SETUP_FLAG:
        return (
            f"{RESPONSE_CORRELATION_ID_PARAM_NAME}={params.correlation_id}: that image's publication did not "
            "ask for a response channel"
        )
    return None
