"""WorkProbe: may a parked agent skip its next duty cycle? A check of a few words instead of a Python cycle.

A driver's agent finds work in three ways: a datagram (the loop's socket readiness wakes its runner), a command
from another agent (its queue), or a word a client wrote in shared memory (a publication's term tail, a
subscriber's position, the to-driver ring's tail). Only the last has to be looked for, and a duty cycle that
looks costs 20-40 µs of Python while the look itself is a few loads (driver/concurrent/word_watch.py). So when a
park ends on its timer, the runner asks the probe first and parks again when nothing moved, also after a cycle
that did work (what a cycle leaves to do is queued, which the probe sees: a status message or NAK the conductor
scheduled, a command for another agent; or it comes back as a datagram). A full cycle still runs at least every
``cycle_interval_ns`` for the agents' timers (heartbeats, status messages, liveness), and after a wake by I/O.
Asking after work too saved the idle cycle each round trip of a request and its answer used to run
(tools/bench/rtt_split.py: 0.99 -> 0.03 idle cycles per round trip).

Why it pays: on a small machine with busy-spinning clients every microsecond an agent runs is taken from a
client, and a Python cycle that finds nothing also delays noticing the offer that lands during it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from driver.concurrent.word_watch import WatchVersion, Word, WordWatch

PROBE_CYCLE_INTERVAL_NS = 1_000_000
"""The longest a probing runner goes without a full duty cycle: the agents' timers (heartbeats, status
messages, NAK and liveness timeouts) then keep the millisecond granularity the longest park gives them."""


@runtime_checkable
class Watched(Protocol):
    """An agent the probe can speak for (the driver's conductor, sender and receiver)."""

    watch_version: WatchVersion

    def watched_words(self) -> list[Word]: ...

    def has_queued_work(self) -> bool: ...


class WorkProbe:
    """Speaks for ``agents``: :meth:`before_cycle` at the start of each full duty cycle, :meth:`is_quiet`
    when a park ends on its timer."""

    def __init__(
        self,
        agents: Sequence[Watched],
        cycle_interval_ns: int = PROBE_CYCLE_INTERVAL_NS,
        spin_ns: int = 0,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        """``spin_ns``: after a duty cycle that did a little work, watch this long without giving up the CPU
        before parking (:meth:`moves_soon`); 0 = park at once."""
        self._agents = tuple(agents)
        self.spin_ns = spin_ns
        self._cycle_interval_ns = cycle_interval_ns
        self._clock = clock
        self._watch = WordWatch()
        self._version_objects = tuple(agent.watch_version for agent in self._agents)
        self._versions = -1
        self._last_cycle_ns = clock()

    @classmethod
    def for_agents(
        cls, agents: Sequence[object], cycle_interval_ns: int = PROBE_CYCLE_INTERVAL_NS, spin_ns: int = 0
    ) -> WorkProbe | None:
        """A probe for these agents when every one of them can be watched; None when any cannot (an agent
        added to the driver's runner, the archive's for instance, whose work the probe cannot see)."""
        watched = [agent for agent in agents if isinstance(agent, Watched)]
        return cls(watched, cycle_interval_ns, spin_ns) if watched and len(watched) == len(agents) else None

    def _versions_now(self) -> int:
        # Versions only grow, so their sum changes whenever any of them does.
        return sum([version.value for version in self._version_objects])

    def before_cycle(self) -> None:
        """A full duty cycle starts: what moves from now on is news to the next :meth:`is_quiet`."""
        versions = self._versions_now()
        if versions != self._versions:
            # Before any load: a publication the conductor frees later is then no longer watched.
            self._watch.watch([word for agent in self._agents for word in agent.watched_words()])
            self._versions = versions
        else:
            self._watch.changed()
        self._last_cycle_ns = self._clock()

    def is_quiet(self) -> bool:
        """True when a duty cycle now would find nothing: nothing queued, no watched word moved since the last
        full cycle started, and that cycle was less than the interval ago."""
        if self._clock() - self._last_cycle_ns >= self._cycle_interval_ns or self._must_run():
            return False
        return not self._watch.changed()

    def moves_soon(self) -> bool:
        """After a duty cycle that did a little work: True when something is queued or a watched word moves
        within ``spin_ns`` (run the next cycle now), False when the agent should park."""
        return self._must_run() or self._watch.spin(self.spin_ns)

    def _must_run(self) -> bool:
        """Something queued between agents, or the word set changed (then the cycle rebuilds the watch before
        any load, so a freed log is never read): the next cycle runs whatever the words say."""
        return self._versions_now() != self._versions or any(agent.has_queued_work() for agent in self._agents)
