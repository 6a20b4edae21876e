"""RetransmitHandler: the sender's answer to NAKs (Aeron 1.15.1; docs/wire.md section 7, sender step 5).

A NAK whose term offset is negative or past ``term_length - 32`` is invalid (the caller counts it). A NAK for
a (term id, term offset) that already has an action, delayed or lingering, is a duplicate and ignored, as is
any NAK while ``max_actions`` actions exist. Otherwise an action starts: with a delay of 0 (unicast) the
retransmit callback runs at once and the action lingers ``linger_timeout_ns`` (60 ms), so repeats of the
same NAK meanwhile cause no second retransmission; with a delay, the retransmission happens in
``process_timeouts`` once the delay has passed, then the action lingers. The NAK'd length is capped at the
end of the term. Whether the range is still in the sender's term window ([sender position - term length,
sender position)) is for the ``retransmit`` callback (the sender) to check. Sans-IO: time comes as now_ns.
"""

from __future__ import annotations

from collections.abc import Callable

from driver.protocol.feedback_delay import FeedbackDelayGenerator, StaticDelayGenerator
from driver.protocol.frames import HEADER_LENGTH

RETRANSMIT_UNICAST_DELAY_NS = 0
RETRANSMIT_LINGER_NS = 60_000_000
MAX_RETRANSMITS = 16

_DELAYED = 0
_LINGERING = 1

Retransmit = Callable[[int, int, int], None]
"""retransmit(term_id, term_offset, length)"""


class RetransmitHandler:
    __slots__ = ("_actions", "_delay_generator", "_linger_timeout_ns", "_max_actions")

    def __init__(
        self,
        delay_generator: FeedbackDelayGenerator | None = None,
        linger_timeout_ns: int = RETRANSMIT_LINGER_NS,
        max_actions: int = MAX_RETRANSMITS,
    ) -> None:
        self._delay_generator = (
            delay_generator
            if delay_generator is not None
            else StaticDelayGenerator(RETRANSMIT_UNICAST_DELAY_NS, immediate_first=False)
        )
        self._linger_timeout_ns = linger_timeout_ns
        self._max_actions = max_actions
        # (term_id, term_offset) -> [state, expire_ns, length]
        self._actions: dict[tuple[int, int], list[int]] = {}

    @property
    def active_count(self) -> int:
        """Actions delayed or lingering."""
        return len(self._actions)

    def on_nak(
        self,
        term_id: int,
        term_offset: int,
        length: int,
        term_length: int,
        now_ns: int,
        retransmit: Retransmit,
    ) -> bool:
        """Handle one NAK. Returns False when it is invalid (offset outside the term): count it as an invalid
        packet. True otherwise, whether it started a retransmission or was ignored as a duplicate."""
        if term_offset < 0 or term_offset > term_length - HEADER_LENGTH:
            return False
        key = (term_id, term_offset)
        actions = self._actions
        if length <= 0 or key in actions or len(actions) >= self._max_actions:
            return True

        length = min(length, term_length - term_offset)
        delay = self._delay_generator.generate_delay()
        if delay == 0:
            actions[key] = [_LINGERING, now_ns + self._linger_timeout_ns, length]
            retransmit(term_id, term_offset, length)
        else:
            actions[key] = [_DELAYED, now_ns + delay, length]
        return True

    def on_retransmit_received(self, term_id: int, term_offset: int) -> None:
        """Someone else's retransmission of this range was seen: a still delayed action is dropped."""
        action = self._actions.get((term_id, term_offset))
        if action is not None and action[0] == _DELAYED:
            del self._actions[(term_id, term_offset)]

    @property
    def has_actions(self) -> bool:
        """A retransmit is delayed or lingering: :meth:`process_timeouts` has timers to look at."""
        return bool(self._actions)

    def process_timeouts(self, now_ns: int, retransmit: Retransmit) -> int:
        """Retransmit delayed actions that are due, end lingering ones that expired; returns the work done."""
        actions = self._actions
        if not actions:
            return 0
        work_count = 0
        expired = None
        for key, action in actions.items():
            if action[1] - now_ns < 0:
                if action[0] == _DELAYED:
                    action[0] = _LINGERING
                    action[1] = now_ns + self._linger_timeout_ns
                    retransmit(key[0], key[1], action[2])
                else:
                    if expired is None:
                        expired = []
                    expired.append(key)
                work_count += 1
        if expired:
            for key in expired:
                del actions[key]
        return work_count
