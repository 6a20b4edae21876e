"""DriverConductorProxy: the receiver's only way to the conductor (commands over the conductor's queue)."""

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
