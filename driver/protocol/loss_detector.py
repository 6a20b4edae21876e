"""LossDetector: finds gaps in a rebuilt term and decides when each is NAKed (Aeron 1.15.1, extended).

Aeron tracks one gap: the first one after the rebuild position. A new gap (a different term id or offset)
becomes active with a deadline of now (unicast) or now + a random delay (multicast); when the deadline
passes the loss handler is called and the deadline moves on by the delay (60 ms unicast).

Beyond Aeron, every gap between the rebuild position and the high-water mark (up to
``max_gaps``) is tracked with its own deadline, so one scan may NAK several gaps: on lossy links with a
long RTT, recovery no longer waits one round trip per gap. Two refinements keep the extra NAKs useful:

- A gap at an offset already tracked keeps its deadline (and takes the current length), as in Aeron.
- A new gap lying inside the range of a gap tracked in the previous scan is what remains of that gap after
  part of a repair arrived; it inherits the old deadline instead of being NAKed at once, so a repair that
  is still arriving does not trigger a NAK (and a duplicate retransmission) for its own remainder.

Gaps no longer found (filled) are forgotten. Sans-IO: time comes in as ``now_ns``.

With a :class:`~driver.protocol.nak_policy.UnicastNakPolicy` (unicast images), repeats follow the measured
repair time, keys the sender still holds are avoided and NAKs per linger period are budgeted (docs/wire.md
section 7, "Unicast NAK policy"); the detector tells the policy the frame boundaries and repairs it sees.
"""

from __future__ import annotations

from collections.abc import Callable

from driver.concurrent.atomic_buffer import AtomicBuffer, FrameBatch
from driver.protocol.feedback_delay import (
    FeedbackDelayGenerator,
    OptimalMulticastDelayGenerator,
    StaticDelayGenerator,
)
from driver.protocol.nak_policy import UnicastNakPolicy
from driver.util.bit_util import to_int32

__all__ = [
    "DEFAULT_MAX_GAPS",
    "FeedbackDelayGenerator",
    "LossDetector",
    "OptimalMulticastDelayGenerator",
    "StaticDelayGenerator",
]

DEFAULT_MAX_GAPS = 16


class LossDetector:
    """Per image. ``on_gap(term_id, term_offset, length)`` is called when a NAK for that gap is due now."""

    __slots__ = (
        "_batch",
        "_deadlines",
        "_delay_generator",
        "_lengths",
        "_max_gaps",
        "_nak_times",
        "_on_gap",
        "_policy",
        "_term_id",
    )

    def __init__(
        self,
        delay_generator: FeedbackDelayGenerator,
        on_gap: Callable[[int, int, int], None],
        max_gaps: int = DEFAULT_MAX_GAPS,
        policy: UnicastNakPolicy | None = None,
    ) -> None:
        if max_gaps < 1:
            raise ValueError(f"max_gaps must be at least 1: {max_gaps}")
        self._delay_generator = delay_generator
        self._on_gap = on_gap
        self._max_gaps = max_gaps
        self._batch = FrameBatch(max_gaps)
        self._term_id: int | None = None
        # Tracked gaps of self._term_id, in term order: offset -> deadline, offset -> length.
        self._deadlines: dict[int, int] = {}
        self._lengths: dict[int, int] = {}
        self._policy = policy
        # With a policy: offset -> when that gap was last NAKed, for repair time samples.
        self._nak_times: dict[int, int] = {}

    @property
    def policy(self) -> UnicastNakPolicy | None:
        return self._policy

    @property
    def has_gaps(self) -> bool:
        """A gap is being tracked (a NAK may fall due): scan even when nothing new arrived."""
        return bool(self._deadlines)

    @property
    def active_gaps(self) -> list[tuple[int, int, int, int]]:
        """(term_id, term_offset, length, deadline_ns) of each tracked gap, for tests and diagnostics."""
        term_id = self._term_id
        return [(term_id, o, self._lengths[o], d) for o, d in self._deadlines.items()]  # type: ignore[misc]

    def scan(
        self,
        term_buffer: AtomicBuffer,
        rebuild_position: int,
        hwm_position: int,
        now_ns: int,
        term_length_mask: int,
        position_bits_to_shift: int,
        initial_term_id: int,
    ) -> tuple[int, int]:
        """Scan the term of ``rebuild_position`` up to the high-water mark (or the term end if the hwm is in a
        later term). Returns (work count: gaps newly found + NAKs due, new rebuild position), where the new
        rebuild position is the term base plus the offset of the first gap (or of the end of the contiguous
        frames): never below ``rebuild_position``."""
        rebuild_offset = rebuild_position & term_length_mask
        if rebuild_position >= hwm_position:
            if self._deadlines:
                self._forget()
            return 0, rebuild_position

        rebuild_term_count = rebuild_position >> position_bits_to_shift
        hwm_term_count = hwm_position >> position_bits_to_shift
        limit_offset = (
            hwm_position & term_length_mask if rebuild_term_count == hwm_term_count else term_length_mask + 1
        )

        new_offset, count = term_buffer.scan_for_gaps(
            rebuild_offset, limit_offset, self._max_gaps, self._batch
        )
        new_rebuild_position = rebuild_position - rebuild_offset + new_offset
        term_id = to_int32(initial_term_id + rebuild_term_count)
        if count == 0:
            if self._deadlines:
                if self._policy is not None and term_id == self._term_id:
                    self._sample_repairs((), now_ns)
                self._forget()
            return 0, new_rebuild_position

        if term_id != self._term_id:
            self._forget()
            self._term_id = term_id
        if self._policy is not None:
            return self._scan_with_policy(term_id, rebuild_offset, count, now_ns), new_rebuild_position

        flat = self._batch.pairs(count)
        old_deadlines = self._deadlines
        old_lengths = self._lengths
        deadlines: dict[int, int] = {}
        lengths: dict[int, int] = {}
        old_ranges = [(o, o + old_lengths[o], d) for o, d in old_deadlines.items()] if old_deadlines else ()
        generator = self._delay_generator
        on_gap = self._on_gap
        work_count = 0
        cursor = 0

        for i in range(0, 2 * count, 2):
            offset = flat[i]
            length = flat[i + 1]
            deadline = old_deadlines.get(offset)
            if deadline is None:
                # A remainder of a gap tracked last time inherits its deadline; otherwise it is new.
                while cursor < len(old_ranges) and old_ranges[cursor][1] <= offset:
                    cursor += 1
                if cursor < len(old_ranges) and old_ranges[cursor][0] < offset:
                    deadline = old_ranges[cursor][2]
                else:
                    work_count += 1
                    if generator.should_feedback_immediately():
                        deadline = now_ns
                    else:
                        deadline = now_ns + generator.generate_delay()
            if deadline - now_ns <= 0:
                on_gap(term_id, offset, length)
                deadline = now_ns + generator.generate_delay()
                work_count += 1
            deadlines[offset] = deadline
            lengths[offset] = length

        self._deadlines = deadlines
        self._lengths = lengths
        return work_count, new_rebuild_position

    def _scan_with_policy(self, term_id: int, rebuild_offset: int, count: int, now_ns: int) -> int:
        """The loop of :meth:`scan` for a unicast image with a :class:`UnicastNakPolicy`."""
        policy = self._policy
        assert policy is not None
        flat = self._batch.pairs(count)
        gaps = [(flat[i], flat[i + 1]) for i in range(0, 2 * count, 2)]
        if self._sample_repairs(gaps, now_ns):
            # A repair was measured: NAKs sent before it (the first ones wait Aeron's delay) are repeated
            # by the new estimate.
            renak_ns = policy.renak_delay_ns()
            for offset, nak_ns in self._nak_times.items():
                if offset in self._deadlines and self._deadlines[offset] - (nak_ns + renak_ns) > 0:
                    self._deadlines[offset] = nak_ns + renak_ns
        policy.add_boundary(term_id, rebuild_offset)
        old_deadlines = self._deadlines
        old_lengths = self._lengths
        old_ranges = [(o, o + old_lengths[o], d) for o, d in old_deadlines.items()] if old_deadlines else ()
        deadlines: dict[int, int] = {}
        lengths: dict[int, int] = {}
        due: list[tuple[int, int]] = []
        work_count = 0
        cursor = 0
        for offset, length in gaps:
            policy.add_boundary(term_id, offset + length)
            deadline = old_deadlines.get(offset)
            if deadline is None:
                while cursor < len(old_ranges) and old_ranges[cursor][1] <= offset:
                    cursor += 1
                if cursor < len(old_ranges) and old_ranges[cursor][0] < offset:
                    deadline = old_ranges[cursor][2]
                else:
                    work_count += 1
                    deadline = now_ns
            if deadline - now_ns <= 0:
                due.append((offset, length))
            deadlines[offset] = deadline
            lengths[offset] = length
        self._deadlines = deadlines
        self._lengths = lengths
        if due and (due[0][0] == gaps[0][0] or policy.keys_held(now_ns) < policy.budget // 2):
            # With keys scarce, gaps behind the first wait for it: it blocks the subscriber, and one NAK
            # then covers them all.
            work_count += self._nak_due(term_id, due, now_ns)
        return work_count

    def _nak_due(self, term_id: int, due: list[tuple[int, int]], now_ns: int) -> int:
        """One NAK for the gaps due now, from the first one's start to the last one's end (a sender's keys,
        not bandwidth, are what runs out under loss); postponed until a key frees when the budget is spent.
        Returns the NAKs sent."""
        policy = self._policy
        assert policy is not None
        offset = due[0][0]
        length = due[-1][0] + due[-1][1] - offset
        choice = None
        if policy.keys_held(now_ns) < policy.budget:
            choice = policy.choose(term_id, offset, length, now_ns)
        if choice is None:
            retry = max(policy.next_free_ns(now_ns), now_ns + 1)
            for gap_offset, _ in due:
                self._deadlines[gap_offset] = retry
            return 0
        nak_offset, nak_length = choice
        self._on_gap(term_id, nak_offset, nak_length)
        policy.on_nak_sent(term_id, nak_offset, now_ns)
        renak_ns = now_ns + policy.renak_delay_ns()
        for gap_offset, _ in due:
            self._deadlines[gap_offset] = renak_ns
            self._nak_times[gap_offset] = now_ns
        return 1

    def _sample_repairs(self, gaps: list[tuple[int, int]] | tuple[()], now_ns: int) -> bool:
        """Every NAKed gap no new gap overlaps was repaired: one repair time sample each (returns whether
        there was one). Gaps beyond the scan's reach (it stops after ``max_gaps``) are not judged."""
        nak_times = self._nak_times
        if not nak_times:
            return False
        sampled = False
        policy = self._policy
        assert policy is not None
        reach = gaps[-1][0] + gaps[-1][1] if len(gaps) >= self._max_gaps else None
        remaining: dict[int, int] = {}
        for offset, nak_ns in nak_times.items():
            end = offset + self._lengths.get(offset, 0)
            if reach is not None and end > reach:
                remaining[offset] = nak_ns
            elif any(o < end and offset < o + n for o, n in gaps):
                if any(o == offset for o, _ in gaps):
                    remaining[offset] = nak_ns
                else:  # partly repaired: its remainder carries the NAK time on
                    for o, n in gaps:
                        if o < end and offset < o + n:
                            remaining.setdefault(o, nak_ns)
            else:
                policy.on_repaired(nak_ns, now_ns)
                sampled = True
        self._nak_times = remaining
        return sampled

    def _forget(self) -> None:
        self._deadlines = {}
        self._lengths = {}
        self._nak_times = {}
