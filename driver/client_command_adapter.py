"""Reads client commands from the to-driver ring buffer and dispatches them to the conductor.

Bad input is the client's fault, never the driver's: a malformed or unknown command is answered with
ON_ERROR (and recorded in the error log) and the driver carries on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.ring_buffer import ManyToOneRingBuffer
from driver.protocol import control_protocol as cp
from driver.protocol.channel_uri import InvalidChannelError

if TYPE_CHECKING:
    from driver.client_proxy import ClientProxy
    from driver.conductor import DriverConductor

COMMAND_DRAIN_LIMIT = 10


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
    ) -> None:
        self._ring = ring
        self._conductor = conductor
        self._client_proxy = client_proxy
        self._error_handler = error_handler
        self.gate: Callable[[int, memoryview], bool] | None = None
        """Sees each command first; True means it keeps the command to ``dispatch`` later itself."""
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
        }

    def receive(self, limit: int = COMMAND_DRAIN_LIMIT) -> int:
        return self._ring.read(self._on_message, limit)

    def _on_message(self, msg_type_id: int, buffer: AtomicBuffer, index: int, length: int) -> None:
        # Copy out: the ring zeroes these bytes once the read completes.
        body = memoryview(buffer.get_bytes(index, length))
        if self.gate is not None and self.gate(msg_type_id, body):
            return
        self.dispatch(msg_type_id, body)

    def dispatch(self, msg_type_id: int, body: memoryview) -> None:
        """Run one command's handler; a refusal is answered with ON_ERROR."""
        length = len(body)
        correlation_id = 0
        if length >= cp.CORRELATED_MESSAGE_LENGTH:
            correlation_id = cp.decode_correlated(body).correlation_id
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
            self._error_handler(e)
            self._client_proxy.on_error(correlation_id, e.code, str(e))
        except InvalidChannelError as e:
            self._error_handler(e)
            self._client_proxy.on_error(correlation_id, e.error_code, str(e))
        except cp.MalformedCommandError as e:
            self._error_handler(e)
            self._client_proxy.on_error(correlation_id, cp.ErrorCode.GENERIC_ERROR, f"malformed command: {e}")
        except Exception as e:
            self._error_handler(e)
            self._client_proxy.on_error(
                correlation_id, cp.ErrorCode.GENERIC_ERROR, f"{type(e).__name__} : {e}"
            )
