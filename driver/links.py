"""What ties a client to driver resources: publication, subscription and counter links.

A link belongs to one client and dies with it (timeout or close); the resources it points at are
reference counted (publications) or keep one subscriber position per linked subscription.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from driver.concurrent.counters import AtomicCounter

if TYPE_CHECKING:
    from driver.ipc_publication import IpcPublication
    from driver.media.receive_channel_endpoint import ReceiveChannelEndpoint
    from driver.network_publication import NetworkPublication
    from driver.protocol.publication_params import SubscriptionParams
    from driver.publication_image import PublicationImage


@dataclass(eq=False)
class CounterLink:
    registration_id: int
    client_id: int
    counter: AtomicCounter

    def close(self) -> None:
        self.counter.close()


@dataclass(eq=False)
class PublicationLink:
    registration_id: int
    client_id: int
    publication: IpcPublication | NetworkPublication

    def __post_init__(self) -> None:
        self.publication.inc_ref()

    def close(self) -> None:
        self.publication.dec_ref()


@dataclass(eq=False)
class SubscriptionLink:
    registration_id: int
    client_id: int
    stream_id: int
    channel: str
    params: SubscriptionParams
    # Subscribable (publication or image) -> this link's subscriber position for it.
    positions: dict[Any, AtomicCounter] = field(default_factory=dict)

    def matches_ipc(self, publication: IpcPublication) -> bool:
        return False

    def matches_image(self, image: PublicationImage) -> bool:
        return False

    def matches_endpoint(self, endpoint: ReceiveChannelEndpoint, stream_id: int, session_id: int) -> bool:
        return False

    def matches_network_publication(self, publication: NetworkPublication) -> bool:
        return False

    def is_linked(self, subscribable: Any) -> bool:
        return subscribable in self.positions

    def link(self, subscribable: Any, position: AtomicCounter) -> None:
        self.positions[subscribable] = position

    def unlink(self, subscribable: Any) -> None:
        self.positions.pop(subscribable, None)

    def close(self) -> None:
        for subscribable, position in self.positions.items():
            subscribable.remove_subscriber(position)
        self.positions.clear()


@dataclass(eq=False)
class IpcSubscriptionLink(SubscriptionLink):
    def matches_ipc(self, publication: IpcPublication) -> bool:
        session_id = self.params.session_id
        return publication.stream_id == self.stream_id and (
            session_id is None or session_id == publication.session_id
        )


@dataclass(eq=False)
class NetworkSubscriptionLink(SubscriptionLink):
    endpoint: ReceiveChannelEndpoint | None = None

    def matches_endpoint(self, endpoint: ReceiveChannelEndpoint, stream_id: int, session_id: int) -> bool:
        session = self.params.session_id
        return (
            endpoint is self.endpoint
            and stream_id == self.stream_id
            # a response subscription takes nothing until the server's driver names its session
            and (session == session_id if session is not None else not self.params.is_response)
        )

    def matches_image(self, image: PublicationImage) -> bool:
        return self.matches_endpoint(image.channel_endpoint, image.stream_id, image.session_id)


@dataclass(eq=False)
class SpySubscriptionLink(SubscriptionLink):
    """``aeron-spy:<udp channel>``: reads a local network publication's log directly, as an extra consumer."""

    canonical_form: str = ""

    def matches_network_publication(self, publication: NetworkPublication) -> bool:
        session_id = self.params.session_id
        return (
            publication.stream_id == self.stream_id
            and publication.channel_endpoint.udp_channel.canonical_form == self.canonical_form
            and (session_id is None or session_id == publication.session_id)
        )
