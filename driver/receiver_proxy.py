"""ReceiverProxy: the conductor's only way to the receiver (commands over the receiver's queue).

Commands name the receive endpoint; the receiver finds the endpoint's dispatcher, which it alone owns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from driver.agent.command_queue import CommandProxy

if TYPE_CHECKING:
    from driver.media.receive_channel_endpoint import ReceiveChannelEndpoint
    from driver.media.udp_transport import UdpTransport
    from driver.protocol.udp_channel import UdpChannel
    from driver.publication_image import PublicationImage


class ReceiverProxy(CommandProxy):
    __slots__ = ()

    def register_receive_channel_endpoint(self, endpoint: ReceiveChannelEndpoint) -> None:
        self._offer("on_register_receive_channel_endpoint", endpoint)

    def close_receive_channel_endpoint(self, endpoint: ReceiveChannelEndpoint) -> None:
        self._offer("on_close_receive_channel_endpoint", endpoint)

    def add_subscription(
        self, endpoint: ReceiveChannelEndpoint, stream_id: int, session_id: int | None = None
    ) -> None:
        self._offer("on_add_subscription", endpoint, stream_id, session_id)

    def remove_subscription(
        self, endpoint: ReceiveChannelEndpoint, stream_id: int, session_id: int | None = None
    ) -> None:
        self._offer("on_remove_subscription", endpoint, stream_id, session_id)

    def request_setup(self, endpoint: ReceiveChannelEndpoint, stream_id: int, session_id: int) -> None:
        """A response subscription asks the server's response publication for a SETUP."""
        self._offer("on_request_setup", endpoint, stream_id, session_id)

    def new_publication_image(self, endpoint: ReceiveChannelEndpoint, image: PublicationImage) -> None:
        self._offer("on_new_publication_image", endpoint, image)

    def remove_publication_image(self, endpoint: ReceiveChannelEndpoint, image: PublicationImage) -> None:
        self._offer("on_remove_publication_image", endpoint, image)

    def remove_cool_down(self, endpoint: ReceiveChannelEndpoint, session_id: int, stream_id: int) -> None:
        self._offer("on_remove_cool_down", endpoint, session_id, stream_id)

    def remove_pending_setup(self, endpoint: ReceiveChannelEndpoint, session_id: int, stream_id: int) -> None:
        self._offer("on_remove_pending_setup", endpoint, session_id, stream_id)

    def add_destination(
        self, endpoint: ReceiveChannelEndpoint, udp_channel: UdpChannel, transport: UdpTransport
    ) -> None:
        self._offer("on_add_destination", endpoint, udp_channel, transport)

    def remove_destination(self, endpoint: ReceiveChannelEndpoint, canonical_form: str) -> None:
        self._offer("on_remove_destination", endpoint, canonical_form)
