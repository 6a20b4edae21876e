"""The client's side of the command protocol: sends commands, awaits responses, handles events, keeps alive.

One lock serialises the duty cycle, which runs either on the client's own background thread or in the
caller (``Aeron.connect(use_conductor_invoker=True)`` + ``aeron.do_work()``), as Aeron's ClientConductor.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
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


def epoch_ms() -> int:
    return time.time_ns() // 1_000_000


class ClientConductor:
    def __init__(
        self,
        to_driver: ManyToOneRingBuffer,
        to_clients: BroadcastReceiver,
        client_id: int,
        driver_timeout_ms: int,
        on_available_counter: Callable[[int, int], None] | None = None,
        on_unavailable_counter: Callable[[int, int], None] | None = None,
    ) -> None:
        self.lock = threading.RLock()
        self._to_driver = to_driver
        self._events = CopyBroadcastReceiver(to_clients)
        self.client_id = client_id
        self._driver_timeout_ms = driver_timeout_ms
        self._time_of_last_keepalive_ms = 0
        self._awaiting: int | None = None
        self._response: tuple[int, Any] | None = None
        self.on_available_counter = on_available_counter
        self.on_unavailable_counter = on_unavailable_counter
        self.on_available_image: Callable[[cp.ImageBuffersReady], None] | None = None
        self.on_unavailable_image: Callable[[cp.ImageMessage], None] | None = None
        self.on_duty_cycle: Callable[[int], int] | None = None
        self.closed = False
        self.failure: AeronError | None = None

    # --- commands ------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.failure is not None:
            raise self.failure
        if self.closed:
            raise ClientClosedError("the Aeron client is closed")

    def _send(self, msg_type_id: int, body: bytes) -> None:
        if not self._to_driver.write(msg_type_id, body):
            raise AeronError(f"could not write command {msg_type_id:#x}: the to-driver ring buffer is full")

    def next_correlation_id(self) -> int:
        return self._to_driver.next_correlation_id()

    def request(
        self,
        msg_type_id: int,
        build: Callable[[int], bytes],
        before_send: Callable[[int], None] | None = None,
        on_failure: Callable[[int], None] | None = None,
    ) -> tuple[int, int, Any]:
        """Send a command built for a fresh correlation id and wait for its response.

        ``before_send(correlation_id)`` runs under the lock first, so events that follow the response
        (images of a new subscription) find what they belong to; ``on_failure`` undoes it.
        Returns (correlation_id, event type, decoded response); raises RegistrationError on ON_ERROR.
        """
        with self.lock:
            self._check_open()
            correlation_id = self.next_correlation_id()
            self._awaiting, self._response = correlation_id, None
            if before_send is not None:
                before_send(correlation_id)
            self._send(msg_type_id, build(correlation_id))
            deadline_ms = epoch_ms() + self._driver_timeout_ms
            succeeded = False
            try:
                while True:
                    self._duty_cycle()
                    if self._response is not None:
                        event, payload = self._response
                        if event == cp.Event.ON_ERROR:
                            raise RegistrationError(correlation_id, payload.error_code, payload.message)
                        succeeded = True
                        return correlation_id, event, payload
                    self._check_open()
                    if epoch_ms() > deadline_ms:
                        raise DriverTimeoutError(
                            f"no response from the driver within {self._driver_timeout_ms} ms "
                            f"for command {msg_type_id:#x} (correlation id {correlation_id})"
                        )
                    time.sleep(0.001)
            finally:
                self._awaiting = None
                if not succeeded and on_failure is not None:
                    on_failure(correlation_id)

    def send_close(self) -> None:
        with self.lock:
            if not self.closed:
                self.closed = True
                if self.failure is None:
                    self._send(cp.Command.CLIENT_CLOSE, cp.encode_correlated(self.client_id, -1))

    # --- duty cycle ----------------------------------------------------------------------------

    def do_work(self) -> int:
        with self.lock:
            if self.closed or self.failure is not None:
                return 0
            return self._duty_cycle()

    def _duty_cycle(self) -> int:
        work = 0
        try:
            while self._events.receive(self._on_event):
                work += 1
        except RuntimeError as e:  # lapped by the driver's broadcast: our view of events is broken
            self.failure = AeronError(f"lost driver events ({e}); reconnect the client")
            raise self.failure from e
        now_ms = epoch_ms()
        if now_ms >= self._time_of_last_keepalive_ms + KEEPALIVE_INTERVAL_MS:
            heartbeat_ms = self._to_driver.consumer_heartbeat_time()
            if now_ms > heartbeat_ms + self._driver_timeout_ms:
                self.failure = DriverTimeoutError(
                    f"the driver has not heartbeated for {now_ms - heartbeat_ms} ms "
                    f"(> driver timeout {self._driver_timeout_ms} ms): is it still running?"
                )
                raise self.failure
            self._send(cp.Command.CLIENT_KEEPALIVE, cp.encode_correlated(self.client_id, 0))
            self._time_of_last_keepalive_ms = now_ms
            work += 1
        if self.on_duty_cycle is not None:
            work += self.on_duty_cycle(now_ms)
        return work

    def _on_event(self, msg_type_id: int, body: memoryview) -> None:
        if msg_type_id == cp.Event.ON_ERROR:
            error = cp.decode_error(body)
            # The 1.15.1 client compares the offending id as an int32; we compare it whole.
            if error.offending_correlation_id == self._awaiting:
                self._response = (msg_type_id, error)
        elif msg_type_id == cp.Event.ON_COUNTER_READY:
            update = cp.decode_counter_update(body)
            if update.correlation_id == self._awaiting:
                self._response = (msg_type_id, update)
            elif self.on_available_counter is not None:
                self.on_available_counter(update.correlation_id, update.counter_id)
        elif msg_type_id == cp.Event.ON_UNAVAILABLE_COUNTER:
            update = cp.decode_counter_update(body)
            if self.on_unavailable_counter is not None:
                self.on_unavailable_counter(update.correlation_id, update.counter_id)
        elif msg_type_id in (cp.Event.ON_PUBLICATION_READY, cp.Event.ON_EXCLUSIVE_PUBLICATION_READY):
            ready = cp.decode_publication_ready(body)
            if ready.correlation_id == self._awaiting:
                self._response = (msg_type_id, ready)
        elif msg_type_id == cp.Event.ON_SUBSCRIPTION_READY:
            ready = cp.decode_subscription_ready(body)
            if ready.correlation_id == self._awaiting:
                self._response = (msg_type_id, ready)
        elif msg_type_id == cp.Event.ON_AVAILABLE_IMAGE:
            if self.on_available_image is not None:
                self.on_available_image(cp.decode_image_ready(body))
        elif msg_type_id == cp.Event.ON_UNAVAILABLE_IMAGE:
            if self.on_unavailable_image is not None:
                self.on_unavailable_image(cp.decode_image_message(body))
        elif msg_type_id == cp.Event.ON_OPERATION_SUCCESS:
            correlation_id = cp.decode_operation_succeeded(body)
            if correlation_id == self._awaiting:
                self._response = (msg_type_id, correlation_id)
        elif msg_type_id == cp.Event.ON_CLIENT_TIMEOUT and cp.decode_client_timeout(body) == self.client_id:
            self.failure = ClientTimeoutError(
                f"the driver timed out client {self.client_id}: keepalives stopped for longer than "
                "the client liveness timeout"
            )
