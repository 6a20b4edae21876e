"""DriverConductorProxy: the receiver's and the sender's way to the conductor (commands over its queue)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from driver.agent.command_queue import CommandProxy

if TYPE_CHECKING:
    from driver.media.receive_channel_endpoint import ReceiveChannelEndpoint
    from driver.protocol.frames import SetupFrame


class DriverConductorProxy(CommandProxy):
    __slots__ = ()

    def create_publication_image(
        self,
        setup: SetupFrame,
        endpoint: ReceiveChannelEndpoint,
        transport_index: int,
        control_address: tuple[str, int],
        source: tuple[str, int],
    ) -> None:
        """A SETUP for a wanted session without an image: the conductor makes one (or says no)."""
        self._offer("on_create_publication_image", setup, endpoint, transport_index, control_address, source)

    def response_setup(self, correlation_id: int, response_session_id: int) -> None:
        """From the sender: an RSP_SETUP for the request publication whose response subscription is
        ``correlation_id``."""
        self._offer("on_response_setup", correlation_id, response_session_id)

    def response_connected(self, correlation_id: int) -> None:
        """From the sender: the response publication answering image ``correlation_id`` hears its client."""
        self._offer("on_response_connected", correlation_id)
