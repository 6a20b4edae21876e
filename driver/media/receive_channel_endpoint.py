"""ReceiveChannelEndpoint: the UDP socket of one receive channel; it sends SMs, NAKs and setup requests."""

from __future__ import annotations

import random

from driver.concurrent.counters import AtomicCounter
from driver.media.udp_transport import UdpTransport
from driver.protocol import frames
from driver.protocol.udp_channel import UdpChannel

CHANNEL_STATUS_ACTIVE = 1
CHANNEL_STATUS_CLOSING = 2


class ReceiveChannelEndpoint:
    def __init__(
        self,
        udp_channel: UdpChannel,
        transport: UdpTransport | None,
        status: AtomicCounter,
        short_sends: AtomicCounter,
        receiver_id: int | None = None,
    ) -> None:
        self.udp_channel = udp_channel
        self.channel = udp_channel.original_uri_string
        # Index 0 is the channel's own socket; a multi-destination subscription (control-mode=manual) has
        # none and gets one per ADD_RCV_DESTINATION. The index is the image connection's transport index.
        self.transports: list[UdpTransport | None] = [transport]
        self.destination_channels: list[UdpChannel | None] = [udp_channel if transport is not None else None]
        self.status = status
        self._short_sends = short_sends
        self.receiver_id = receiver_id if receiver_id is not None else random.getrandbits(63)
        self.local_address_counters: list[AtomicCounter] = []
        """Its sockets' local socket address counters (set by the conductor), closed with it."""
        status.set(CHANNEL_STATUS_ACTIVE)

    @property
    def is_multicast(self) -> bool:
        return self.udp_channel.is_multicast

    def control_address_for(self, source: tuple[str, int]) -> tuple[str, int]:
        """Where SMs and NAKs go: the sender's address (unicast) or the control group (multicast)."""
        return self.udp_channel.remote_control if self.udp_channel.is_multicast else source

    @property
    def has_destination_control(self) -> bool:
        return self.udp_channel.is_manual_control_mode

    def receiver_window_cap(self, transport_index: int) -> int | None:
        """The largest receiver window the socket of ``transport_index`` can hold: half what the kernel
        granted for SO_RCVBUF (it counts its own overhead per datagram in that), None when unknown. A window
        larger than the socket buffer would turn every full burst into loss and NAKs."""
        transport = self.transports[transport_index] if transport_index < len(self.transports) else None
        granted = getattr(transport, "receive_buffer_length", 0) if transport is not None else 0
        return granted // 2 if granted else None

    def add_destination(self, udp_channel: UdpChannel, transport: UdpTransport) -> int:
        self.transports.append(transport)
        self.destination_channels.append(udp_channel)
        return len(self.transports) - 1

    def remove_destination(self, canonical_form: str) -> UdpTransport | None:
        for index, channel in enumerate(self.destination_channels):
            if channel is not None and channel.canonical_form == canonical_form and index > 0:
                transport = self.transports[index]
                self.transports[index] = None
                self.destination_channels[index] = None
                return transport
        return None

    def _send(self, data: bytes, connections: list[tuple[int, tuple[str, int]]]) -> None:
        for transport_index, address in connections:
            transport = self.transports[transport_index] if transport_index < len(self.transports) else None
            if transport is None or transport.send_to(data, address) != len(data):
                self._short_sends.increment()

    def send_status_message(
        self,
        addresses: list[tuple[int, tuple[str, int]]],
        session_id: int,
        stream_id: int,
        term_id: int,
        term_offset: int,
        window: int,
        flags: int,
    ) -> None:
        sm = frames.encode_status_message(
            session_id, stream_id, term_id, term_offset, window, self.receiver_id, flags
        )
        self._send(sm, addresses)

    def send_setup_eliciting_status_message(
        self, address: tuple[str, int], session_id: int, stream_id: int, transport_index: int = 0
    ) -> None:
        sm = frames.encode_setup_eliciting_status_message(session_id, stream_id, self.receiver_id)
        self._send(sm, [(transport_index, address)])

    def send_response_setup(
        self,
        addresses: list[tuple[int, tuple[str, int]]],
        session_id: int,
        stream_id: int,
        response_session_id: int,
    ) -> None:
        self._send(frames.encode_response_setup(session_id, stream_id, response_session_id), addresses)

    def send_nak(
        self,
        addresses: list[tuple[int, tuple[str, int]]],
        session_id: int,
        stream_id: int,
        term_id: int,
        term_offset: int,
        length: int,
    ) -> None:
        self._send(frames.encode_nak(session_id, stream_id, term_id, term_offset, length), addresses)

    def send_rttm_reply(
        self,
        address: tuple[str, int],
        session_id: int,
        stream_id: int,
        echo_timestamp_ns: int,
        transport_index: int = 0,
    ) -> None:
        self._send(
            frames.encode_rttm(session_id, stream_id, echo_timestamp_ns, 0, self.receiver_id),
            [(transport_index, address)],
        )

    def close(self) -> None:
        """Idempotent: the conductor and the agent that owns the sockets may both close at shutdown."""
        if self.status.is_closed:
            return
        self.status.set(CHANNEL_STATUS_CLOSING)
        for transport in self.transports:
            if transport is not None:
                transport.close()
        self.status.close()
        for counter in self.local_address_counters:
            counter.close()
