"""SendChannelEndpoint: the UDP socket of one send channel (by canonical form) and its publications.

Data goes out to the endpoint; status messages, NAKs and RTT measurements come back on the same socket
and are dispatched to the publication of their (session id, stream id).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.counters import AtomicCounter
from driver.media.udp_batch import ReceiveBatch
from driver.media.udp_transport import UdpTransport
from driver.protocol import frames
from driver.protocol.channel_uri import CONTROL_MODE_RESPONSE
from driver.protocol.udp_channel import UdpChannel

if TYPE_CHECKING:
    from driver.driver_conductor_proxy import DriverConductorProxy
    from driver.network_publication import NetworkPublication

CHANNEL_STATUS_ACTIVE = 1
CHANNEL_STATUS_CLOSING = 2
DESTINATION_TIMEOUT_NS = 5_000_000_000  # dynamic MDC: a receiver silent this long is dropped


class SendChannelEndpoint:
    def __init__(self, udp_channel: UdpChannel, transport: UdpTransport, status: AtomicCounter) -> None:
        self.udp_channel = udp_channel
        self.channel = udp_channel.original_uri_string
        self.transport = transport
        self.status = status
        self.publications: dict[tuple[int, int], NetworkPublication] = {}
        # Multi-destination-cast (explicit control address): data fans out to every destination; manual
        # mode takes them from ADD_DESTINATION, dynamic mode learns them from the receivers' SMs.
        self.is_multi_destination = udp_channel.has_explicit_control
        self.is_manual_control = udp_channel.is_manual_control_mode
        # control-mode=response: each response publication sends to its own client (learned from its
        # setup-eliciting SM), so the endpoint keeps no destinations.
        self.is_response_control = udp_channel.control_mode == CONTROL_MODE_RESPONSE
        self.destinations: dict[tuple[str, int], int] = {}
        # One destination (the connected socket): a publication's burst goes out in one native call.
        self._term_burst = None if self.is_multi_destination else getattr(transport, "send_term_burst", None)
        self.burst_transport: UdpTransport | None = None if self._term_burst is None else transport
        """The connected socket a publication's send step (driver/data_step.py) bursts on; None: none
        (multi-destination), the publication sends datagram by datagram."""
        self.local_address_counters: list[AtomicCounter] = []
        """Its sockets' local socket address counters (set by the conductor), closed with it."""
        status.set(CHANNEL_STATUS_ACTIVE)

    @property
    def send_burst(self) -> int | None:
        """Datagrams a publication may send per duty cycle through :meth:`send_term_burst` when the
        transport sets it (segmentation offload), else None (the publication's default)."""
        return None if self._term_burst is None else getattr(self.transport, "send_burst", None)

    @property
    def multicast_ttl(self) -> int:
        return self.udp_channel.multicast_ttl if self.udp_channel.is_multicast else 0

    def send(self, data: bytes | memoryview) -> int:
        if not self.is_multi_destination:
            return self.transport.send(data)
        length = len(data)
        sent = length
        for destination in self.destinations:
            sent = min(sent, self.transport.send_to(data, destination))
        return sent

    def send_to(self, data: bytes | memoryview, address: tuple[str, int]) -> int:
        return self.transport.send_to(data, address)

    def send_term_burst(
        self, term_buffer: AtomicBuffer, term_offset: int, window: int, mtu_length: int, max_datagrams: int
    ) -> tuple[int, int, int, bool] | None:
        """A burst of a term's committed frames in one sendmmsg (``UdpTransport.send_term_burst``), or None
        when this endpoint has no such path (multi-destination): the caller then sends datagram by datagram."""
        if self._term_burst is None:
            return None
        return self._term_burst(term_buffer, term_offset, window, mtu_length, max_datagrams)

    def on_resolution_change(self, address: tuple[str, int]) -> None:
        """The endpoint's host name now resolves to ``address``: send there, starting with a setup."""
        self.transport.reconnect(address)
        for publication in self.publications.values():
            publication.trigger_send_setup_frame()

    def add_destination(self, address: tuple[str, int]) -> None:
        self.destinations[address] = 2**63 - 1  # manual destinations never time out

    def remove_destination(self, address: tuple[str, int]) -> None:
        self.destinations.pop(address, None)

    def _on_dynamic_receiver(self, address: tuple[str, int], now_ns: int) -> None:
        self.destinations[address] = now_ns + DESTINATION_TIMEOUT_NS
        expired = [a for a, deadline in self.destinations.items() if deadline < now_ns]
        for address in expired:
            del self.destinations[address]

    def add_publication(self, publication: NetworkPublication) -> None:
        self.publications[(publication.session_id, publication.stream_id)] = publication

    def remove_publication(self, publication: NetworkPublication) -> None:
        self.publications.pop((publication.session_id, publication.stream_id), None)

    def poll_control(
        self,
        batch: ReceiveBatch,
        now_ns: int,
        counters: dict[str, AtomicCounter],
        conductor_proxy: DriverConductorProxy | None = None,
    ) -> int:
        """Drain the socket: SM, NAK, RTTM and RSP_SETUP frames to their publications; garbage is counted,
        dropped. Response channel events go to the conductor through ``conductor_proxy``."""
        received = self.transport.receive_batch(batch)
        for i in range(received):
            packet = batch.data(i)
            length = len(packet)
            if frames.validate_frame(length, packet) is not None:
                counters["invalid"].increment()
                continue
            frame_type = frames.frame_type(packet)
            if frame_type == frames.HDR_TYPE_SM:
                sm = frames.StatusMessageFrame.decode(packet)
                if self.is_multi_destination and not self.is_manual_control and not self.is_response_control:
                    self._on_dynamic_receiver(batch.address(i), now_ns)
                if sm.session_id == 0 and sm.stream_id == 0 and sm.flags & frames.SEND_SETUP_FLAG:
                    if not self.is_response_control:  # a response client always names its session
                        for every_publication in self.publications.values():  # an MDC receiver joined
                            every_publication.trigger_send_setup_frame()
                    counters["sm"].increment()
                    continue
                publication = self.publications.get((sm.session_id, sm.stream_id))
                if publication is not None:
                    if sm.flags & frames.SEND_SETUP_FLAG:
                        publication.trigger_send_setup_frame(batch.address(i))
                    else:
                        had_receivers = publication.has_receivers
                        publication.on_status_message(sm, now_ns)
                        answered = publication.response.correlation_id if publication.is_response else None
                        if not had_receivers and answered is not None and conductor_proxy is not None:
                            conductor_proxy.response_connected(answered)
                    counters["sm"].increment()
            elif frame_type == frames.HDR_TYPE_NAK:
                nak = frames.NakFrame.decode(packet)
                publication = self.publications.get((nak.session_id, nak.stream_id))
                if publication is not None:
                    publication.on_nak(nak.term_id, nak.term_offset, nak.length, now_ns)
                    counters["nak"].increment()
            elif frame_type == frames.HDR_TYPE_RTTM:
                rttm = frames.RttmFrame.decode(packet)
                publication = self.publications.get((rttm.session_id, rttm.stream_id))
                if publication is not None:
                    publication.on_rttm(rttm)
            elif frame_type == frames.HDR_TYPE_RSP_SETUP:
                rsp = frames.ResponseSetupFrame.decode(packet)
                publication = self.publications.get((rsp.session_id, rsp.stream_id))
                if publication is not None and publication.response.is_request and conductor_proxy is not None:
                    subscription_id = publication.response.correlation_id
                    if subscription_id is not None:
                        conductor_proxy.response_setup(subscription_id, rsp.response_session_id)
        return received

    def close(self) -> None:
        """Idempotent: the conductor and the agent that owns the sockets may both close at shutdown."""
        if self.status.is_closed:
            return
        self.status.set(CHANNEL_STATUS_CLOSING)
        self.transport.close()
        self.status.close()
        for counter in self.local_address_counters:
            counter.close()
