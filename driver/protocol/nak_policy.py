"""UnicastNakPolicy: when and how a unicast receiver repeats NAKs so that any 1.15.1 sender acts on them
(docs/wire.md section 7, "Unicast NAK policy"). Sans-IO: time comes in as ``now_ns``.

A 1.15.1 sender (Java's ``RetransmitHandler`` and ours) keeps each NAK's (term id, term offset) for a linger of
60 ms after retransmitting and ignores a NAK with the same key meanwhile; it also ignores every NAK while 16
keys are held. Aeron's receiver repeats an unanswered NAK after exactly 60 ms with the same key, so the repeat
races the sender's linger and is often ignored; and a receiver NAKing many gaps at once can run the sender out
of keys. Either way a gap then waits a further 60 ms while the receiver window stays shut: at 5 % random loss
that, not the bandwidth, sets the throughput.

This policy keeps the wire as it is and changes only what the receiver asks for:

- Repeats come after a few measured repair times (NAK sent -> gap filled), not after a fixed 60 ms: a lost
  retransmission costs a few round trips.
- A repeat inside the sender's linger uses another key: the same gap NAKed from an earlier frame boundary the
  receiver knows (a scan's rebuild offset or the end of a gap, where a received frame starts), so the range
  asked for covers the gap and the sender acts on it at once.
- Gaps due at the same time are asked for with one NAK spanning them (the data between is sent again), and
  at most ``budget`` keys are asked for per linger period; beyond it, due gaps wait until a key frees.
"""

from __future__ import annotations

SENDER_LINGER_NS = 60_000_000
"""How long a 1.15.1 sender ignores a NAK key it has acted on (RETRANSMIT_UNICAST_LINGER default)."""
SENDER_MAX_RETRANSMITS = 16
LINGER_MARGIN_NS = 5_000_000
"""The sender's linger starts when the NAK arrives and ends on its next timeout check: allow for both."""
DEFAULT_BUDGET = SENDER_MAX_RETRANSMITS - 4
MIN_RENAK_NS = 2_000_000
RENAK_FACTOR = 3
MAX_BOUNDARIES = 64


class UnicastNakPolicy:
    """Per image: the NAK keys recently asked for, known frame boundaries, and the repair time estimate."""

    __slots__ = (
        "_boundaries",
        "_boundary_term",
        "_max_renak_ns",
        "_repair_ns",
        "_sent",
        "budget",
        "linger_ns",
    )

    def __init__(
        self,
        max_renak_ns: int,
        budget: int = DEFAULT_BUDGET,
        linger_ns: int = SENDER_LINGER_NS + LINGER_MARGIN_NS,
    ) -> None:
        if budget < 1:
            raise ValueError(f"budget must be at least 1: {budget}")
        self._max_renak_ns = max_renak_ns
        self.budget = budget
        self.linger_ns = linger_ns
        self._repair_ns: int | None = None
        self._sent: dict[tuple[int, int], int] = {}
        self._boundary_term: int | None = None
        self._boundaries: list[int] = []

    # --- what the detector tells it -------------------------------------------------------------

    def on_repaired(self, nak_ns: int, now_ns: int) -> None:
        """A gap NAKed at ``nak_ns`` was found filled at ``now_ns``: one repair time sample."""
        sample = max(0, now_ns - nak_ns)
        estimate = self._repair_ns
        self._repair_ns = sample if estimate is None else estimate + (sample - estimate) // 8

    def add_boundary(self, term_id: int, term_offset: int) -> None:
        """A received frame starts at ``term_offset`` of ``term_id``."""
        if term_id != self._boundary_term:
            self._boundary_term = term_id
            self._boundaries = []
        boundaries = self._boundaries
        if term_offset not in boundaries:
            boundaries.append(term_offset)
            if len(boundaries) > MAX_BOUNDARIES:
                boundaries.remove(min(boundaries))

    # --- what it answers --------------------------------------------------------------------------

    @property
    def repair_ns(self) -> int | None:
        """Smoothed NAK-to-repair time, None before the first sample."""
        return self._repair_ns

    def renak_delay_ns(self) -> int:
        """How long to wait for a NAK's repair before asking again."""
        if self._repair_ns is None:
            return self._max_renak_ns
        return min(self._max_renak_ns, max(MIN_RENAK_NS, RENAK_FACTOR * self._repair_ns))

    def keys_held(self, now_ns: int) -> int:
        """NAK keys the sender may still hold (asked for within its linger)."""
        self._prune(now_ns)
        return len(self._sent)

    def next_free_ns(self, now_ns: int) -> int:
        """When the oldest held key frees (``now_ns`` if none is held)."""
        self._prune(now_ns)
        return min(self._sent.values(), default=now_ns - self.linger_ns) + self.linger_ns

    def choose(self, term_id: int, term_offset: int, length: int, now_ns: int) -> tuple[int, int] | None:
        """(offset, length) to NAK for the gap, or None to wait (no key the sender would act on is free).
        The gap's own key when free, else the nearest earlier known boundary whose key is free."""
        self._prune(now_ns)
        sent = self._sent
        if (term_id, term_offset) not in sent:
            return term_offset, length
        if term_id == self._boundary_term:
            earlier = [b for b in self._boundaries if b < term_offset and (term_id, b) not in sent]
            if earlier:
                start = max(earlier)
                return start, term_offset + length - start
        return None

    def on_nak_sent(self, term_id: int, term_offset: int, now_ns: int) -> None:
        self._sent[(term_id, term_offset)] = now_ns

    def _prune(self, now_ns: int) -> None:
        sent = self._sent
        if sent:
            horizon = now_ns - self.linger_ns
            expired = [key for key, t in sent.items() if t - horizon <= 0]
            for key in expired:
                del sent[key]
