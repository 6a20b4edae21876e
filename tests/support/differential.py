"""One driver's data path run three ways over the same scripted traffic, for tests that the three are equal:
``python`` (the SHARED Python duty cycle), ``native`` (the SHARED runner's native steady-state cycle,
driver/fast_cycle.py, serving every wake-up it can, as driver/agent/runner.py uses it) and ``dedicated`` (each
agent's duty cycle on its own, in another order, as DEDICATED threading runs them).

The driver's clocks are a :class:`ManualClock` and nothing runs by itself: every event is followed by
:meth:`Rig.settle`, which runs cycles (the way the mode runs them) until none does work, then a client duty
cycle and a poll of the subscription. The far side is a :class:`Peer` of real UDP sockets on loopback: it
receives what the driver's publication sends (and answers with status messages and NAKs) and sends the driver's
subscription setups and data. What a run observes (:meth:`Rig.observed`): every datagram each peer socket
received, in order, per event; the messages the subscription delivered; every counter's value (the duty cycle
timers excepted: they time real work); the loss report's bytes.
"""

from __future__ import annotations

import asyncio
import random
import select
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from driver.agent.idle_strategy import Waker
from driver.agent.runner import CompositeAgent
from driver.client import Aeron
from driver.concurrent.logbuffer.frame_descriptor import DATA_HEADER, HEADER_LENGTH
from driver.context import DriverContext
from driver.fast_cycle import FastCycle
from driver.media_driver import MediaDriver
from driver.protocol.frames import (
    CURRENT_VERSION,
    HDR_TYPE_DATA,
    UNFRAGMENTED,
    encode_nak,
    encode_setup,
    encode_status_message,
)
from driver.status.system_counters import SystemCounterDescriptor as SC
from tests.support.clock import ManualClock

MODES = ("python", "native", "dedicated")
TERM_LENGTH = 64 * 1024
MTU = 1408
OUT_STREAM, OUT_SESSION, OUT_INITIAL_TERM = 1001, 0x1234, 100
IN_STREAM, IN_SESSION, IN_INITIAL_TERM = 2002, 0x5678, 7
UNKNOWN_SESSION = 0x9999
RECEIVER_ID = 77
TIMED = {
    SC.CONDUCTOR_MAX_CYCLE_TIME,
    SC.CONDUCTOR_CYCLE_TIME_THRESHOLD_EXCEEDED,
    SC.SENDER_MAX_CYCLE_TIME,
    SC.SENDER_CYCLE_TIME_THRESHOLD_EXCEEDED,
    SC.RECEIVER_MAX_CYCLE_TIME,
    SC.RECEIVER_CYCLE_TIME_THRESHOLD_EXCEEDED,
}
MAX_CYCLES = 10_000


def _udp_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
    sock.setblocking(False)
    return sock


def data_frame(
    term_offset: int, payload: bytes, term_id: int = IN_INITIAL_TERM, session_id: int = IN_SESSION
) -> bytes:
    """One unfragmented DATA frame (padded to the frame alignment) of the inbound stream."""
    header = DATA_HEADER.pack(
        HEADER_LENGTH + len(payload),
        CURRENT_VERSION,
        UNFRAGMENTED,
        HDR_TYPE_DATA,
        term_offset,
        session_id,
        IN_STREAM,
        term_id,
        0,
    )
    frame = header + payload
    return frame + bytes(-len(frame) % 32)


class Readiness:
    """What the agents use of the event loop (``add_reader``, ``remove_reader``, ``is_closed``), served by hand:
    :meth:`deliver` calls back each watched socket that is readable now, as the loop's level-triggered watch
    would before the runner's next wake-up (its callbacks note the socket readable; the sender reads its
    control sockets only then)."""

    def __init__(self) -> None:
        self._readers: dict[int, tuple[Callable[..., None], tuple[Any, ...]]] = {}

    def add_reader(self, fd: int, callback: Callable[..., None], *args: Any) -> None:
        self._readers[fd] = (callback, args)

    def remove_reader(self, fd: int) -> bool:
        return self._readers.pop(fd, None) is not None

    def is_closed(self) -> bool:
        return False

    def deliver(self) -> None:
        if not self._readers:
            return
        readable, _, _ = select.select(list(self._readers), [], [], 0)
        for fd in readable:
            callback, args = self._readers[fd]
            callback(*args)


class Peer:
    """The far side: ``rx`` receives the driver's publication (and sends it SMs and NAKs), ``tx`` sends to the
    driver's subscription (and receives its SMs and NAKs)."""

    def __init__(self) -> None:
        self.rx = _udp_socket()
        self.tx = _udp_socket()
        self.rx_port = self.rx.getsockname()[1]
        self.out_source: tuple[str, int] | None = None  # where the publication's datagrams come from

    def drain(self, sock: socket.socket) -> list[bytes]:
        datagrams: list[bytes] = []
        if sock.fileno() < 0:
            return datagrams  # closed: the peer went away
        while True:
            try:
                datagram, source = sock.recvfrom(65536)
            except BlockingIOError:
                return datagrams
            datagrams.append(datagram)
            if sock is self.rx:
                self.out_source = source

    def close(self) -> None:
        self.rx.close()
        self.tx.close()


@dataclass
class Observed:
    wire_out: list[list[bytes]] = field(default_factory=list)  # per event: what the publication sent
    wire_back: list[list[bytes]] = field(default_factory=list)  # per event: the subscription's SMs and NAKs
    delivered: list[tuple[int, int, bytes]] = field(default_factory=list)  # (session, position, payload)
    counters: dict[str, int] = field(default_factory=dict)
    loss_report: bytes = b""


class Rig:
    """A driver (its three agents run the ``mode``'s way), an in-process client with a publication to the peer
    and a subscription it sends to, and the peer. Build with :meth:`open`; ``close()`` when done."""

    def __init__(self, aeron_dir: Path, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode {mode!r}: one of {MODES}")
        self.mode = mode
        self.clock = ManualClock()
        self.peer = Peer()
        random.seed(1)  # the receive endpoint's receiver id (in every SM) is a random draw
        ctx = DriverContext(aeron_dir=str(aeron_dir), threading_mode="INVOKER", term_buffer_sparse_file=True)
        self.driver = MediaDriver(ctx, self.clock.epoch_clock_ms, self.clock.nano_clock)
        d = self.driver
        self.shared = CompositeAgent([d.sender, d.receiver, d.conductor])  # MediaDriver's SHARED order
        self.dedicated = [d.receiver, d.conductor, d.sender]  # each its own cycle, in another order
        self.fast: FastCycle | None = None
        if mode == "native":
            self.fast = FastCycle([d.conductor, d.sender, d.receiver], clock=self.clock.nano_clock)
        self.loop = Readiness()
        d.sender.waker = d.receiver.waker = Waker()  # as a runner's: sockets are watched (by self.loop)
        asyncio._set_running_loop(self.loop)  # type: ignore[arg-type]  # the agents watch sockets on it
        self.shared.on_start()
        # Native cycles that did work (a run that never took the native path proves nothing).
        self.native_work = 0
        self.client = Aeron.connect(
            aeron_dir=aeron_dir,
            timeout_s=1,
            use_conductor_agent_invoker=True,
            epoch_clock_ms=self.clock.epoch_clock_ms,
            nano_clock=self.clock.nano_clock,
        )
        self.observed = Observed()
        self.publication: Any = None
        self.subscription: Any = None
        self.in_port = 0

    def open(self) -> Rig:
        channel_out = (
            f"aeron:udp?endpoint=127.0.0.1:{self.peer.rx_port}|term-length={TERM_LENGTH}|mtu={MTU}"
            f"|init-term-id={OUT_INITIAL_TERM}|term-id={OUT_INITIAL_TERM}|term-offset=0|session-id={OUT_SESSION}"
        )
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.bind(("127.0.0.1", 0))
        self.in_port = probe.getsockname()[1]
        probe.close()
        channel_in = f"aeron:udp?endpoint=127.0.0.1:{self.in_port}"
        pub_id = self.client.async_add_exclusive_publication(channel_out, OUT_STREAM)
        sub_id = self.client.async_add_subscription(channel_in, IN_STREAM)
        self.publication = self._until(lambda: self.client.get_exclusive_publication(pub_id))
        self.subscription = self._until(lambda: self.client.get_subscription(sub_id))
        self.settle()
        return self

    def _until(self, get: Callable[[], Any]) -> Any:
        for _ in range(200):
            self.settle()
            found = get()
            if found is not None:
                return found
        raise AssertionError("the driver did not answer the client")

    # --- running ---------------------------------------------------------------------------------

    def _python_cycle(self) -> int:
        fast = self.fast
        if fast is not None:
            fast.before_cycle()
        work = self.shared.do_work()
        if work == 0 and fast is not None:
            fast.after_cycle()  # the runner parks: the streams are declared
        return work

    def _run_agents(self) -> None:
        if self.mode == "dedicated":
            for _ in range(MAX_CYCLES):
                self.loop.deliver()
                if sum(agent.do_work() for agent in self.dedicated) == 0:
                    return
            raise AssertionError("the agents never went idle")
        fast = self.fast
        for _ in range(MAX_CYCLES):
            self.loop.deliver()
            if fast is not None and fast.armed:
                work = fast.run()  # a wake-up while armed: the native cycle first
                if work is not None:  # else handed back: the Python cycle runs now
                    if work == 0:
                        return
                    self.native_work += 1
                    continue
            if self._python_cycle() == 0 and (fast is None or not fast.armed):
                return
        raise AssertionError("the agents never went idle")

    def settle(self) -> None:
        """Cycles until none does work, then the client's duty cycle and a poll of the subscription; again
        until the client has nothing either."""
        for _ in range(100):
            self._run_agents()
            work = self.client.conductor_agent_invoker.do_work()
            if self.subscription is not None:
                work += self.subscription.poll(self._on_message, 1000)
            if work == 0:
                return
        raise AssertionError("the client never went idle")

    def _on_message(self, buffer: Any, offset: int, length: int, header: Any) -> None:
        self.observed.delivered.append((header.session_id, header.position, buffer.get_bytes(offset, length)))

    def step(self, event: Callable[[], None]) -> None:
        """One event, the driver settled after it, and what each peer socket received."""
        event()
        self.settle()
        self.observed.wire_out.append(self.peer.drain(self.peer.rx))
        self.observed.wire_back.append(self.peer.drain(self.peer.tx))

    # --- events ----------------------------------------------------------------------------------

    def offer(self, count: int, length: int = 100) -> None:
        sent = 0
        for n in range(count):
            if self.publication.offer(n.to_bytes(4, "little") * (length // 4)) > 0:
                sent += 1

    def status_message(self, window: int, at: int | None = None) -> None:
        """The peer's SM for the outbound stream: consumed up to ``at`` (default: all it has seen), ``window``."""
        position = self.out_position() if at is None else at
        term_id = OUT_INITIAL_TERM + position // TERM_LENGTH
        sm = encode_status_message(
            OUT_SESSION, OUT_STREAM, term_id, position % TERM_LENGTH, window, RECEIVER_ID
        )
        self.peer.rx.sendto(sm, ("127.0.0.1", self._out_control_port()))

    def nak(self, position: int, length: int) -> None:
        term_id = OUT_INITIAL_TERM + position // TERM_LENGTH
        nak = encode_nak(OUT_SESSION, OUT_STREAM, term_id, position % TERM_LENGTH, length)
        self.peer.rx.sendto(nak, ("127.0.0.1", self._out_control_port()))

    def setup(
        self, session_id: int = IN_SESSION, active_term: int = IN_INITIAL_TERM, term_offset: int = 0
    ) -> None:
        frame = encode_setup(
            term_offset, session_id, IN_STREAM, IN_INITIAL_TERM, active_term, TERM_LENGTH, MTU, 0
        )
        self.peer.tx.sendto(frame, ("127.0.0.1", self.in_port))

    def send_in(self, frames: list[bytes]) -> None:
        """Datagrams to the driver's subscription, in the given order."""
        for frame in frames:
            self.peer.tx.sendto(frame, ("127.0.0.1", self.in_port))

    def peer_gone(self) -> None:
        """The far receiver's socket closes: the publication's next sends meet ICMP port unreachable
        (ECONNREFUSED on its connected socket), short sends."""
        self.peer.rx.close()

    def client_command(self) -> None:
        """A client's command (a counter) into the to-driver ring; its answer waits for the driver's cycle."""
        self.client.async_add_counter(1001, b"", "mid-burst")

    def advance_ms(self, ms: int, step_ms: int = 1) -> None:
        """Time passes ``step_ms`` at a time, the driver settled after each (its timers fire as they would)."""
        for _ in range(ms // step_ms):
            self.clock.advance_ms(step_ms)
            self.settle()

    # --- observing -------------------------------------------------------------------------------

    def out_position(self) -> int:
        """The end of the furthest DATA frame the peer received of the outbound stream."""
        position = 0
        for datagrams in self.observed.wire_out:
            for datagram in datagrams:
                frame_offset = 0
                while frame_offset + HEADER_LENGTH <= len(datagram):
                    length, _, _, kind, term_offset, _, _, term_id, _ = DATA_HEADER.unpack_from(
                        datagram, frame_offset
                    )
                    if kind != HDR_TYPE_DATA or length <= 0:
                        break
                    end = (term_id - OUT_INITIAL_TERM) * TERM_LENGTH + term_offset + ((length + 31) & ~31)
                    position = max(position, end)
                    frame_offset += (length + 31) & ~31
        return position

    def _out_control_port(self) -> int:
        """Where the publication's endpoint receives SMs and NAKs: the port its datagrams come from."""
        source = self.peer.out_source
        if source is None:
            raise AssertionError("the publication has sent nothing yet (no SETUP): no port to answer")
        return source[1]

    def result(self) -> Observed:
        observed = self.observed
        reader = self.driver.counters
        values: dict[str, int] = {}
        timed = {int(c) for c in TIMED}

        def note(counter_id: int, type_id: int, key: bytes, label: str) -> None:
            if not (type_id == 0 and counter_id in timed):
                # by id and type: labels name the run's ports
                values[f"{counter_id}:{type_id}:{label.split(':')[0]}"] = reader.get_counter_value(counter_id)

        reader.for_each(note)
        observed.counters = values
        report = bytes(self.driver.loss_report_file.buffer.get_bytes(0, 4096))
        ports = [self.in_port, self.peer.rx_port, self.peer.tx.getsockname()[1]]
        for port in sorted(ports, key=lambda p: -len(str(p))):
            report = report.replace(f":{port}".encode(), b":PORT")  # the entries name the run's channels
        observed.loss_report = report
        return observed

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            try:
                self.shared.on_close()
                self.driver.close()
                self.peer.close()
            finally:
                asyncio._set_running_loop(None)
