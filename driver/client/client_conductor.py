"""The client's side of the command protocol: sends commands, matches responses, handles events, keeps alive.

Nothing here waits. A command is sent with what to do when the driver answers (``send``); the duty cycle
(``do_work``) reads the driver's events, hands each response to its command's callbacks, fails commands the
driver has not answered within the driver timeout, and sends keepalives. Blocking calls are built on top
of this by the Aeron facade (send, then drive the duty cycle until answered), so there is one code path.

One lock serialises the duty cycle, which runs on the client's own background thread, in the caller
(``use_conductor_invoker=True`` + ``aeron.do_work()``), or as an agent on an event loop
(``use_conductor_agent_invoker=True``), as Aeron's ClientConductor.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from driver.client.exceptions import (
    AeronError,
    ClientClosedError,
    ClientTimeoutError,
    DriverTimeoutError,
    RegistrationError,
)
from driver.concurrent.broadcast import BroadcastReceiver, CopyBroadcastReceiver
from driver.concurrent.ring_buffer import ManyToOneRingBuffer
from driver.protocol import control_protocol as cp

KEEPALIVE_INTERVAL_MS = 500
CLOSE_RETRY_S = 1.0
CLOSE_RETRY_SLEEP_S = 0.001
"""``close()`` retries CLIENT_CLOSE into a full to-driver ring this long, then goes without it."""

log = logging.getLogger(__name__)


def epoch_ms() -> int:
    return time.time_ns() // 1_000_000


ResponseHandler = Callable[[int, Any], None]
"""``on_response(event_type_id, decoded_response)``."""
ErrorHandler = Callable[[AeronError], None]
"""``on_error(error)``: RegistrationError (the driver refused) or DriverTimeoutError (no answer)."""


@dataclass(slots=True)
class _PendingCommand:
    msg_type_id: int
    deadline_ns: int
    on_response: ResponseHandler
    on_error: ErrorHandler


class ClientConductor:
    def __init__(
        self,
        to_driver: ManyToOneRingBuffer,
        to_clients: BroadcastReceiver,
        client_id: int,
        driver_timeout_ms: int,
        on_available_counter: Callable[[int, int], None] | None = None,
        on_unavailable_counter: Callable[[int, int], None] | None = None,
        epoch_clock_ms: Callable[[], int] = epoch_ms,
        nano_clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.lock = threading.RLock()
        self._to_driver = to_driver
        self._events = CopyBroadcastReceiver(to_clients)
        self.client_id = client_id
        self._driver_timeout_ms = driver_timeout_ms
        self.epoch_clock_ms = epoch_clock_ms
        self.nano_clock = nano_clock
        self._time_of_last_keepalive_ms = 0
        self._pending: dict[int, _PendingCommand] = {}
        self.on_available_counter = on_available_counter
        self.on_unavailable_counter = on_unavailable_counter
        self.on_available_image: Callable[[cp.ImageBuffersReady], None] | None = None
        self.on_unavailable_image: Callable[[cp.ImageMessage], None] | None = None
        self.on_duty_cycle: Callable[[int], int] | None = None
        """Called with the nano clock's time at the end of each duty cycle (linger of closed resources)."""
        self.in_duty_cycle = False
        self.closed = False
        self.failure: AeronError | None = None

    # --- commands ------------------------------------------------------------------------------

    def check_open(self) -> None:
        if self.failure is not None:
            raise self.failure
        if self.closed:
            raise ClientClosedError("the Aeron client is closed")

    def _send(self, msg_type_id: int, body: bytes) -> None:
        if not self._to_driver.write(msg_type_id, body):
            name = cp.Command(msg_type_id).name if msg_type_id in cp.Command.__members__.values() else "command"
            raise AeronError(
                f"could not send {name} ({msg_type_id:#x}) to the driver: its to-driver ring "
                "is full (the driver is not reading it, or other clients keep it full); try again, or give the driver "
                "a larger aeron.conductor.buffer.length"
            )

    def next_correlation_id(self) -> int:
        return self._to_driver.next_correlation_id()

    def send(
        self,
        msg_type_id: int,
        build: Callable[[int], bytes],
        on_response: ResponseHandler,
        on_error: ErrorHandler,
        before_send: Callable[[int], None] | None = None,
    ) -> int:
        """Send a command built for a fresh correlation id; its answer arrives later through the callbacks.

        ``before_send(correlation_id)`` runs first, so events that follow the response (images of a new
        subscription) find what they belong to. Returns the correlation id at once.
        """
        with self.lock:
            self.check_open()
            correlation_id = self.next_correlation_id()
            if before_send is not None:
                before_send(correlation_id)
            deadline_ns = self.nano_clock() + self._driver_timeout_ms * 1_000_000
            self._pending[correlation_id] = _PendingCommand(msg_type_id, deadline_ns, on_response, on_error)
            try:
                self._send(msg_type_id, build(correlation_id))
            except BaseException:
                del self._pending[correlation_id]
                raise
            return correlation_id

    def send_terminate_driver(self, token: bytes) -> None:
        """TERMINATE_DRIVER: no answer comes back, whether the driver's validator allows it or not."""
        with self.lock:
            self.check_open()
            body = cp.encode_terminate_driver(self.client_id, self.next_correlation_id(), token)
            self._send(cp.Command.TERMINATE_DRIVER, body)

    def is_pending(self, correlation_id: int) -> bool:
        return correlation_id in self._pending

    def send_close(self) -> None:
        with self.lock:
            if not self.closed:
                self.closed = True
                self._pending.clear()
                if self.failure is None:
                    self._send_close()

    def _send_close(self) -> None:
        """CLIENT_CLOSE, retried while other clients keep the ring full, for CLOSE_RETRY_S at most; then the client
        goes without it (its local resources are released all the same; the driver reaps it by liveness)."""
        body = cp.encode_correlated(self.client_id, -1)
        deadline = time.monotonic() + CLOSE_RETRY_S
        while not self._to_driver.write(cp.Command.CLIENT_CLOSE, body):
            if time.monotonic() >= deadline:
                log.info(
                    "client %d closed without telling the driver: the to-driver ring stayed full for %g s; the "
                    "driver releases its resources after the client liveness timeout",
                    self.client_id,
                    CLOSE_RETRY_S,
                )
                return
            time.sleep(CLOSE_RETRY_SLEEP_S)

    # --- duty cycle ----------------------------------------------------------------------------

    @property
    def events_tail_address(self) -> int:
        """Where the driver's to-clients broadcast tail is: it moves whenever the driver sends an event."""
        return self._events.broadcast_receiver.tail_address

    def events_tail(self) -> int:
        return self._events.broadcast_receiver.tail()

    def do_work(self) -> int:
        """One duty cycle; raises the client's failure the first time it is detected, then returns 0."""
        with self.lock:
            if self.closed or self.failure is not None:
                return 0
            return self._duty_cycle()

    def _duty_cycle(self) -> int:
        self.in_duty_cycle = True
        try:
            work = 0
            try:
                while self._events.receive(self._on_event):
                    work += 1
            except RuntimeError as e:  # lapped by the driver's broadcast: our view of events is broken
                self.failure = AeronError(f"lost driver events ({e}); reconnect the client")
                raise self.failure from e
            now_ms = self.epoch_clock_ms()
            if now_ms >= self._time_of_last_keepalive_ms + KEEPALIVE_INTERVAL_MS:
                heartbeat_ms = self._to_driver.consumer_heartbeat_time()
                if heartbeat_ms == 0:  # a clean stop withdraws the heartbeat: no age to report
                    self.failure = DriverTimeoutError(
                        "the driver stopped (it withdrew its heartbeat): start it again and reconnect"
                    )
                    raise self.failure
                if now_ms > heartbeat_ms + self._driver_timeout_ms:
                    self.failure = DriverTimeoutError(
                        f"the driver has not heartbeated for {now_ms - heartbeat_ms} ms "
                        f"(> driver timeout {self._driver_timeout_ms} ms): is it still running?"
                    )
                    raise self.failure
                # A full ring (another client flooding the driver) is not this client's failure: as the
                # 1.15.1 client, ignore it and try again on the next duty cycle.
                if self._to_driver.write(
                    cp.Command.CLIENT_KEEPALIVE, cp.encode_correlated(self.client_id, 0)
                ):
                    self._time_of_last_keepalive_ms = now_ms
                    work += 1
            now_ns = self.nano_clock()
            if self._pending:
                work += self._expire_pending(now_ns)
            if self.on_duty_cycle is not None:
                work += self.on_duty_cycle(now_ns)
            return work
        finally:
            self.in_duty_cycle = False

    def _expire_pending(self, now_ns: int) -> int:
        expired = [(c, p) for c, p in self._pending.items() if now_ns > p.deadline_ns]
        for correlation_id, pending in expired:
            del self._pending[correlation_id]
            pending.on_error(
                DriverTimeoutError(
                    f"no response from the driver within {self._driver_timeout_ms} ms "
                    f"for command {pending.msg_type_id:#x} (correlation id {correlation_id})"
                )
            )
        return len(expired)

    def _respond(self, correlation_id: int, event: int, payload: Any) -> bool:
        pending = self._pending.pop(correlation_id, None)
        if pending is None:
            return False
        pending.on_response(event, payload)
        return True

    def _on_event(self, msg_type_id: int, body: memoryview) -> None:
        if msg_type_id == cp.Event.ON_ERROR:
            error = cp.decode_error(body)
            # The 1.15.1 client compares the offending id as an int32; we compare it whole.
            pending = self._pending.pop(error.offending_correlation_id, None)
            if pending is not None:
                pending.on_error(
                    RegistrationError(error.offending_correlation_id, error.error_code, error.message)
                )
        elif msg_type_id == cp.Event.ON_COUNTER_READY:
            update = cp.decode_counter_update(body)
            responded = self._respond(update.correlation_id, msg_type_id, update)
            if not responded and self.on_available_counter is not None:
                self.on_available_counter(update.correlation_id, update.counter_id)
        elif msg_type_id == cp.Event.ON_UNAVAILABLE_COUNTER:
            update = cp.decode_counter_update(body)
            if self.on_unavailable_counter is not None:
                self.on_unavailable_counter(update.correlation_id, update.counter_id)
        elif msg_type_id in (cp.Event.ON_PUBLICATION_READY, cp.Event.ON_EXCLUSIVE_PUBLICATION_READY):
            ready = cp.decode_publication_ready(body)
            self._respond(ready.correlation_id, msg_type_id, ready)
        elif msg_type_id == cp.Event.ON_SUBSCRIPTION_READY:
            subscription_ready = cp.decode_subscription_ready(body)
            self._respond(subscription_ready.correlation_id, msg_type_id, subscription_ready)
        elif msg_type_id == cp.Event.ON_AVAILABLE_IMAGE:
            if self.on_available_image is not None:
                self.on_available_image(cp.decode_image_ready(body))
        elif msg_type_id == cp.Event.ON_UNAVAILABLE_IMAGE:
            if self.on_unavailable_image is not None:
                self.on_unavailable_image(cp.decode_image_message(body))
        elif msg_type_id == cp.Event.ON_OPERATION_SUCCESS:
            correlation_id = cp.decode_operation_succeeded(body)
            self._respond(correlation_id, msg_type_id, correlation_id)
        elif (
            msg_type_id == cp.Event.ON_CLIENT_TIMEOUT
            and cp.decode_client_timeout(body) == self.client_id
            and not self.closed  # a 1.15.1 driver answers a clean close with it too: no timeout to report
        ):
            self.failure = ClientTimeoutError(
                f"the driver timed out client {self.client_id}: keepalives stopped for longer than "
                "the client liveness timeout"
            )
