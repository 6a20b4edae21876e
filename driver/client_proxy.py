"""Driver -> clients events, transmitted on the to-clients broadcast buffer."""

from __future__ import annotations

from driver.concurrent.broadcast import BroadcastTransmitter
from driver.protocol import control_protocol as cp

# The Java client copies each event into a 4 KiB scratch buffer and closes itself on a longer one.
MAX_EVENT_LENGTH = 4096
_ERROR_HEADER_LENGTH = 16


class ClientProxy:
    def __init__(self, transmitter: BroadcastTransmitter) -> None:
        self._transmitter = transmitter

    def _send(self, event: cp.Event, body: bytes) -> None:
        self._transmitter.transmit(event, body)

    def on_error(self, offending_correlation_id: int, code: int, message: str) -> None:
        data = message.encode("utf-8", "replace")[: MAX_EVENT_LENGTH - _ERROR_HEADER_LENGTH]
        self._send(
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
