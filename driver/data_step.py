"""The data path's plain steps, one source for the Python agents and the native steady-state cycle
(native/include/amd_step.h; the one owner of the native ``amd_send_step_*`` functions).

:class:`SendStep` is a network publication's plain send: a burst of what publishers committed plus all of its
accounting (the sender position, BYTES_SENT, short sends, the flow-control stall, the time data last went). The
publication's ``send`` runs it each sender duty cycle; the native cycle (driver/fast_cycle.py) runs the same
struct between Python cycles, so what one did the other sees without a hand-over.

:class:`ReceiveStep` is a receive endpoint's plain receive of a batch: the rebuild into its images plus all of its
accounting (BYTES_RECEIVED, under- and over-runs, rejected inserts, the images' high-water marks). The receiver's
``_rebuild`` and the native cycle both run it; what is left (datagrams for no known image, the images' frame
times) is the receiver's, read from the same table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from driver._native import ffi, lib
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer.term_rebuilder import DatagramBatch, RebuildBatch
from driver.concurrent.word_watch import Word
from driver.media.udp_batch import GSO_UNSUPPORTED_ERRNOS

STALLED = lib.AMD_SEND_STALLED


def word_pointer(word: Word) -> Any:
    """An 8-byte aligned counter word as the native steps' ``int64_t *``."""
    buffer, offset = word
    if offset & 7:
        raise ValueError(f"a native step's word must be 8-byte aligned, not at offset {offset}")
    return ffi.cast("int64_t *", buffer.address(offset))


class BurstTransport(Protocol):
    """What a send step needs of its connected socket (driver/media/udp_transport.py's UdpTransport)."""

    send_fd: int
    gso: bool

    def describe_send_failure(self, error: int) -> str: ...


class SendStep:
    """One publication's ``amd_send_step``: :meth:`run` is the plain send; :attr:`state` the struct both the
    publication and the native cycle read and write (``last_send_ns``, ``track_sender_limits``)."""

    __slots__ = ("_fd", "_gso", "_transport", "has_socket", "state")

    def __init__(
        self,
        terms: Sequence[AtomicBuffer],
        sender_position: Word,
        sender_limit: Word,
        counters: tuple[Word, Word, Word, Word | None],
        position_bits_to_shift: int,
        mtu: int,
        burst: int,
        transport: BurstTransport | None,
        last_send_ns: int,
    ) -> None:
        """``counters``: the words of BYTES_SENT, SHORT_SENDS, SENDER_FLOW_CONTROL_LIMITS and the publication's
        sender back-pressure events (or None). ``transport``: the connected socket to burst on, or None: the
        publication sends otherwise (multi-destination) and keeps only the state here. The buffers behind every
        pointer must outlive the step."""
        bytes_sent, short_sends, flow_control_limits, sender_bpe = counters
        state = self.state = ffi.new("amd_send_step *")
        for i in range(3):
            state.terms[i] = terms[i].address(0)
        state.sender_position = word_pointer(sender_position)
        state.sender_limit = word_pointer(sender_limit)
        state.bytes_sent = word_pointer(bytes_sent)
        state.short_sends = word_pointer(short_sends)
        state.flow_control_limits = word_pointer(flow_control_limits)
        state.sender_bpe = ffi.NULL if sender_bpe is None else word_pointer(sender_bpe)
        state.last_send_ns = last_send_ns
        state.term_length = len(terms[0])
        state.position_bits_to_shift = position_bits_to_shift
        state.mtu = mtu
        state.max_datagrams = burst
        state.fd = -1
        self._transport = transport
        self.has_socket = transport is not None
        self._fd = -1
        self._gso = False

    def socket_open(self) -> bool:
        """The step's socket set to the transport's now (its descriptor, offload on or off); False once closed."""
        transport = self._transport
        if transport is None or transport.send_fd < 0:
            return False
        if transport.send_fd != self._fd or transport.gso is not self._gso:
            self._fd = self.state.fd = transport.send_fd
            self._gso = transport.gso
            self.state.gso = 1 if self._gso else 0
        return True

    def run(self, now_ns: int) -> int:
        """The plain send at ``now_ns``: the bytes sent (0: nothing, a stall, or a closed socket). Raises OSError
        for a send error that is not a short send (what went before it is accounted)."""
        transport = self._transport
        assert transport is not None
        # Two loads and no call on the hot path; a closed socket sends and reports nothing (as UdpTransport.send).
        if (transport.send_fd != self._fd or transport.gso is not self._gso) and not self.socket_open():
            return 0
        sent = lib.amd_send_step_run(self.state, now_ns)
        if sent >= 0:
            return sent
        if sent == STALLED:
            return 0
        error = self.state.error
        if self.state.gso and error in GSO_UNSUPPORTED_ERRNOS:
            transport.gso = False  # this socket or route cannot segment: plain datagrams from now on
            return self.run(now_ns)
        raise OSError(error, transport.describe_send_failure(error))


class ReceiveStep:
    """One receive endpoint's ``amd_receive_step`` over its rebuild table: :meth:`run` is the plain receive of a
    batch; the table (``RebuildBatch``) holds each image's results after it. Made again with the table's images."""

    __slots__ = ("_hwm", "state", "table")

    def __init__(self, table: RebuildBatch, hwm: Sequence[Word], counters: tuple[Word, Word, Word, Word]) -> None:
        """``hwm``: per image of the table, its high-water mark counter's word; ``counters``: the words of
        BYTES_RECEIVED, FLOW_CONTROL_UNDER_RUNS, FLOW_CONTROL_OVER_RUNS and INVALID_PACKETS."""
        images, count = table.native_images()
        if len(hwm) != count:
            raise ValueError(f"{len(hwm)} high-water marks for a table of {count} images")
        self.table = table
        self._hwm = ffi.new("int64_t *[]", [word_pointer(word) for word in hwm] or 1)
        state = self.state = ffi.new("amd_receive_step *")
        state.images = images
        state.hwm = self._hwm
        state.image_count = count
        bytes_received, under_runs, over_runs, invalid_packets = counters
        state.bytes_received = word_pointer(bytes_received)
        state.under_runs = word_pointer(under_runs)
        state.over_runs = word_pointer(over_runs)
        state.invalid_packets = word_pointer(invalid_packets)

    def run(self, batch: DatagramBatch) -> int:
        """The plain receive of ``batch`` into the table's images (their windows prepared): how many datagrams it
        left to the caller (``table.unhandled``)."""
        count = batch.count
        return lib.amd_receive_step_run(
            self.state,
            batch.slot_buffer.address(0),
            batch.offsets_pointer,
            batch.lengths_pointer,
            count,
            self.table.native_unhandled(count),
        )


def send_step_array(steps: Sequence[SendStep]) -> Any:
    """The steps' structs as an ``amd_send_step *[]`` (the native cycle's publications); keep it while in use."""
    return ffi.new("amd_send_step *[]", [step.state for step in steps] or 1)
