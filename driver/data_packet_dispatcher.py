"""DataPacketDispatcher: routes a receive endpoint's DATA/SETUP/RTTM frames to images (sans-IO state).

Per stream of interest it keeps, per session, either the image or why there is none yet: a setup was
asked for (PENDING_SETUP), the conductor is making the image (INIT_IN_PROGRESS), the session is not
wanted (NO_INTEREST) or its image just went away (ON_COOL_DOWN).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from driver.protocol import frames

if TYPE_CHECKING:
    from driver.media.receive_channel_endpoint import ReceiveChannelEndpoint
    from driver.publication_image import PublicationImage

PENDING_SETUP = "pending-setup"
INIT_IN_PROGRESS = "init-in-progress"
NO_INTEREST = "no-interest"
ON_COOL_DOWN = "on-cool-down"


@dataclass
class StreamInterest:
    is_for_all_sessions: bool = False
    subscribed_sessions: set[int] = field(default_factory=set)
    sessions: dict[int, Any] = field(default_factory=dict)  # session id -> image or a state string


CreateImage = Callable[
    [frames.SetupFrame, "ReceiveChannelEndpoint", int, tuple[str, int], tuple[str, int]], None
]


class DataPacketDispatcher:
    def __init__(self, create_image: CreateImage, on_pending_setup: Callable[..., None]) -> None:
        self._streams: dict[int, StreamInterest] = {}
        self._create_image = create_image
        self._on_pending_setup = on_pending_setup
        self.version = 0
        """Bumped whenever the set of images data is routed to changes (see :meth:`images`)."""

    # --- subscriptions and images (commands from the conductor) -----------------------------------

    def add_subscription(self, stream_id: int, session_id: int | None = None) -> None:
        interest = self._streams.setdefault(stream_id, StreamInterest())
        if session_id is None:
            interest.is_for_all_sessions = True
            for session, state in list(interest.sessions.items()):
                if state == NO_INTEREST:
                    del interest.sessions[session]
        else:
            interest.subscribed_sessions.add(session_id)
            if interest.sessions.get(session_id) == NO_INTEREST:
                del interest.sessions[session_id]

    def remove_subscription(self, stream_id: int, session_id: int | None = None) -> None:
        interest = self._streams.get(stream_id)
        if interest is None:
            return
        self.version += 1
        if session_id is None:
            interest.is_for_all_sessions = False
        else:
            interest.subscribed_sessions.discard(session_id)
        if not interest.is_for_all_sessions:
            for session in list(interest.sessions):
                if session not in interest.subscribed_sessions:
                    del interest.sessions[session]  # its image (if any) is retired by the conductor
        if not interest.is_for_all_sessions and not interest.subscribed_sessions:
            del self._streams[stream_id]

    def add_publication_image(self, image: PublicationImage) -> None:
        interest = self._streams.setdefault(image.stream_id, StreamInterest())
        interest.sessions[image.session_id] = image
        self.version += 1
        image.activate()

    def remove_publication_image(self, image: PublicationImage) -> None:
        interest = self._streams.get(image.stream_id)
        if interest is not None and interest.sessions.get(image.session_id) is image:
            interest.sessions[image.session_id] = ON_COOL_DOWN
            self.version += 1

    def remove_cool_down(self, session_id: int, stream_id: int) -> None:
        interest = self._streams.get(stream_id)
        if interest is not None and interest.sessions.get(session_id) == ON_COOL_DOWN:
            del interest.sessions[session_id]

    def remove_pending_setup(self, session_id: int, stream_id: int) -> None:
        interest = self._streams.get(stream_id)
        if interest is not None and interest.sessions.get(session_id) == PENDING_SETUP:
            del interest.sessions[session_id]

    def images(self) -> list[PublicationImage]:
        """Every image data is routed to now (it changes only when :attr:`version` does)."""
        return [
            state
            for interest in self._streams.values()
            for state in interest.sessions.values()
            if not isinstance(state, str)
        ]

    def image(self, session_id: int, stream_id: int) -> PublicationImage | None:
        interest = self._streams.get(stream_id)
        state = interest.sessions.get(session_id) if interest is not None else None
        return None if state is None or isinstance(state, str) else state

    # --- packets (receiver duty cycle) --------------------------------------------------------------

    def on_data_packet(
        self,
        endpoint: ReceiveChannelEndpoint,
        header: tuple,
        packet: Any,
        length: int,
        source: Callable[[], tuple[str, int]],
        transport_index: int,
        now_ns: int,
    ) -> int:
        # header: DATA_HEADER fields (frame_length, version, flags, type, term_offset, session, stream, term_id, rv)
        stream_id = header[6]
        interest = self._streams.get(stream_id)
        if interest is None:
            return 0
        session_id = header[5]
        state = interest.sessions.get(session_id)
        if state is None:
            if not (interest.is_for_all_sessions or session_id in interest.subscribed_sessions):
                interest.sessions[session_id] = NO_INTEREST
                return 0
            if header[2] == frames.BEGIN_END_AND_EOS_FLAGS:
                return 0  # the end of a stream we never had: nothing to set up
            # Unknown session of a wanted stream: ask its sender for a SETUP (again after 1 s if lost).
            control = endpoint.control_address_for(source())
            endpoint.send_setup_eliciting_status_message(control, session_id, stream_id, transport_index)
            interest.sessions[session_id] = PENDING_SETUP
            self._on_pending_setup(session_id, stream_id, endpoint, now_ns)
            return 0
        if isinstance(state, str):
            return 0
        return state.insert_packet(header[7], header[4], packet, length, transport_index, source, now_ns)

    def on_setup_message(
        self,
        endpoint: ReceiveChannelEndpoint,
        setup: frames.SetupFrame,
        source: tuple[str, int],
        transport_index: int,
    ) -> None:
        interest = self._streams.get(setup.stream_id)
        if interest is None:
            return
        state = interest.sessions.get(setup.session_id)
        if state is not None and not isinstance(state, str):
            state.add_connection_if_unknown(transport_index, endpoint.control_address_for(source), source)
            return
        if state is None or state == PENDING_SETUP:
            if not (interest.is_for_all_sessions or setup.session_id in interest.subscribed_sessions):
                interest.sessions[setup.session_id] = NO_INTEREST
                return
            interest.sessions[setup.session_id] = INIT_IN_PROGRESS
            self._create_image(setup, endpoint, transport_index, endpoint.control_address_for(source), source)
