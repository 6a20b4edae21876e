"""Feedback delay generators: how long a receiver waits before NAKing and a sender before retransmitting.

Aeron 1.15.1 ``FeedbackDelayGenerator``, ``StaticDelayGenerator`` and ``OptimalMulticastDelayGenerator``
(RFC 5401 section 3.5 randomised back-off). Delays are in nanoseconds; randomness comes from an injected
``random.Random`` so tests can seed it.
"""

from __future__ import annotations

import math
import random
from typing import Protocol

NAK_UNICAST_DELAY_NS = 60_000_000
NAK_MULTICAST_MAX_BACKOFF_NS = 60_000_000
NAK_MULTICAST_GROUP_SIZE = 10
NAK_MULTICAST_GRTT = 10  # Aeron passes 10 (ms) beside a backoff in ns; it only feeds calculated_n


class FeedbackDelayGenerator(Protocol):
    def generate_delay(self) -> int: ...

    def should_feedback_immediately(self) -> bool: ...


class StaticDelayGenerator:
    """A constant delay; with ``immediate_first`` a new gap is NAKed at once and ``delay_ns`` apart after."""

    __slots__ = ("_delay_ns", "_immediate")

    def __init__(self, delay_ns: int, immediate_first: bool = True) -> None:
        if delay_ns < 0:
            raise ValueError(f"delay must not be negative: {delay_ns}")
        self._delay_ns = delay_ns
        self._immediate = immediate_first

    def generate_delay(self) -> int:
        return self._delay_ns

    def should_feedback_immediately(self) -> bool:
        return self._immediate


class OptimalMulticastDelayGenerator:
    """Randomised delay in [0, max_backoff_ns) with the density of RFC 5401 optimal multicast feedback:

    lambda = ln(group_size) + 1; x = U(0, lambda/T) + lambda / (T (e^lambda - 1));
    delay = (T / lambda) ln(x (e^lambda - 1) T / lambda). Never immediate."""

    __slots__ = ("_base_x", "_calculated_n", "_constant_t", "_factor_t", "_rand_max", "_rng")

    def __init__(
        self,
        max_backoff_ns: float = NAK_MULTICAST_MAX_BACKOFF_NS,
        group_size: float = NAK_MULTICAST_GROUP_SIZE,
        rng: random.Random | None = None,
        *,
        grtt: float = NAK_MULTICAST_GRTT,
    ) -> None:
        if max_backoff_ns <= 0 or group_size < 1 or grtt <= 0:
            raise ValueError(
                f"need max_backoff > 0, group_size >= 1, grtt > 0: {max_backoff_ns}, {group_size}, {grtt}"
            )
        lam = math.log(group_size) + 1.0
        self._calculated_n = math.exp(1.2 * lam / (2.0 * max_backoff_ns / grtt))
        self._rand_max = lam / max_backoff_ns
        self._base_x = lam / (max_backoff_ns * (math.exp(lam) - 1.0))
        self._constant_t = max_backoff_ns / lam
        self._factor_t = (math.exp(lam) - 1.0) * (max_backoff_ns / lam)
        self._rng = rng if rng is not None else random.Random()

    def generate_new_optimal_delay(self) -> float:
        x = self._rng.random() * self._rand_max + self._base_x
        return self._constant_t * math.log(x * self._factor_t)

    def generate_delay(self) -> int:
        return int(self.generate_new_optimal_delay())

    def should_feedback_immediately(self) -> bool:
        return False

    @property
    def calculated_n(self) -> float:
        """Estimated feedback messages per RTT (as Aeron computes it)."""
        return self._calculated_n
