"""Seeded in-driver loss injection for tests and experiments, like Aeron's ``RandomLossGenerator`` (used by
its debug channel endpoints), with a frame-type filter.

The receiver asks :meth:`LossGenerator.should_drop` for each datagram before dispatching it; a True answer
means "behave as if it never arrived". The type is that of the datagram's first frame (offset 6), which is
also what dispatch looks at (docs/wire.md section 1). Datagrams too short to have a type are never dropped,
so the receiver still counts them as invalid.

Determinism: one draw from ``random.Random(seed)`` per datagram whose type passes the filter, so the same
seed and the same sequence of eligible datagrams give the same drops; datagrams of other types do not
consume draws.

Driver settings (properties, as Aeron's ``DebugChannelEndpointConfiguration`` names the first two; the
environment forms are AERON_DEBUG_RECEIVE_DATA_LOSS_RATE etc.)::

    aeron.debug.receive.data.loss.rate         0.0..1.0, default 0 (off)
    aeron.debug.receive.data.loss.seed         int, default -1 (= seeded from the OS, not reproducible)
    aeron.debug.receive.data.loss.frame.types  comma list of type names or numbers, e.g. DATA,PAD or 1;
                                               default empty = every type (ours; not in Aeron)

The driver builds one from its DriverContext settings (the one place settings are parsed).
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from driver.protocol.frames import MIN_HEADER_LENGTH, TYPE_OFFSET

FRAME_TYPE_NAMES = {"PAD": 0, "DATA": 1, "NAK": 2, "SM": 3, "ERR": 4, "SETUP": 5, "RTTM": 6, "EXT": 0xFFFF}


class LossGenerator:
    """Drop a datagram with probability ``rate`` when its first frame's type is in ``frame_types``
    (None or empty: any type). ``seed`` None or -1 seeds from the OS (not reproducible)."""

    __slots__ = ("_random", "dropped", "frame_types", "rate", "seed", "seen")

    def __init__(
        self, rate: float, seed: int | None = None, frame_types: Iterable[int] | None = None
    ) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"loss rate {rate} is outside 0.0..1.0")
        self.rate = float(rate)
        self.seed = None if seed is None or seed == -1 else int(seed)
        types = frozenset(frame_types) if frame_types else None
        if types is not None:
            bad = sorted(t for t in types if not 0 <= t <= 0xFFFF)
            if bad:
                raise ValueError(f"frame types {bad} are not uint16 values")
        self.frame_types = types
        self._random = random.Random(self.seed)
        self.seen = 0
        """Datagrams that were eligible (type passed the filter)."""
        self.dropped = 0
        """Datagrams this generator said to drop."""

    def should_drop(self, datagram: memoryview | bytes | bytearray) -> bool:
        """True when ``datagram`` is to be dropped (one random draw if its type is eligible)."""
        if self.frame_types is not None:
            if len(datagram) < MIN_HEADER_LENGTH:
                return False
            if (datagram[TYPE_OFFSET] | (datagram[TYPE_OFFSET + 1] << 8)) not in self.frame_types:
                return False
        elif len(datagram) < MIN_HEADER_LENGTH:
            return False
        self.seen += 1
        if self._random.random() < self.rate:
            self.dropped += 1
            return True
        return False

    def __repr__(self) -> str:
        types = "any" if self.frame_types is None else sorted(self.frame_types)
        return (
            f"LossGenerator(rate={self.rate}, seed={self.seed}, frame_types={types}, "
            f"seen={self.seen}, dropped={self.dropped})"
        )


def parse_frame_types(text: str) -> frozenset[int] | None:
    """``"DATA,PAD"`` / ``"1,0"`` / ``"0x1"`` -> {1, 0}; empty -> None (every type)."""
    types: set[int] = set()
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if item.upper() in FRAME_TYPE_NAMES:
            types.add(FRAME_TYPE_NAMES[item.upper()])
            continue
        try:
            types.add(int(item, 0))
        except ValueError:
            names = ", ".join(FRAME_TYPE_NAMES)
            raise ValueError(f"frame type {item!r} is neither a number nor one of {names}") from None
    return frozenset(types) or None
