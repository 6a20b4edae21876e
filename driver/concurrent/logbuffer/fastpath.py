"""The client's per-message hot paths in C, called without cffi (native/src/amd_fastpath.c, native/README.md).

A cffi call costs more than a Python function call; with one per offer and a Python loop per polled fragment,
a Python client spent most of its time crossing into C and walking frames, not appending or delivering. The
extension ``_fastpath`` takes one call per offer (and one per ``offer_many`` of many messages) and calls a
poll's fragment handler from C. It is optional: without it (not built, or ``ENABLED`` set False before the
publications and images are made, as the tests do to run both paths) the cffi paths are used; both give the
same results.
"""

from __future__ import annotations

import ctypes
from collections.abc import Awaitable, Callable
from typing import Any

try:
    from driver.concurrent.logbuffer import _fastpath
except ImportError:  # not built (native/README.md): the cffi paths serve
    _fastpath = None

AVAILABLE = _fastpath is not None
ENABLED = AVAILABLE
"""Read when a publication, image or term reader is made; False selects the cffi paths."""


def active() -> bool:
    return ENABLED and AVAILABLE


def status() -> str:
    """One line for users and smoke tests: whether the C fast path serves, and how."""
    if _fastpath is None:
        return "fast path not built for this Python: the cffi paths serve (same results, slower)"
    if not getattr(_fastpath, "REUSES_INTS", 0):
        return "fast path loaded; this Python's int layout is not known to it, so results are new ints"
    return "fast path loaded"


def bind_offers(
    owner: Any,
    address: int,
    closed: int,
    on_error: Callable[[int, Any], int],
    wait: Callable[..., Awaitable[int]],
    terms: tuple[Any, Any, Any],
    *,
    exclusive: bool = False,
) -> tuple[Callable[..., int], ...] | None:
    """``offer(data, reserved_value=0)``, ``offer_many(messages)``, ``offer_async(data, **kwargs)`` and
    ``try_claim(length, buffer_claim)`` bound to one native publication struct (``address``: an
    amd_publication_t, or an amd_exclusive_publication_t when ``exclusive``) and its closed flag (``closed``, an
    int32 that stops every later offer when nonzero); both live as long as ``owner``, which the offers keep.
    ``offer_async`` offers once: an awaitable already done with the position when that went, else
    ``wait(data, **kwargs)`` (a coroutine that waits out back pressure). ``try_claim`` wraps the BufferClaim
    around one of ``terms`` (the three term buffers).

    They are builtin methods of one C object, which the interpreter calls without an intermediate Python call;
    the int an offer returns is reused by the next offer once the caller has dropped it (no allocation)."""
    if not active():
        return None
    assert _fastpath is not None
    offers_type = _fastpath.ExclusiveOffers if exclusive else _fastpath.Offers
    offers = offers_type(owner, address, closed, on_error, wait, terms)
    return offers.offer, offers.offer_many, offers.offer_async, offers.try_claim


def int32_release_store() -> Callable[[int, int], None] | None:
    """``put_int32_release(address, value)``, a release store at an address (a fast-path claim's commit), or
    None when the extension is not built (then no claim has an address)."""
    return _fastpath.put_int32_release if _fastpath is not None else None


def poller() -> Callable[..., tuple[int, int]] | None:
    """``poll(handler, term_buffer, term_address, capacity, offset, limit, header, error_handler)``, or None."""
    return _fastpath.poll if active() and _fastpath is not None else None


def scanner() -> Callable[..., tuple[int, int]] | None:
    """``scan(term_address, capacity, offset, offsets, lengths, flags)`` for batch polls, or None."""
    return _fastpath.scan if active() and _fastpath is not None else None


def message_poller() -> Callable[..., tuple[int, int, int]] | None:
    """``messages(message_type, term_address, capacity, offset, limit, term_begin_position, session_id,
    stream_id, out)``: whole messages appended to ``out`` as ``message_type`` tuples, or None."""
    return _fastpath.messages if active() and _fastpath is not None else None


def image_poll(
    owner: Any,
    terms: tuple[Any, ...],
    addresses: tuple[int, ...],
    term_length: int,
    header: Any,
    position_address: int,
    position: int,
    on_batch: Callable[[], None],
    message_type: type,
    session_id: int,
    stream_id: int,
) -> Any | None:
    """An ``ImagePoll``: one image's ``poll(handler, fragment_limit)`` and ``poll_messages(out, fragment_limit,
    assembler, spare=None)`` (``message_type`` tuples of ``session_id``, ``stream_id``) as one C call each, its
    ``position`` (and ``closed``, ``batch_pending``) kept in the object and each new position release-stored at
    ``position_address`` (the subscriber position counter); ``on_batch()`` runs before a poll while
    ``batch_pending``. None off the fast path."""
    if not active():
        return None
    assert _fastpath is not None
    return _fastpath.ImagePoll(
        owner,
        terms,
        addresses,
        term_length,
        header,
        position_address,
        position,
        on_batch,
        message_type,
        session_id,
        stream_id,
    )


def message_stream_type() -> type | None:
    """``MessageStream(items, refill, poll=None)``: an async iterator handing over ``items[next:]`` from C; used
    up, it calls ``poll()`` (how many messages it put in ``items``) and, when that brought none, awaits
    ``refill()`` (which refills ``items``, sets ``next`` and returns the first message), or None."""
    return _fastpath.MessageStream if active() and _fastpath is not None else None


def message_stream_base() -> type | None:
    """The C MessageStream type whenever the extension is built (ENABLED or not), for a subclass defined once at
    import; ``message_stream_type`` says whether to use it."""
    return _fastpath.MessageStream if _fastpath is not None else None


class ChangeWaiter:
    """Sleeps without holding the GIL until an int64 in shared memory changes (checked every ``poll_s``), the
    waiter is stopped, or a timeout passes: the client's conductor thread idles here, so that a thread spinning
    on offers or polls does not have to hand the GIL over at each of its idle wake-ups (each handover costs
    the spinning thread far more than the wake-up itself on a busy machine)."""

    __slots__ = ("_poll_ns", "_stop", "_stop_address")

    def __init__(self, poll_s: float = 0.005) -> None:
        self._stop = ctypes.c_int32(0)
        self._stop_address = ctypes.addressof(self._stop)
        self._poll_ns = int(poll_s * 1e9)

    def wait(self, address: int, last: int, timeout_s: float) -> bool:
        """True once the int64 at ``address`` is not ``last`` (or the waiter was stopped), False on timeout."""
        assert _fastpath is not None
        return _fastpath.wait_for_change(
            address, last, self._stop_address, int(timeout_s * 1e9), self._poll_ns
        )

    def stop(self) -> None:
        """Ends the current and every later wait at once."""
        self._stop.value = 1


def change_waiter() -> ChangeWaiter | None:
    """A ChangeWaiter, or None without the fast path (then sleep a fixed interval instead)."""
    return ChangeWaiter() if active() else None
