"""IpcPublication: a publication whose log is read directly by local subscribers (``aeron:ipc``).

The driver's part is small: keep the publisher limit at the slowest subscriber plus the term window,
clean behind the slowest subscriber, sample the producer position, and manage the lifecycle
ACTIVE -> INACTIVE (last client link gone, end of stream set) -> LINGER (drained) -> freed.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from driver.concurrent.counters import AtomicCounter
from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.concurrent.logbuffer.log_buffer_unblocker import BlockedLogWatch, unblock
from driver.concurrent.word_watch import WatchVersion
from driver.protocol.untethered import UntetheredSubscriptions, window_limit
from driver.raw_log import RawLog

if TYPE_CHECKING:
    from driver.conductor import DriverConductor

BUSY_TRIP_INTERVAL_NS = 4_000_000
"""A limit move counts as conductor work (poll again soon) only when it follows the previous move by less than
this. A move after a longer quiet is routine: the next one needs window/8 more bytes consumed (8 MiB with the
default 64 MiB IPC term, ~10 ms at full speed), so the idle backoff carries on to its ≤ 1 ms parks instead of
restarting at spins and microsecond parks -- CPU the busy-spinning clients need on a small machine. Small
windows trip at every ≤ 1 ms park and so still count as work, keeping the conductor polling fast for them."""


class State(enum.Enum):
    ACTIVE = "active"
    INACTIVE = "inactive"
    LINGER = "linger"


class IpcPublication:
    def __init__(
        self,
        registration_id: int,
        channel: str,
        session_id: int,
        stream_id: int,
        tag: int | None,
        raw_log: RawLog,
        publisher_pos: AtomicCounter,
        publisher_limit: AtomicCounter,
        term_window_length: int,
        linger_timeout_ns: int,
        unblock_timeout_ns: int,
        unblocked_publications: AtomicCounter,
        now_ns: int,
        is_exclusive: bool,
        limit_watch: dict[IpcPublication, None] | None = None,
        watch_version: WatchVersion | None = None,
    ) -> None:
        self.registration_id = registration_id
        self.channel = channel
        self.session_id = session_id
        self.stream_id = stream_id
        self.tag = tag
        self.raw_log = raw_log
        self.publisher_pos = publisher_pos
        self.publisher_limit = publisher_limit
        self.is_exclusive = is_exclusive
        self.state = State.ACTIVE
        self.ref_count = 0
        self.reached_end_of_life = False
        meta = raw_log.meta_data
        self._meta = meta
        self._term_buffers = raw_log.term_buffers
        self._term_length = raw_log.term_length
        self._bits = lbd.position_bits_to_shift(self._term_length)
        self._initial_term_id = lbd.initial_term_id(meta)
        self._term_window_length = term_window_length
        self._trip_gain = term_window_length // 8
        self._trip_limit = 0
        self._time_of_last_trip_ns = now_ns
        self._linger_timeout_ns = linger_timeout_ns
        self._time_of_last_state_change_ns = now_ns
        self._unblocked_publications = unblocked_publications
        # The conductor polls the limits of only these, every duty cycle: an active publication with
        # subscribers. Without one the limit changes only when the last subscriber leaves (set then), so
        # thousands of idle publications cost nothing between timer ticks.
        self._limit_watch: dict[IpcPublication, None] = {} if limit_watch is None else limit_watch
        self.subscriber_positions: list[AtomicCounter] = []
        self._watch_version = watch_version or WatchVersion()
        self.untethered = UntetheredSubscriptions()
        self.consumer_position = self.producer_position()
        self._clean_position = self.consumer_position
        self._blocked_log_watch = BlockedLogWatch(self.consumer_position, now_ns, unblock_timeout_ns)

    @property
    def log_file_name(self) -> str:
        return self.raw_log.file_name

    @property
    def mtu_length(self) -> int:
        return lbd.mtu_length(self._meta)

    @property
    def term_length(self) -> int:
        return self._term_length

    def producer_position(self) -> int:
        return lbd.producer_position(self._meta, self._term_length, self._bits, self._initial_term_id)

    def join_position(self) -> int:
        """Where a new subscriber starts: the furthest any subscriber has read (never cleaned data)."""
        return self.consumer_position

    # --- subscribers -------------------------------------------------------------------------

    def add_subscriber(self, position: AtomicCounter) -> None:
        lbd.set_is_connected(self._meta, True)
        self.subscriber_positions = [*self.subscriber_positions, position]
        self._watch_version.bump()
        if self.state is State.ACTIVE:
            self._limit_watch[self] = None

    def remove_subscriber(self, position: AtomicCounter) -> None:
        self.consumer_position = max(self.consumer_position, position.get())
        self.drop_subscriber_position(position)
        self.untethered.remove(position)
        position.close()
        if not self.subscriber_positions and not self.untethered:
            lbd.set_is_connected(self._meta, False)
            self._limit_watch.pop(self, None)
            if self.state is State.ACTIVE:
                self._hold_limit_at_consumer()

    # --- untethered subscribers (driver/protocol/untethered.py) ----------------------------------

    def untethered_join_position(self) -> int:
        return self.join_position()

    def untethered_behind_limit(self) -> int:
        return window_limit(self.consumer_position, self._term_window_length)

    def drop_subscriber_position(self, position: AtomicCounter) -> None:
        """Out of flow control (a new list: other agents may be iterating the old one)."""
        self.subscriber_positions = [p for p in self.subscriber_positions if p is not position]
        self._watch_version.bump()

    def restore_subscriber_position(self, position: AtomicCounter) -> None:
        self.subscriber_positions = [*self.subscriber_positions, position]
        self._watch_version.bump()

    # --- links from clients ------------------------------------------------------------------

    def inc_ref(self) -> None:
        self.ref_count += 1

    def dec_ref(self) -> None:
        self.ref_count -= 1
        if self.ref_count == 0:
            self.state = State.INACTIVE
            self._limit_watch.pop(self, None)
            producer_position = self.producer_position()
            if self.publisher_limit.get() > producer_position:
                self.publisher_limit.set(producer_position)
            lbd.set_end_of_stream_position(self._meta, producer_position)

    # --- duty cycle ----------------------------------------------------------------------------

    def update_publisher_limit(self, now_ns: int) -> int:
        """Limit = slowest subscriber + term window, moved only in steps of window/8 (fewer writes), as 1.15.1.

        Returns the work done for the idle backoff: 1 for a move within ``BUSY_TRIP_INTERVAL_NS`` of the previous
        one, else 0 (the limit and cleaning are the same either way)."""
        positions = self.subscriber_positions
        if positions:
            values = [p.get() for p in positions]
            min_position = min(values)
            max_position = max(values)
            if max_position > self.consumer_position:
                self.consumer_position = max_position
            proposed_limit = min_position + self._term_window_length
            if proposed_limit > self._trip_limit:
                # Clean first (1.15.1 cleans after): the publisher may write into what the new limit opens at once.
                self._clean_buffer(min_position)
                self.publisher_limit.set(proposed_limit)
                self._trip_limit = proposed_limit + self._trip_gain
                time_since_last_trip_ns = now_ns - self._time_of_last_trip_ns
                self._time_of_last_trip_ns = now_ns
                return 1 if time_since_last_trip_ns < BUSY_TRIP_INTERVAL_NS else 0
        else:
            self._hold_limit_at_consumer()
        return 0

    def _hold_limit_at_consumer(self) -> None:
        """No subscriber: the publisher may not pass what the last one read."""
        if self.publisher_limit.get() > self.consumer_position:
            self._trip_limit = self.consumer_position
            self.publisher_limit.set(self.consumer_position)

    def _clean_buffer(self, min_consumer_position: int) -> None:
        """Zero everything every subscriber has read, so the terms can be reused. 1.15.1 zeroes at most to the
        end of one term per call; when the conductor runs seldom (an embedded driver sharing the GIL with a
        busy client) that let the cleaning fall over two terms behind, and a subscriber then read a frame
        left from three terms before just past the publisher's tail. All of it is zeroed here, one term's
        piece at a time, before the limit lets the publisher reuse any of it."""
        clean_position = self._clean_position
        term_length = self._term_length
        while (length := min_consumer_position - clean_position) > 0:
            term_offset = clean_position & (term_length - 1)
            length = min(length, term_length - term_offset)
            index = lbd.index_by_position(clean_position, self._bits)
            self._term_buffers[index].set_zero(term_offset, length)
            clean_position += length
        self._clean_position = clean_position

    def on_time_event(self, now_ns: int, conductor: DriverConductor) -> None:
        if self.state is State.ACTIVE:
            producer_position = self.producer_position()
            self.publisher_pos.set(producer_position)
            if not self.is_exclusive and self._blocked_log_watch.check(
                self._term_buffers,
                self._meta,
                self._term_length,
                producer_position,
                self.consumer_position,
                now_ns,
            ):
                self._unblocked_publications.increment()
        elif self.state is State.INACTIVE:
            producer_position = self.producer_position()
            self.publisher_pos.set(producer_position)
            if all(p.get() >= producer_position for p in self.subscriber_positions):
                self.state = State.LINGER
                self._time_of_last_state_change_ns = now_ns
                conductor.on_ipc_publication_drained(self)
                # Every subscriber has read it all: the linger needs the metadata, not the terms' memory.
                self.raw_log.release_terms()
            elif unblock(self._term_buffers, self._meta, self.consumer_position, self._term_length):
                # No publisher is left to finish a claim: pad over it at once so subscribers can drain.
                self._unblocked_publications.increment()
        elif now_ns - self._time_of_last_state_change_ns > self._linger_timeout_ns:
            self.reached_end_of_life = True

    def cap_linger(self, max_ns: int) -> None:
        """Its client is gone: linger no longer than ``max_ns`` (from when it started lingering)."""
        self._linger_timeout_ns = min(self._linger_timeout_ns, max_ns)

    def close(self) -> None:
        """Free the counters (subscriber positions included) and delete the log file."""
        self._limit_watch.pop(self, None)
        self.publisher_pos.close()
        self.publisher_limit.close()
        for position in [*self.subscriber_positions, *(e.position for e in self.untethered.entries)]:
            position.close()  # resting untethered positions are out of the list
        self.subscriber_positions = []
        self._watch_version.bump()
        self.raw_log.free()
