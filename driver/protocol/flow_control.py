"""Sender flow control: how far a network publication may send, from the status messages of its receivers.

Aeron 1.15.1 semantics (docs/wire.md section 7, sender step 4):

- ``UnicastFlowControl`` and ``MaxMulticastFlowControl``: sender limit = max(sender limit, SM position +
  receiver window) over every SM, i.e. the fastest receiver sets the pace.
- ``MinMulticastFlowControl``: receivers are tracked by receiver id; the limit is the minimum of their
  (position + window), never moved back by an SM; ``on_idle`` drops receivers silent for longer than the
  receiver timeout (2 s) and returns the minimum of the rest (or the limit unchanged with none left).

``should_linger`` is computed as 1.15.1 does (and, as in 1.15.1, the publication need not consult it).
``has_required_receivers`` and ``receiver_count`` are for the publication's connected state; 1.15.1 has no
group minimum size, so with the default ``group_min_size=0`` it is always True. Sans-IO: time as now_ns.
"""

from __future__ import annotations

from typing import Any, Protocol

from driver.concurrent.logbuffer.log_buffer_descriptor import compute_position
from driver.protocol.frames import StatusMessageFrame

RECEIVER_TIMEOUT_NS = 2_000_000_000


def _sm_position(sm: StatusMessageFrame, initial_term_id: int, position_bits_to_shift: int) -> int:
    """The stream position a status message reports the receiver has consumed to."""
    return compute_position(
        sm.consumption_term_id, sm.consumption_term_offset, position_bits_to_shift, initial_term_id
    )


class FlowControl(Protocol):
    def initialize(self, initial_term_id: int, term_length: int) -> None: ...

    def on_status_message(
        self,
        sm: StatusMessageFrame,
        sender_limit: int,
        initial_term_id: int,
        position_bits_to_shift: int,
        now_ns: int,
        receiver_address: Any = None,
    ) -> int: ...

    def on_idle(
        self, now_ns: int, sender_limit: int, sender_position: int, is_end_of_stream: bool
    ) -> int: ...

    def should_linger(self, now_ns: int) -> bool: ...

    def has_required_receivers(self) -> bool: ...

    @property
    def receiver_count(self) -> int: ...


class _MaxPositionFlowControl:
    """Unicast and max multicast: the most advanced receiver sets the limit."""

    __slots__ = (
        "_last_position",
        "_next_expiry_ns",
        "_receiver_ids",
        "_should_linger",
        "_time_of_last_sm_ns",
        "receiver_timeout_ns",
    )

    def __init__(self, receiver_timeout_ns: int = RECEIVER_TIMEOUT_NS) -> None:
        self.receiver_timeout_ns = receiver_timeout_ns
        self._last_position = 0
        self._time_of_last_sm_ns = 0
        self._should_linger = True
        self._receiver_ids: dict[int, int] = {}  # receiver id -> time of its last SM, for receiver_count only
        self._next_expiry_ns = 0  # no receiver times out before this (an SM only moves a receiver's time on)

    def initialize(self, initial_term_id: int, term_length: int) -> None:
        pass

    def on_status_message(
        self,
        sm: StatusMessageFrame,
        sender_limit: int,
        initial_term_id: int,
        position_bits_to_shift: int,
        now_ns: int,
        receiver_address: Any = None,
    ) -> int:
        position = _sm_position(sm, initial_term_id, position_bits_to_shift)
        if position > self._last_position:
            self._last_position = position
        self._time_of_last_sm_ns = now_ns
        self._receiver_ids[sm.receiver_id] = now_ns
        limit = position + sm.receiver_window
        return limit if limit > sender_limit else sender_limit

    def on_idle(self, now_ns: int, sender_limit: int, sender_position: int, is_end_of_stream: bool) -> int:
        if self._receiver_ids and self._next_expiry_ns - now_ns < 0:
            timeout = self.receiver_timeout_ns
            for receiver_id in [r for r, t in self._receiver_ids.items() if t + timeout - now_ns < 0]:
                del self._receiver_ids[receiver_id]
            if self._receiver_ids:
                self._next_expiry_ns = min(self._receiver_ids.values()) + timeout
        if (
            is_end_of_stream
            and self._should_linger
            and (
                self._last_position >= sender_position
                or self._time_of_last_sm_ns + self.receiver_timeout_ns - now_ns < 0
            )
        ):
            self._should_linger = False
        return sender_limit

    def should_linger(self, now_ns: int) -> bool:
        return self._should_linger

    def has_required_receivers(self) -> bool:
        return True

    @property
    def receiver_count(self) -> int:
        """Distinct receiver ids heard from within the receiver timeout (as of the last ``on_idle``)."""
        return len(self._receiver_ids)


class UnicastFlowControl(_MaxPositionFlowControl):
    __slots__ = ()


class MaxMulticastFlowControl(_MaxPositionFlowControl):
    __slots__ = ()


class _Receiver:
    __slots__ = ("address", "last_position", "last_position_plus_window", "receiver_id", "time_of_last_sm_ns")

    def __init__(self, position: int, limit: int, now_ns: int, receiver_id: int, address: Any) -> None:
        self.last_position = position
        self.last_position_plus_window = limit
        self.time_of_last_sm_ns = now_ns
        self.receiver_id = receiver_id
        self.address = address


class MinMulticastFlowControl:
    """The slowest receiver (by receiver id) sets the limit; receivers time out after ``receiver_timeout_ns``."""

    __slots__ = ("_receivers", "_should_linger", "group_min_size", "receiver_timeout_ns")

    def __init__(self, receiver_timeout_ns: int = RECEIVER_TIMEOUT_NS, group_min_size: int = 0) -> None:
        self.receiver_timeout_ns = receiver_timeout_ns
        self.group_min_size = group_min_size
        self._receivers: dict[int, _Receiver] = {}
        self._should_linger = True

    def initialize(self, initial_term_id: int, term_length: int) -> None:
        pass

    def on_status_message(
        self,
        sm: StatusMessageFrame,
        sender_limit: int,
        initial_term_id: int,
        position_bits_to_shift: int,
        now_ns: int,
        receiver_address: Any = None,
    ) -> int:
        position = _sm_position(sm, initial_term_id, position_bits_to_shift)
        limit = position + sm.receiver_window
        receiver = self._receivers.get(sm.receiver_id)
        if receiver is None:
            self._receivers[sm.receiver_id] = _Receiver(
                position, limit, now_ns, sm.receiver_id, receiver_address
            )
        else:
            if position > receiver.last_position:
                receiver.last_position = position
            receiver.last_position_plus_window = limit
            receiver.time_of_last_sm_ns = now_ns
        min_limit = min(r.last_position_plus_window for r in self._receivers.values())
        return min_limit if min_limit > sender_limit else sender_limit

    def on_idle(self, now_ns: int, sender_limit: int, sender_position: int, is_end_of_stream: bool) -> int:
        receivers = self._receivers
        timeout = self.receiver_timeout_ns
        for receiver_id in [
            r.receiver_id for r in receivers.values() if r.time_of_last_sm_ns + timeout - now_ns < 0
        ]:
            del receivers[receiver_id]
        if not receivers:
            if is_end_of_stream:
                self._should_linger = False
            return sender_limit
        min_position = min(r.last_position for r in receivers.values())
        min_limit = min(r.last_position_plus_window for r in receivers.values())
        if is_end_of_stream and self._should_linger and min_position >= sender_position:
            self._should_linger = False
        return min_limit

    def should_linger(self, now_ns: int) -> bool:
        return self._should_linger

    def has_required_receivers(self) -> bool:
        return len(self._receivers) >= self.group_min_size

    @property
    def receiver_count(self) -> int:
        return len(self._receivers)

    @property
    def receivers(self) -> list[tuple[int, int, int, Any]]:
        """(receiver id, last position, last position + window, address) of each tracked receiver."""
        return [
            (r.receiver_id, r.last_position, r.last_position_plus_window, r.address)
            for r in self._receivers.values()
        ]


# The strategies by the keys of the driver's flow-control settings (DriverContext).
FLOW_CONTROLS: dict[str, type[FlowControl]] = {
    "unicast": UnicastFlowControl,
    "max": MaxMulticastFlowControl,
    "min": MinMulticastFlowControl,
}
