"""The one interface between the agents and the native steady-state cycle (driver/fast_cycle.py).

Each agent is a :class:`NativeParticipant`: after a Python cycle that parks, it declares what it can hand over
until its next Python cycle (:meth:`~NativeParticipant.native_declaration`: its send and receive steps, the words
whose change needs it, when its timers are due), or None when it needs the Python cycle; before the next Python
cycle it takes back what the native cycles did (:meth:`~NativeParticipant.take_back`). The steps themselves are
the agents' own (driver/data_step.py): what a native cycle sends or receives is accounted by the very code the
agent runs, so what is taken back is only what Python keeps (frame times, a batch left half done).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

from driver.concurrent.word_watch import Word
from driver.data_step import ReceiveStep, SendStep

if TYPE_CHECKING:
    from driver.media.receive_channel_endpoint import ReceiveChannelEndpoint
    from driver.media.udp_batch import ReceiveBatch
    from driver.media.udp_transport import UdpTransport
    from driver.publication_image import PublicationImage


class ReceiveSlot(NamedTuple):
    """A receive endpoint the native cycle reads (one socket) and rebuilds through its receive step."""

    endpoint: ReceiveChannelEndpoint
    fd: int
    step: ReceiveStep
    images: list[PublicationImage]
    batch: ReceiveBatch  # the receiver's own: a batch the native cycle leaves is finished from it


class Declaration(NamedTuple):
    """What one agent hands the native cycle until its next Python cycle."""

    due_ns: int | None = None
    """When its timers need the Python cycle (None: none)."""
    full_words: Sequence[Word] = ()
    """Words whose change needs the Python cycle (the to-driver ring's tail: a command)."""
    moved_words: Sequence[Word] = ()
    """Positions whose movement (a kilobyte in all) needs the Python cycle (the conductor's sweep)."""
    words_version: int = 0
    """Changes whenever the words do."""
    moved_limit: int | None = None
    """How far the moved words may move in all before the Python cycle must run (None: no limit of its own)."""
    send_steps: Sequence[SendStep] = ()
    """Publications the native cycle sends for."""
    control: Sequence[UdpTransport] = ()
    """Sockets whose readiness needs the Python cycle (status messages, NAKs)."""
    receive: Sequence[ReceiveSlot] = ()
    """Endpoints the native cycle receives for."""


class TakeBack(NamedTuple):
    """What the native cycles did since the last Python cycle that the agents keep in Python."""

    now_ns: int
    inserted: Sequence[tuple[ReceiveSlot, Sequence[int]]]
    """Per receive slot the native cycles ran: per image of it, the datagrams they inserted."""
    stopped: tuple[ReceiveSlot, int, list[int]] | None
    """A batch a native cycle left to Python: (its receive slot, its datagrams, the indexes the step left)."""


class NativeParticipant(Protocol):
    def native_declaration(self) -> Declaration | None:
        """What this agent hands the native cycle now, or None while it needs the Python cycle."""
        ...

    def take_back(self, taken: TakeBack) -> None:
        """The native cycles ran since this agent's last Python cycle: keep what is Python's."""
        ...
