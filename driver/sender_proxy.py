"""SenderProxy: the conductor's only way to the sender (commands over the sender's queue)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from driver.agent.command_queue import CommandProxy

if TYPE_CHECKING:
    from driver.media.send_channel_endpoint import SendChannelEndpoint
    from driver.network_publication import NetworkPublication


class SenderProxy(CommandProxy):
    __slots__ = ()

    def register_send_channel_endpoint(self, endpoint: SendChannelEndpoint) -> None:
        self._offer("on_register_send_channel_endpoint", endpoint)

    def close_send_channel_endpoint(self, endpoint: SendChannelEndpoint) -> None:
        self._offer("on_close_send_channel_endpoint", endpoint)

    def new_network_publication(self, publication: NetworkPublication) -> None:
        self._offer("on_new_network_publication", publication)

    def remove_network_publication(self, publication: NetworkPublication) -> None:
        self._offer("on_remove_network_publication", publication)

    def on_resolution_change(self, endpoint: SendChannelEndpoint, address: tuple[str, int]) -> None:
        self._offer("on_resolution_change", endpoint, address)

    def add_destination(self, endpoint: SendChannelEndpoint, address: tuple[str, int]) -> None:
        self._offer("on_add_destination", endpoint, address)

    def remove_destination(self, endpoint: SendChannelEndpoint, address: tuple[str, int]) -> None:
        self._offer("on_remove_destination", endpoint, address)
