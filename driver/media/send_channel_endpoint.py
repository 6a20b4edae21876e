"""SendChannelEndpoint: the UDP socket of one send channel (by canonical form) and its publications.

Data goes out to the endpoint; status messages, NAKs and RTT measurements come back on the same socket
and are dispatched to the publication of their (session id, stream id).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from driver.concurrent.counters import AtomicCounter
from driver.concurrent.udp_batch import ReceiveBatch
from driver.media.udp_transport import UdpTransport
from driver.protocol import frames
from driver.protocol.udp_channel import UdpChannel

if TYPE_CHECKING:
    from driver.network_publication import NetworkPublication

CHANNEL_STATUS_ACTIVE = 1
CHANNEL_STATUS_CLOSING = 2


class SendChannelEndpoint:
    def __init__(self, udp_channel: UdpChannel, transport: UdpTransport, status: AtomicCounter) -> None:
        self.udp_channel = udp_channel
        self.channel = udp_channel.original_uri_string
        self.transport = transport
        self.status = status
        self.ref_count = 0
        self.publications: dict[tuple[int, int], NetworkPublication] = {}
        status.set(CHANNEL_STATUS_ACTIVE)

    @property
    def multicast_ttl(self) -> int:
        return self.udp_channel.multicast_ttl if self.udp_channel.is_multicast else 0

    def send(self, data: bytes | memoryview) -> int:
        return self.transport.send(data)

    def add_publication(self, publication: NetworkPublication) -> None:
        self.publications[(publication.session_id, publication.stream_id)] = publication

    def remove_publication(self, publication: NetworkPublication) -> None:
        self.publications.pop((publication.session_id, publication.stream_id), None)

    def poll_control(self, batch: ReceiveBatch, now_ns: int, counters: dict[str, AtomicCounter]) -> int:
        """Drain the socket: SM, NAK and RTTM frames to their publications; garbage is counted, dropped."""
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
                publication = self.publications.get((sm.session_id, sm.stream_id))
                if publication is not None:
                    if sm.flags & frames.SEND_SETUP_FLAG:
                        publication.trigger_send_setup_frame()
                    else:
                        publication.on_status_message(sm, now_ns)
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
        return received

    def close(self) -> None:
        self.status.set(CHANNEL_STATUS_CLOSING)
        self.transport.close()
        self.status.close()
