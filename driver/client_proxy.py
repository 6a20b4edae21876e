"""Driver -> clients events, transmitted on the to-clients broadcast buffer."""

from __future__ import annotations

from driver.concurrent.broadcast import BroadcastTransmitter
from driver.protocol import control_protocol as cp
from driver.util.bit_util import align

# The Java client copies each event into a 4 KiB scratch buffer and closes itself on a longer one
# (docs/ringbuffers.md section 2): no event body may be longer.
MAX_EVENT_LENGTH = 4096
# Fixed parts of the events that carry strings (docs/commands.md section 3): what is left of
# MAX_EVENT_LENGTH bounds the strings.
_ERROR_HEADER_LENGTH = 16  # offending correlation id, error code, message length
PUBLICATION_READY_FIXED_LENGTH = 36  # 2 int64, 5 int32 (the last the log file name's length)
IMAGE_READY_FIXED_LENGTH = 36  # int64, 2 int32, int64, 2 int32, then the padded name, int32 source length
IMAGE_MESSAGE_FIXED_LENGTH = 24  # 2 int64, 2 int32 (the last the channel's length)


class EventTooLongError(ValueError):
    """An event the clients could not receive: the driver refuses the request instead of sending it."""


def max_channel_length(log_file_name_length: int) -> int:
    """The longest channel (in bytes) whose events all fit MAX_EVENT_LENGTH, for a log file name of
    ``log_file_name_length`` bytes: ON_AVAILABLE_IMAGE of an IPC publication carries both the name and
    the channel (as source identity), ON_UNAVAILABLE_IMAGE the channel, ON_PUBLICATION_READY the name.
    Below 0 when even the name alone does not fit (an aeron dir path that is far too long)."""
    if PUBLICATION_READY_FIXED_LENGTH + log_file_name_length > MAX_EVENT_LENGTH:
        return -1
    return min(
        MAX_EVENT_LENGTH - IMAGE_READY_FIXED_LENGTH - align(log_file_name_length, 4),
        MAX_EVENT_LENGTH - IMAGE_MESSAGE_FIXED_LENGTH,
    )


class ClientProxy:
    def __init__(self, transmitter: BroadcastTransmitter) -> None:
        self._transmitter = transmitter

    @property
    def capacity(self) -> int:
        """Bytes of the to-clients broadcast buffer: what a client that stops reading can fall behind by."""
        return self._transmitter.capacity

    def _send(self, event: cp.Event, body: bytes) -> int:
        if len(body) > MAX_EVENT_LENGTH:
            # Sending it would make every client fail ("lost driver events"): refuse, as a bug of ours,
            # the caller's checks (channel length, source identity) should have caught it.
            raise EventTooLongError(
                f"{event.name} of {len(body)} bytes exceeds the {MAX_EVENT_LENGTH}-byte limit of what "
                "clients can receive; it was not sent"
            )
        self._transmitter.transmit(event, body)
        return len(body)

    def on_error(self, offending_correlation_id: int, code: int, message: str) -> int:
        """Returns the bytes transmitted (the error budget counts them)."""
        data = message.encode("utf-8", "replace")[: MAX_EVENT_LENGTH - _ERROR_HEADER_LENGTH]
        return self._send(
            cp.Event.ON_ERROR, cp.encode_error(offending_correlation_id, code, data.decode("utf-8", "ignore"))
        )

    def on_operation_succeeded(self, correlation_id: int) -> None:
        self._send(cp.Event.ON_OPERATION_SUCCESS, cp.encode_operation_succeeded(correlation_id))

    def on_counter_ready(self, correlation_id: int, counter_id: int) -> None:
        self._send(cp.Event.ON_COUNTER_READY, cp.encode_counter_update(correlation_id, counter_id))

    def on_unavailable_counter(self, registration_id: int, counter_id: int) -> None:
        self._send(cp.Event.ON_UNAVAILABLE_COUNTER, cp.encode_counter_update(registration_id, counter_id))

    def on_client_timeout(self, client_id: int) -> None:
        self._send(cp.Event.ON_CLIENT_TIMEOUT, cp.encode_client_timeout(client_id))

    def on_publication_ready(
        self,
        correlation_id: int,
        registration_id: int,
        session_id: int,
        stream_id: int,
        publication_limit_id: int,
        channel_status_id: int,
        log_file_name: str,
        is_exclusive: bool,
    ) -> None:
        event = cp.Event.ON_EXCLUSIVE_PUBLICATION_READY if is_exclusive else cp.Event.ON_PUBLICATION_READY
        self._send(
            event,
            cp.encode_publication_ready(
                correlation_id,
                registration_id,
                session_id,
                stream_id,
                publication_limit_id,
                channel_status_id,
                log_file_name,
            ),
        )

    def on_subscription_ready(self, correlation_id: int, channel_status_id: int) -> None:
        self._send(
            cp.Event.ON_SUBSCRIPTION_READY, cp.encode_subscription_ready(correlation_id, channel_status_id)
        )

    def on_available_image(
        self,
        correlation_id: int,
        session_id: int,
        stream_id: int,
        subscription_registration_id: int,
        subscriber_position_id: int,
        log_file_name: str,
        source_identity: str,
    ) -> None:
        # A network image's source identity (host:port) is ours to format: cut to what fits, so that no
        # address form can make the event too long. IPC channels are checked before they are accepted.
        room = MAX_EVENT_LENGTH - IMAGE_READY_FIXED_LENGTH - align(len(log_file_name), 4)
        if len(source_identity) > room:
            source_identity = source_identity[: max(0, room)]
        self._send(
            cp.Event.ON_AVAILABLE_IMAGE,
            cp.encode_image_ready(
                correlation_id,
                session_id,
                stream_id,
                subscription_registration_id,
                subscriber_position_id,
                log_file_name,
                source_identity,
            ),
        )

    def on_unavailable_image(
        self, correlation_id: int, subscription_registration_id: int, stream_id: int, channel: str
    ) -> None:
        self._send(
            cp.Event.ON_UNAVAILABLE_IMAGE,
            cp.encode_image_message(correlation_id, subscription_registration_id, stream_id, channel),
        )
