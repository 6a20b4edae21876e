"""Reads client commands from the to-driver ring buffer and dispatches them to the conductor.

Bad input is the client's fault, never the driver's: a malformed or unknown command is answered with
ON_ERROR (and recorded in the error log) and the driver carries on. A record the ring's reader finds
corrupt (a lying length, a bad type id: docs/ringbuffers.md section 1.1) is counted in "Errors" and
logged, and nothing is answered (it names no one to answer). ON_ERRORs go to every client on the
broadcast buffer, so they are budgeted (docs/commands.md section 8): a client that floods the driver
with bad commands cannot lap the others.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.counters import AtomicCounter, CountersFullError
from driver.concurrent.ring_buffer import ManyToOneRingBuffer
from driver.protocol import control_protocol as cp
from driver.protocol.channel_uri import InvalidChannelError

if TYPE_CHECKING:
    from driver.client_proxy import ClientProxy
    from driver.conductor import DriverConductor

COMMAND_DRAIN_LIMIT = 10

ERROR_WINDOW_NS = 1_000_000_000
MAX_ERRORS_PER_CLIENT_PER_WINDOW = 1_000
"""ON_ERRORs one client id may cause per window; past it its errors are counted, not answered."""
ERROR_BYTES_PER_WINDOW_DIVISOR = 8
"""All clients together get ON_ERRORs of at most broadcast capacity / 8 bytes per window, so errors
alone take 8 windows (8 s) to lap a client that has stopped reading (ids are easy to forge)."""


class CorruptCommandRecordError(Exception):
    """A to-driver record that failed the ring reader's checks (logged, never raised)."""


class CommandFloodError(Exception):
    """A client past its ON_ERROR budget (logged once per window, never raised)."""


class ErrorResponseBudget:
    """How many ON_ERROR responses may go out: per client id, and in bytes for all, per window."""

    __slots__ = ("_bytes_left", "_bytes_per_window", "_counts", "_per_client", "_window_end_ns", "_window_ns")

    def __init__(self, per_client: int, bytes_per_window: int, window_ns: int) -> None:
        self._per_client = per_client
        self._bytes_per_window = bytes_per_window
        self._window_ns = window_ns
        self._window_end_ns: int | None = None
        self._bytes_left = bytes_per_window
        self._counts: dict[int | None, int] = {}

    @property
    def per_client(self) -> int:
        return self._per_client

    @property
    def bytes_per_window(self) -> int:
        return self._bytes_per_window

    def take(self, client_id: int | None, now_ns: int) -> int:
        """Count one error of ``client_id``; returns 0 if it may be answered, else how many of this client's
        errors this window went unanswered (1 for the first one: the moment to log the flood)."""
        if self._window_end_ns is None or now_ns >= self._window_end_ns:
            self._window_end_ns = now_ns + self._window_ns
            self._bytes_left = self._bytes_per_window
            self._counts.clear()
        count = self._counts[client_id] = self._counts.get(client_id, 0) + 1
        if count <= self._per_client and self._bytes_left > 0:
            return 0
        return max(1, count - self._per_client)

    def spend(self, length: int) -> None:
        self._bytes_left -= length


class ControlProtocolError(Exception):
    """A client request the driver refuses, with the ErrorCode sent back to the client."""

    def __init__(self, code: cp.ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class CommandDeferred(Exception):
    """Raised by a handler that will answer later (a large log is still being made): no reply now."""


class ClientCommandAdapter:
    def __init__(
        self,
        ring: ManyToOneRingBuffer,
        conductor: DriverConductor,
        client_proxy: ClientProxy,
        error_handler: Callable[[BaseException], None],
        errors_counter: AtomicCounter | None = None,
        nano_clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self._ring = ring
        self._conductor = conductor
        self._client_proxy = client_proxy
        self._error_handler = error_handler
        self.gate: Callable[[int, memoryview], bool] | None = None
        """Sees each command first; True means it keeps the command to ``dispatch`` later itself."""
        self._errors_counter = errors_counter
        self._nano_clock = nano_clock
        self._now_ns = 0
        self.budget = ErrorResponseBudget(
            MAX_ERRORS_PER_CLIENT_PER_WINDOW,
            client_proxy.capacity // ERROR_BYTES_PER_WINDOW_DIVISOR,
            ERROR_WINDOW_NS,
        )
        self.suppressed_errors = 0
        """ON_ERRORs not sent because their client (or all clients) were past the budget."""
        self.position_after_corrupt = -1
        """The ring's head after the last read that skipped a corrupt record: a reader stuck there waits at
        zeros inside the corrupt record's claim rather than behind a producer (docs/ringbuffers.md 1.1)."""
        self._corrupt_in_read = False
        c = conductor
        self._handlers: dict[int, Callable[[memoryview], None]] = {
            cp.Command.ADD_PUBLICATION: lambda b: c.on_add_publication(
                cp.decode_publication(b), exclusive=False
            ),
            cp.Command.ADD_EXCLUSIVE_PUBLICATION: lambda b: c.on_add_publication(
                cp.decode_publication(b), exclusive=True
            ),
            cp.Command.REMOVE_PUBLICATION: lambda b: c.on_remove_publication(cp.decode_remove(b)),
            cp.Command.ADD_SUBSCRIPTION: lambda b: c.on_add_subscription(cp.decode_subscription(b)),
            cp.Command.REMOVE_SUBSCRIPTION: lambda b: c.on_remove_subscription(cp.decode_remove(b)),
            cp.Command.CLIENT_KEEPALIVE: lambda b: c.on_client_keepalive(cp.decode_correlated(b).client_id),
            cp.Command.ADD_DESTINATION: lambda b: c.on_add_destination(cp.decode_destination(b)),
            cp.Command.REMOVE_DESTINATION: lambda b: c.on_remove_destination(cp.decode_destination(b)),
            cp.Command.ADD_COUNTER: lambda b: c.on_add_counter(cp.decode_counter(b)),
            cp.Command.REMOVE_COUNTER: lambda b: c.on_remove_counter(cp.decode_remove(b)),
            cp.Command.CLIENT_CLOSE: lambda b: c.on_client_close(cp.decode_correlated(b).client_id),
            cp.Command.ADD_RCV_DESTINATION: lambda b: c.on_add_rcv_destination(cp.decode_destination(b)),
            cp.Command.REMOVE_RCV_DESTINATION: lambda b: c.on_remove_rcv_destination(
                cp.decode_destination(b)
            ),
            cp.Command.TERMINATE_DRIVER: lambda b: c.on_terminate_driver(cp.decode_terminate_driver(b)),
        }

    def receive(self, now_ns: int | None = None, limit: int = COMMAND_DRAIN_LIMIT) -> int:
        self._now_ns = self._nano_clock() if now_ns is None else now_ns
        self._corrupt_in_read = False
        try:
            return self._ring.read(self._on_message, limit, self._on_corrupt_record)
        finally:
            if self._corrupt_in_read:
                self.position_after_corrupt = self._ring.consumer_position()

    def _on_corrupt_record(self, index: int, skipped: int, reason: str) -> None:
        self._corrupt_in_read = True
        self._error_handler(
            CorruptCommandRecordError(
                f"corrupt to-driver record skipped ({skipped} bytes from index {index}): {reason}"
            )
        )

    def _on_message(self, msg_type_id: int, buffer: AtomicBuffer, index: int, length: int) -> None:
        # Copy out: the ring zeroes these bytes once the read completes.
        body = memoryview(buffer.get_bytes(index, length))
        if self.gate is not None and self.gate(msg_type_id, body):
            return
        self.dispatch(msg_type_id, body)

    def dispatch(self, msg_type_id: int, body: memoryview) -> None:
        """Run one command's handler; a refusal is answered with ON_ERROR (within the error budget)."""
        length = len(body)
        client_id = None
        correlation_id = 0
        if length >= cp.CORRELATED_MESSAGE_LENGTH:
            correlated = cp.decode_correlated(body)
            client_id, correlation_id = correlated.client_id, correlated.correlation_id
        handler = self._handlers.get(msg_type_id)
        try:
            if handler is None:
                raise ControlProtocolError(
                    cp.ErrorCode.GENERIC_ERROR,
                    f"unknown command type id {msg_type_id:#x} ({length}-byte body); "
                    "this driver speaks the Aeron 1.15.1 client protocol",
                )
            handler(body)
        except CommandDeferred:
            pass
        except ControlProtocolError as e:
            self._refuse(client_id, correlation_id, e.code, str(e), e)
        except CountersFullError as e:  # one wording wherever the counters run out: cause and fix
            self._refuse(client_id, correlation_id, cp.ErrorCode.GENERIC_ERROR, str(e), e)
        except InvalidChannelError as e:
            self._refuse(client_id, correlation_id, e.error_code, str(e), e)
        except cp.MalformedCommandError as e:
            self._refuse(client_id, correlation_id, cp.ErrorCode.GENERIC_ERROR, f"malformed command: {e}", e)
        except Exception as e:
            self._refuse(
                client_id, correlation_id, cp.ErrorCode.GENERIC_ERROR, f"{type(e).__name__} : {e}", e
            )

    def _refuse(
        self, client_id: int | None, correlation_id: int, code: int, message: str, error: BaseException
    ) -> None:
        """Log and answer a refused command, within the error budget (docs/commands.md section 8)."""
        unanswered = self.budget.take(client_id, self._now_ns)
        if unanswered:
            self.suppressed_errors += 1
            if self._errors_counter is not None:
                self._errors_counter.increment()
            if unanswered == 1:
                who = "commands without a client id" if client_id is None else f"client {client_id}"
                self._error_handler(
                    CommandFloodError(
                        f"{who} caused more ON_ERRORs than the budget of {self.budget.per_client} per client "
                        f"and {self.budget.bytes_per_window} bytes for all per {ERROR_WINDOW_NS // 1_000_000} ms: "
                        "its further errors this window are counted in Errors but not answered or logged"
                    )
                )
            return
        self._error_handler(error)
        self.budget.spend(self._client_proxy.on_error(correlation_id, code, message))
