"""FastCycle: the SHARED driver's steady-state duty cycle as one native call (native/include/amd_cycle.h).

A Python duty cycle over the conductor, sender and receiver costs tens of microseconds, most of it deciding
that nothing but data moved. Between two Python cycles, while the agents have declared their streams plain
(unicast publications with nothing but data to send, receive endpoints with one socket and known images, no
queued command, no gap to repair), a wake-up of the runner calls :meth:`run` instead: C sends what publishers
committed, reads and rebuilds what arrived, and hands back to the Python cycle when anything else happened
(a client command, a kilobyte of positions moved, a status message or NAK readable, a datagram for no known
image, a flow-control stall) or when the agents' timers are due (at most ``interval_ns`` after the last
Python cycle). The Python cycle then starts by taking over what the native one did (:meth:`before_cycle`: the
images' frame times; a publication's send needs no hand-over, the native cycle runs its very send step,
driver/data_step.py) and ends, when the runner parks, by declaring the streams again (:meth:`after_cycle`).

Why it pays: on a small machine the driver shares a core with busy-spinning clients, and every microsecond
it runs is one they wait for (tools/bench/shell_launch.sh -p, driver_cpu_us_per_rtt).
The one owner of the native ``amd_cycle_*`` functions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from driver._native import ffi, lib
from driver.agent.work_probe import PROBE_CYCLE_INTERVAL_NS
from driver.concurrent.word_watch import Word
from driver.conductor import SWEEP_MOVED_BYTES
from driver.data_step import SendStep, send_step_array, word_pointer
from driver.media.udp_transport import UdpTransport
from driver.native_declaration import NativeParticipant, ReceiveSlot, TakeBack

BATCH = lib.AMD_CYCLE_BATCH
STREAM_BYTES_PER_US = 256
"""Positions moving faster than this (bytes per microsecond, summed over the sweep's words, over at least
STREAM_WINDOW_NS) are a stream: its cycles hand back at once (a kilobyte moved), so the runner is not armed and
the declaration is not paid for."""
STREAM_WINDOW_NS = 100_000


class FastCycle:
    """Speaks for one SHARED runner's agents, each a ``NativeParticipant`` (driver/agent/runner.py calls it)."""

    def __init__(
        self,
        participants: Sequence[NativeParticipant],
        interval_ns: int = PROBE_CYCLE_INTERVAL_NS,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        """``participants``: the runner's agents (driver/native_declaration.py), the one that declares the words
        whose change needs the Python cycle first (the conductor): a stream is told from its declaration."""
        self._participants = tuple(participants)
        self._interval_ns = interval_ns
        self._clock = clock
        self._cycle = ffi.new("amd_cycle *")
        self._cycle.moved_limit = SWEEP_MOVED_BYTES
        # The cffi arrays the struct points into live as long as these references.
        self._keep_words: tuple[object, ...] = ()
        self._keep_publications: object = None
        self._keep_endpoints: list[object] = []
        self._words_version: tuple[int, ...] = ()
        self._snapshot_ns = 0  # when the words' values were last taken
        self._steps: list[SendStep] = []  # the publications' send steps (their structs outlive its use)
        self._control: list[UdpTransport] = []
        self._endpoints: list[ReceiveSlot] = []
        self._unhandled = ffi.new("int32_t[]", 1)  # the receive steps' left indexes (sized by their batch)
        self._stopped: tuple[ReceiveSlot, int, list[int]] | None = None  # a batch left to Python
        self.armed = False
        """Whether :meth:`run` may run a cycle; False sends every wake-up to the Python cycle."""
        self._ran = False  # a native cycle ran since the last Python cycle: it may have sent or inserted
        self.cycles = 0
        """Native cycles run to the end (with or without work)."""
        self.handbacks = 0
        """Native cycles that handed back to the Python cycle."""

    # --- around a Python cycle ------------------------------------------------------------------

    def before_cycle(self) -> None:
        """A Python cycle starts: what the native cycles did since the last one becomes the agents' again."""
        self.armed = False
        if not self._ran:
            return
        self._ran = False
        taken_inserts = []
        for i, slot in enumerate(self._endpoints):
            inserted = self._cycle.endpoints[i].inserted
            counts = [inserted[index] for index in range(len(slot.images))]
            if any(counts):
                taken_inserts.append((slot, counts))
                for index in range(len(counts)):
                    inserted[index] = 0
        taken = TakeBack(self._clock(), taken_inserts, self._stopped)
        self._stopped = None
        for participant in self._participants:
            participant.take_back(taken)

    def after_cycle(self) -> None:
        """A Python cycle ended and its runner parks: declare the streams for the native cycles until the next
        Python one, or leave it disarmed when any agent needs the Python cycle."""
        self.armed = False
        now_ns = self._clock()
        cycle = self._cycle
        declarations = []
        for participant in self._participants:
            declaration = participant.native_declaration()
            if declaration is None:
                return
            if not declarations and (declaration.words_version,) == self._words_version[:1]:
                elapsed_ns = max(now_ns - self._snapshot_ns, STREAM_WINDOW_NS)
                if lib.amd_cycle_moved(cycle) * 1000 > STREAM_BYTES_PER_US * elapsed_ns:
                    lib.amd_cycle_snapshot(cycle)  # a stream: its cycles would hand back at once
                    self._snapshot_ns = now_ns
                    return
            declarations.append(declaration)
        version = tuple(declaration.words_version for declaration in declarations)
        if version != self._words_version:
            self._set_words(
                [word for declaration in declarations for word in declaration.full_words],
                [word for declaration in declarations for word in declaration.moved_words],
            )
            self._words_version = version
        else:
            lib.amd_cycle_snapshot(cycle)
        self._set_publications(
            [step for declaration in declarations for step in declaration.send_steps],
            [transport for declaration in declarations for transport in declaration.control],
        )
        endpoints = [slot for declaration in declarations for slot in declaration.receive]
        if endpoints != self._endpoints:
            self._set_endpoints(endpoints)
        self._snapshot_ns = now_ns
        limits = [declaration.moved_limit for declaration in declarations if declaration.moved_limit is not None]
        cycle.moved_limit = max(1, min(limits, default=SWEEP_MOVED_BYTES))
        due = [declaration.due_ns for declaration in declarations if declaration.due_ns is not None]
        cycle.full_due_ns = min(now_ns + self._interval_ns, *due)
        self.armed = True

    # --- a wake-up ------------------------------------------------------------------------------

    def run(self) -> int | None:
        """One native cycle: the work it did (0: none), or None when the Python cycle must run now (it may
        have sent first: that is accounted)."""
        for transport in self._control:
            if transport.may_hold_data:  # a status message or NAK: the sender's
                return None
        self._ran = True
        result = lib.amd_cycle_run(self._cycle, self._clock())
        if result >= 0:
            self.cycles += 1
            return result
        self.handbacks += 1
        if result == BATCH:
            self._finish_batch()
        return None

    def pending(self) -> bool:
        """After a native cycle that did work: does a publication have more to send, or did a command come?"""
        return lib.amd_cycle_pending(self._cycle) != 0

    # --- declaring the streams ------------------------------------------------------------------

    def _finish_batch(self) -> None:
        """A batch a native cycle left: taken back by its agent before the Python cycle (:meth:`before_cycle`)."""
        cycle = self._cycle
        index = cycle.stopped_endpoint
        native = cycle.endpoints[index]
        unhandled = [self._unhandled[i] for i in range(native.unhandled_count)]
        self._stopped = (self._endpoints[index], native.batch_count, unhandled)

    def _set_words(self, full_words: Sequence[Word], moved_words: Sequence[Word]) -> None:
        cycle = self._cycle
        full = ffi.new("int64_t *[]", [word_pointer(w) for w in full_words] or 1)
        full_seen = ffi.new("int64_t[]", max(len(full_words), 1))
        moved = ffi.new("int64_t *[]", [word_pointer(w) for w in moved_words] or 1)
        moved_seen = ffi.new("int64_t[]", max(len(moved_words), 1))
        cycle.full_words, cycle.full_seen, cycle.full_word_count = full, full_seen, len(full_words)
        cycle.moved_words, cycle.moved_seen, cycle.moved_word_count = moved, moved_seen, len(moved_words)
        lib.amd_cycle_snapshot(cycle)
        self._keep_words = (full, full_seen, moved, moved_seen)

    def _set_publications(self, steps: list[SendStep], control: list[UdpTransport]) -> None:
        self._control = control
        if steps == self._steps:
            return
        native = send_step_array(steps)
        self._cycle.publications = native
        self._cycle.publication_count = len(steps)
        self._keep_publications = native
        self._steps = steps

    def _set_endpoints(self, endpoints: list[ReceiveSlot]) -> None:
        native = ffi.new("amd_cycle_endpoint[]", max(len(endpoints), 1))
        keep: list[object] = [native]
        max_datagrams = max((slot.batch.max_datagrams for slot in endpoints), default=1)
        if len(self._unhandled) < max_datagrams:
            self._unhandled = ffi.new("int32_t[]", max_datagrams)
        for i, slot in enumerate(endpoints):
            batch = slot.batch
            entry = native[i]
            inserted = ffi.new("int32_t[]", max(len(slot.images), 1))
            keep += [slot.step, inserted]
            entry.step, entry.inserted = slot.step.state, inserted
            entry.fd = slot.fd
            (
                entry.buffers,
                entry.offsets,
                entry.lengths,
                entry.sources,
                entry.addrs,
                entry.addr_lengths,
                entry.received,
            ) = batch.native_arrays()
            entry.slot_length = batch.slot_length
            entry.max_messages = batch.max_messages
            entry.max_datagrams = batch.max_datagrams
            entry.unhandled = self._unhandled
        self._cycle.endpoints = native
        self._cycle.endpoint_count = len(endpoints)
        self._keep_endpoints = keep
        self._endpoints = endpoints
