"""The Python Aeron client: connects to a driver through its cnc.dat, exactly as Aeron's Java client does."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from driver.client.client_conductor import ClientConductor, epoch_ms
from driver.client.client_conductor_agent import ClientConductorAgent
from driver.client.counter import Counter
from driver.client.exceptions import AeronError, CncVersionError, DriverTimeoutError
from driver.client.image import Image
from driver.client.publication import ExclusivePublication, Publication, _PublicationBase
from driver.client.subscription import ImageHandler, Subscription
from driver.concurrent.broadcast import BroadcastReceiver
from driver.concurrent.cnc_file import CNC_FILE, CNC_VERSION, CncError, CncFile
from driver.concurrent.counters import AtomicCounter, CountersReader
from driver.concurrent.logbuffer import fastpath
from driver.concurrent.logbuffer.log_buffers import LogBuffers
from driver.concurrent.logbuffer.term_reader import TermReader
from driver.concurrent.ring_buffer import ManyToOneRingBuffer
from driver.context import default_aeron_dir
from driver.protocol import control_protocol as cp
from driver.util.files import free_bytes, permission_denied, unallocated_bytes

DEFAULT_DRIVER_TIMEOUT_MS = 10_000
IDLE_SLEEP_S = 0.01
IDLE_MAX_S = 0.1
"""With the fast path the client thread sleeps until the driver sends an event, or this long at most."""
ASYNC_POLL_S = 0.001
RESOURCE_LINGER_MS = 3_000  # closed images and released logs stay mapped this long (a poll may be in flight)

log = logging.getLogger(__name__)
T = TypeVar("T")


def _map_cnc(
    cnc_path: Path,
    deadline: float,
    timeout_s: float,
    driver_timeout_ms: int,
    epoch_clock_ms: Callable[[], int] = epoch_ms,
) -> CncFile:
    """Wait for cnc.dat to exist, have a version, and carry a fresh driver heartbeat."""
    while True:
        remaining = deadline - time.monotonic()
        cnc: CncFile | None = None
        try:
            cnc = CncFile.map_existing(cnc_path, writable=True)
        except (FileNotFoundError, CncError):
            pass
        except PermissionError as e:
            raise AeronError(permission_denied(cnc_path)) from e
        if cnc is not None:
            while cnc.version == 0 and time.monotonic() < deadline:
                time.sleep(0.001)
            version = cnc.version
            if version not in (0, CNC_VERSION):
                cnc.close()
                raise CncVersionError(
                    f"{cnc_path} has CnC version {version}; this client speaks version {CNC_VERSION} "
                    "(Aeron 1.15.1). Use a driver of that version."
                )
            if version == CNC_VERSION:
                heartbeat = ManyToOneRingBuffer(cnc.to_driver_buffer).consumer_heartbeat_time()
                if heartbeat != 0 and epoch_clock_ms() - heartbeat <= driver_timeout_ms:
                    return cnc
            cnc.close()
        if remaining <= 0:
            if not cnc_path.exists():
                raise DriverTimeoutError(
                    f"no driver: {cnc_path} does not exist after {timeout_s:g} s. "
                    f"Start one with `mediadriver run --dir {cnc_path.parent}`"
                )
            raise DriverTimeoutError(
                f"no driver heartbeat detected in {cnc_path} within {timeout_s:g} s: the driver is not "
                "running (stale cnc.dat) or not yet ready"
            )
        time.sleep(0.016)


class Aeron:
    """A connected client. Use ``Aeron.connect()``; close it (or use ``with``) to leave cleanly.

    Every registration has a non-blocking form (``async_add_publication`` returns a registration id at once;
    ``get_publication(id)`` is None until the driver has answered) and a blocking one for scripts
    (``add_publication``), built on it: register, then drive the duty cycle until answered.
    """

    def __init__(
        self,
        cnc: CncFile,
        driver_timeout_ms: int,
        use_conductor_invoker: bool,
        use_conductor_agent_invoker: bool = False,
        epoch_clock_ms: Callable[[], int] = epoch_ms,
        nano_clock: Callable[[], int] = time.monotonic_ns,
        error_handler: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.cnc = cnc
        self.aeron_dir = cnc.path.parent
        self._to_driver = ManyToOneRingBuffer(cnc.to_driver_buffer)
        self.counters_reader = CountersReader(cnc.counters_metadata_buffer, cnc.counters_values_buffer)
        self.client_id = self._to_driver.next_correlation_id()
        self.conductor = ClientConductor(
            self._to_driver,
            BroadcastReceiver(cnc.to_clients_buffer),
            self.client_id,
            driver_timeout_ms,
            epoch_clock_ms=epoch_clock_ms,
            nano_clock=nano_clock,
        )
        self.error_handler = error_handler or (lambda e: log.error("aeron client error", exc_info=e))
        self._nano_clock = nano_clock
        self._is_agent_invoker = use_conductor_agent_invoker
        self._counters: dict[int, Counter] = {}
        self._subscriptions: dict[int, Subscription] = {}
        self._publications: dict[int, Publication | ExclusivePublication] = {}
        self._pending_registrations: set[int] = set()
        self._failed_registrations: dict[int, AeronError] = {}
        self._log_buffers: dict[str, list] = {}  # file name -> [LogBuffers, reference count]
        self._lingering: list[tuple[int, LogBuffers]] = []
        self._term_reader = TermReader()
        self.conductor.on_available_image = self._on_available_image
        self.conductor.on_unavailable_image = self._on_unavailable_image
        self.conductor.on_duty_cycle = self._free_lingering
        self._closed = False
        self._stop = threading.Event()
        self._waiter = fastpath.change_waiter()
        self._thread: threading.Thread | None = None
        self._agent_invoker = ClientConductorAgent(self) if use_conductor_agent_invoker else None
        self.conductor.do_work()  # first keepalive at once
        if not use_conductor_invoker and not use_conductor_agent_invoker:
            self._thread = threading.Thread(
                target=self._run, name=f"aeron-client-{self.client_id}", daemon=True
            )
            self._thread.start()

    @classmethod
    def connect(
        cls,
        aeron_dir: str | os.PathLike[str] | None = None,
        timeout_s: float = DEFAULT_DRIVER_TIMEOUT_MS / 1000,
        use_conductor_invoker: bool = False,
        driver_timeout_ms: int = DEFAULT_DRIVER_TIMEOUT_MS,
        *,
        use_conductor_agent_invoker: bool = False,
        epoch_clock_ms: Callable[[], int] | None = None,
        nano_clock: Callable[[], int] | None = None,
        error_handler: Callable[[BaseException], None] | None = None,
    ) -> Aeron:
        """Connect to the driver whose aeron dir is ``aeron_dir`` (default: AERON_DIR or Aeron's default).

        Waits up to ``timeout_s`` for a live driver; a driver whose heartbeat is older than
        ``driver_timeout_ms`` (aeron.driver.timeout) counts as dead, before and after connecting.
        Raises DriverTimeoutError when no live driver appears in time and CncVersionError when cnc.dat
        is of another Aeron version.

        Duty cycle: by default a background thread runs it. ``use_conductor_invoker=True``: the caller
        runs it with ``do_work()`` and may still block. ``use_conductor_agent_invoker=True``: no thread, and
        the embedder runs ``conductor_agent_invoker`` (an Agent) on its loop, e.g. the driver's own; blocking
        calls then raise instead of deadlocking that loop (an in-process driver constructed before the
        connect is found at once). Clocks are injectable for embedders and tests; ``error_handler``
        receives errors nobody waits for (a refused removal in agent mode).
        """
        directory = Path(aeron_dir or os.environ.get("AERON_DIR") or default_aeron_dir())
        epoch_clock_ms = epoch_clock_ms or epoch_ms
        cnc = _map_cnc(
            directory / CNC_FILE, time.monotonic() + timeout_s, timeout_s, driver_timeout_ms, epoch_clock_ms
        )
        return cls(
            cnc,
            driver_timeout_ms,
            use_conductor_invoker,
            use_conductor_agent_invoker,
            epoch_clock_ms,
            nano_clock or time.monotonic_ns,
            error_handler,
        )

    # --- lifecycle -----------------------------------------------------------------------------

    def _run(self) -> None:
        waiter = self._waiter
        conductor = self.conductor
        tail_address = conductor.events_tail_address
        while not self._stop.is_set():
            tail = conductor.events_tail()  # before the duty cycle: an event sent during it wakes the wait
            try:
                conductor.do_work()
            except AeronError:
                return  # recorded as conductor.failure; the next API call raises it
            if waiter is None:
                self._stop.wait(IDLE_SLEEP_S)
            else:
                # Without the GIL until the driver sends an event (checked every ms), or for at most
                # IDLE_MAX_S: keepalives (every 500 ms) and timers need no more, and a thread spinning on
                # offers or polls keeps the GIL.
                waiter.wait(tail_address, tail, IDLE_MAX_S)

    def do_work(self) -> int:
        """Run one client duty cycle (with ``use_conductor_invoker`` or ``use_conductor_agent_invoker``)."""
        return self.conductor.do_work()

    @property
    def conductor_agent_invoker(self) -> ClientConductorAgent | None:
        """The duty cycle as an Agent (``use_conductor_agent_invoker=True`` only), as Aeron's
        conductorAgentInvoker: run it in an AgentRunner or a CompositeAgent."""
        return self._agent_invoker

    @property
    def is_closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Tell the driver we are leaving (CLIENT_CLOSE), stop the client thread and unmap cnc.dat."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._waiter is not None:
            self._waiter.stop()
        if self._thread is not None:
            self._thread.join(timeout=5)
        try:
            self.conductor.send_close()
        finally:
            with self.conductor.lock:
                for subscription in self._subscriptions.values():
                    for image in subscription.images:
                        image.close()
                    subscription.is_closed = True
                for publication in self._publications.values():
                    publication.is_closed = True
                for log_buffers, _ in self._log_buffers.values():
                    log_buffers.close()
                for _, log_buffers in self._lingering:
                    log_buffers.close()
                self._log_buffers.clear()
                self._lingering.clear()
                self._pending_registrations.clear()
                self._failed_registrations.clear()
            self.cnc.close()

    def __enter__(self) -> Aeron:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- waiting (blocking calls are the non-blocking ones plus this) ----------------------------

    def _ensure_may_block(self, what: str) -> None:
        if self._is_agent_invoker:
            raise AeronError(
                f"{what} blocks until the driver answers, but this client's duty cycle runs as an agent "
                "on the caller's loop (use_conductor_agent_invoker=True), so it would deadlock: use the "
                "async_add_*() / get_*() pair (or await the *_async() form) instead"
            )

    def _await(self, what: str, poll: Callable[[], T | None]) -> T:
        """Drive the duty cycle until ``poll()`` has a result (it raises the command's error)."""
        self._ensure_may_block(what)
        while True:
            with self.conductor.lock:
                self.conductor.check_open()
                self.conductor.do_work()
                self.conductor.check_open()
                result = poll()
                if result is not None:
                    return result
            time.sleep(0.001)

    async def _await_async(self, poll: Callable[[], T | None]) -> T:
        """Await a registration without blocking the loop: duty cycles in between, pauses as awaits."""
        while True:
            if not self.conductor.in_duty_cycle:
                self.conductor.do_work()
            self.conductor.check_open()
            result = poll()
            if result is not None:
                return result
            await asyncio.sleep(ASYNC_POLL_S)

    def _command(self, msg_type_id: int, build: Callable[[int], bytes], what: str, wait: bool) -> int:
        """A command answered by OPERATION_SUCCESS: waited for (its refusal raised) when ``wait``, else
        sent and left to the duty cycle, a refusal going to the error handler."""
        if not wait:
            return self.conductor.send(msg_type_id, build, lambda _e, _p: None, self.error_handler)
        outcome: list[AeronError | None] = []
        self._ensure_may_block(what)
        self.conductor.send(
            msg_type_id, build, lambda _e, _p: outcome.append(None), lambda error: outcome.append(error)
        )

        def done() -> bool | None:
            if not outcome:
                return None
            if outcome[0] is not None:
                raise outcome[0]
            return True

        self._await(what, done)
        return 0

    def _remove(self, command: int, registration_id: int, what: str) -> None:
        """A REMOVE_* command for ``registration_id``: waited for unless in agent mode."""
        client_id = self.client_id
        self._command(
            command,
            lambda corr: cp.encode_remove(client_id, corr, registration_id),
            what,
            wait=not self._is_agent_invoker,
        )

    def _get(self, registration_id: int, registry: dict[int, Any], kind: type, what: str) -> Any:
        with self.conductor.lock:
            self.conductor.check_open()
            if registration_id in self._pending_registrations:
                return None
            error = self._failed_registrations.pop(registration_id, None)
            if error is not None:
                raise error
            resource = registry.get(registration_id)
            if resource is None:
                raise AeronError(
                    f"unknown registration id {registration_id}: not a {what} of this client "
                    "(never added, already taken as an error, or closed)"
                )
            if type(resource) is not kind:
                raise AeronError(
                    f"registration id {registration_id} is a {type(resource).__name__}, not a {what}"
                )
            return resource

    def _register(
        self,
        msg_type_id: int,
        build: Callable[[int], bytes],
        on_ready: Callable[[int, Any], None],
        before_send: Callable[[int], None] | None = None,
        on_refused: Callable[[int], object] | None = None,
    ) -> int:
        """Send a registration; the duty cycle later makes its resource (``on_ready``) or keeps its error."""
        holder: list[int] = []

        def remember(correlation_id: int) -> None:
            holder.append(correlation_id)
            self._pending_registrations.add(correlation_id)
            if before_send is not None:
                before_send(correlation_id)

        def ready(_event: int, payload: Any) -> None:
            correlation_id = holder[0]
            self._pending_registrations.discard(correlation_id)
            on_ready(correlation_id, payload)

        def refused(error: AeronError) -> None:
            correlation_id = holder[0]
            self._pending_registrations.discard(correlation_id)
            self._failed_registrations[correlation_id] = error
            if on_refused is not None:
                on_refused(correlation_id)

        with self.conductor.lock:
            try:
                return self.conductor.send(msg_type_id, build, ready, refused, before_send=remember)
            except BaseException:
                if holder:
                    self._pending_registrations.discard(holder[0])
                    if on_refused is not None:
                        on_refused(holder[0])
                raise

    # --- counters ------------------------------------------------------------------------------

    def async_add_counter(self, type_id: int, key: bytes, label: str) -> int:
        """Ask the driver for a counter (ADD_COUNTER); the registration id, at once (see get_counter)."""
        client_id = self.client_id
        return self._register(
            cp.Command.ADD_COUNTER,
            lambda corr: cp.encode_counter(client_id, corr, type_id, key, label),
            self._on_counter_ready,
        )

    def get_counter(self, registration_id: int) -> Counter | None:
        """None while the driver has not answered; the Counter; or raises why the driver refused it."""
        return self._get(registration_id, self._counters, Counter, "Counter")

    def request_driver_termination(self, token: bytes = b"") -> None:
        """Ask the driver to stop (TERMINATE_DRIVER, Aeron 1.17). It stops only if its termination validator
        allows it (``aeron.driver.termination.validator``; denied by default) and says nothing either way."""
        self.conductor.send_terminate_driver(token)

    def add_counter(self, type_id: int, label: str, key: bytes = b"") -> Counter:
        """Allocate a counter in the driver (visible to AeronStat and every client)."""
        registration_id = self.async_add_counter(type_id, key, label)
        return self._await("add_counter", lambda: self.get_counter(registration_id))

    def _on_counter_ready(self, correlation_id: int, update: cp.CounterUpdate) -> None:
        self._counters[correlation_id] = Counter(
            self,
            correlation_id,
            update.counter_id,
            AtomicCounter(self.cnc.counters_values_buffer, update.counter_id),
        )

    def _remove_counter(self, registration_id: int) -> None:
        self._counters.pop(registration_id, None)
        self._remove(cp.Command.REMOVE_COUNTER, registration_id, "Counter.close")

    # --- publications --------------------------------------------------------------------------

    def async_add_publication(self, channel: str, stream_id: int) -> int:
        """ADD_PUBLICATION, not waiting for the answer: the registration id (see get_publication)."""
        return self._async_add_publication(channel, stream_id, exclusive=False)

    def async_add_exclusive_publication(self, channel: str, stream_id: int) -> int:
        """ADD_EXCLUSIVE_PUBLICATION, not waiting for the answer (see get_exclusive_publication)."""
        return self._async_add_publication(channel, stream_id, exclusive=True)

    def get_publication(self, registration_id: int) -> Publication | None:
        """None while the driver has not answered; the Publication; or raises why the driver refused it."""
        return self._get(registration_id, self._publications, Publication, "Publication")

    def get_exclusive_publication(self, registration_id: int) -> ExclusivePublication | None:
        return self._get(registration_id, self._publications, ExclusivePublication, "ExclusivePublication")

    def add_publication(self, channel: str, stream_id: int) -> Publication:
        """A publication that other publishers of the same channel and stream share (ADD_PUBLICATION)."""
        registration_id = self.async_add_publication(channel, stream_id)
        return self._await("add_publication", lambda: self.get_publication(registration_id))

    def add_exclusive_publication(self, channel: str, stream_id: int) -> ExclusivePublication:
        """A publication of its own, with a session id nobody else writes to (ADD_EXCLUSIVE_PUBLICATION)."""
        registration_id = self.async_add_exclusive_publication(channel, stream_id)
        return self._await(
            "add_exclusive_publication", lambda: self.get_exclusive_publication(registration_id)
        )

    def _async_add_publication(self, channel: str, stream_id: int, exclusive: bool) -> int:
        client_id = self.client_id
        command = cp.Command.ADD_EXCLUSIVE_PUBLICATION if exclusive else cp.Command.ADD_PUBLICATION
        kind = ExclusivePublication if exclusive else Publication

        # A log asked for sparse is not faulted in here either (as in the driver, docs/logbuffer.md section 1):
        # a 3 x 64 MiB log took the archive 100+ ms per replay publication to map.
        populate = "sparse=true" not in channel

        def on_ready(correlation_id: int, ready: cp.PublicationBuffersReady) -> None:
            shortfall = self._sparse_log_shortfall(ready.log_file_name)
            if shortfall is not None:
                # Writing it would fault (SIGBUS) once the file system runs out: refused here, saying why, and
                # handed back to the driver.
                self._failed_registrations[correlation_id] = AeronError(shortfall)
                self._command(
                    cp.Command.REMOVE_PUBLICATION,
                    lambda corr: cp.encode_remove(client_id, corr, correlation_id),
                    "a refused publication's removal",
                    wait=False,
                )
                return
            log_buffers = self._acquire_log_buffers(ready.log_file_name, populate)
            limit = AtomicCounter(self.cnc.counters_values_buffer, ready.publication_limit_counter_id)
            self._publications[correlation_id] = kind(
                self,
                channel,
                stream_id,
                ready.session_id,
                correlation_id,
                ready.registration_id,
                log_buffers,
                limit,
            )

        return self._register(
            command, lambda corr: cp.encode_publication(client_id, corr, stream_id, channel), on_ready
        )

    async def add_publication_async(self, channel: str, stream_id: int) -> Publication:
        """``add_publication`` without blocking the event loop while the driver answers."""
        registration_id = self.async_add_publication(channel, stream_id)
        return await self._await_async(lambda: self.get_publication(registration_id))

    async def add_exclusive_publication_async(self, channel: str, stream_id: int) -> ExclusivePublication:
        registration_id = self.async_add_exclusive_publication(channel, stream_id)
        return await self._await_async(lambda: self.get_exclusive_publication(registration_id))

    async def add_subscription_async(
        self,
        channel: str,
        stream_id: int,
        on_available_image: ImageHandler | None = None,
        on_unavailable_image: ImageHandler | None = None,
    ) -> Subscription:
        registration_id = self.async_add_subscription(
            channel, stream_id, on_available_image, on_unavailable_image
        )
        return await self._await_async(lambda: self.get_subscription(registration_id))

    def release_publication(self, publication: _PublicationBase) -> None:
        with self.conductor.lock:
            if self._publications.pop(publication.registration_id, None) is None:
                return
            self._linger(publication.log_buffers)
            if not self._closed and self.conductor.failure is None:
                self._remove(cp.Command.REMOVE_PUBLICATION, publication.registration_id, "Publication.close")

    def publication_destination(
        self, publication: _PublicationBase, channel: str, add: bool
    ) -> int:
        """Waits for the driver's answer unless in agent mode (then a refusal goes to the error handler)."""
        command = cp.Command.ADD_DESTINATION if add else cp.Command.REMOVE_DESTINATION
        return self._destination(command, publication.original_registration_id, channel, add)

    def subscription_destination(self, subscription: Subscription, channel: str, add: bool) -> int:
        command = cp.Command.ADD_RCV_DESTINATION if add else cp.Command.REMOVE_RCV_DESTINATION
        return self._destination(command, subscription.registration_id, channel, add)

    def _destination(self, command: int, registration_id: int, channel: str, add: bool) -> int:
        client_id = self.client_id
        return self._command(
            command,
            lambda corr: cp.encode_destination(client_id, corr, registration_id, channel),
            "add_destination" if add else "remove_destination",
            wait=not self._is_agent_invoker,
        )

    # --- subscriptions -------------------------------------------------------------------------

    def async_add_subscription(
        self,
        channel: str,
        stream_id: int,
        on_available_image: ImageHandler | None = None,
        on_unavailable_image: ImageHandler | None = None,
    ) -> int:
        """ADD_SUBSCRIPTION, not waiting for the answer: the registration id (see get_subscription)."""
        client_id = self.client_id

        def register(correlation_id: int) -> None:
            # Known before the command goes: the images that follow the answer must find it.
            self._subscriptions[correlation_id] = Subscription(
                self, channel, stream_id, correlation_id, on_available_image, on_unavailable_image
            )

        def on_ready(correlation_id: int, ready: cp.SubscriptionReady) -> None:
            self._subscriptions[correlation_id].channel_status_id = ready.channel_status_indicator_id

        return self._register(
            cp.Command.ADD_SUBSCRIPTION,
            lambda corr: cp.encode_subscription(client_id, corr, stream_id, channel),
            on_ready,
            before_send=register,
            on_refused=lambda corr: self._subscriptions.pop(corr, None),
        )

    def get_subscription(self, registration_id: int) -> Subscription | None:
        """None while the driver has not answered; the Subscription; or raises why the driver refused it."""
        return self._get(registration_id, self._subscriptions, Subscription, "Subscription")

    def add_subscription(
        self,
        channel: str,
        stream_id: int,
        on_available_image: ImageHandler | None = None,
        on_unavailable_image: ImageHandler | None = None,
    ) -> Subscription:
        """Subscribe to a channel and stream (ADD_SUBSCRIPTION); images arrive as publishers connect."""
        registration_id = self.async_add_subscription(
            channel, stream_id, on_available_image, on_unavailable_image
        )
        return self._await("add_subscription", lambda: self.get_subscription(registration_id))

    def release_subscription(self, subscription: Subscription) -> None:
        with self.conductor.lock:
            if self._subscriptions.pop(subscription.registration_id, None) is None:
                return
            for image in subscription.images:
                image.close()
                self._linger(image.log_buffers)
            if not self._closed and self.conductor.failure is None:
                self._remove(
                    cp.Command.REMOVE_SUBSCRIPTION, subscription.registration_id, "Subscription.close"
                )

    def _on_available_image(self, ready: cp.ImageBuffersReady) -> None:
        subscription = self._subscriptions.get(ready.subscription_registration_id)
        if subscription is None or any(i.correlation_id == ready.correlation_id for i in subscription.images):
            return
        image = Image(
            ready.correlation_id,
            ready.session_id,
            ready.stream_id,
            ready.subscription_registration_id,
            ready.source_identity,
            self._acquire_log_buffers(ready.log_file_name),
            AtomicCounter(self.cnc.counters_values_buffer, ready.subscriber_position_id),
            self._term_reader,
        )
        subscription._add_image(image)
        if subscription.on_available_image is not None:
            subscription.on_available_image(image)

    def _on_unavailable_image(self, message: cp.ImageMessage) -> None:
        subscription = self._subscriptions.get(message.subscription_registration_id)
        if subscription is None:
            return
        image = subscription._remove_image(message.correlation_id)
        if image is not None:
            self._linger(image.log_buffers)
            if subscription.on_unavailable_image is not None:
                subscription.on_unavailable_image(image)

    # --- log buffers ---------------------------------------------------------------------------

    def _sparse_log_shortfall(self, file_name: str) -> str | None:
        """Why this client may not write the publication log ``file_name``, or None: a sparse log (a driver
        that does not reserve its logs, Java's with sparse=true) whose holes, with those of the logs this client
        already publishes on that file system, need more than is free. Writing into a hole with no space left
        would kill the process with SIGBUS."""
        try:
            device, missing = unallocated_bytes(file_name)
        except OSError:
            return None  # mapping it will say what is wrong
        if missing == 0:
            return None
        free = free_bytes(Path(file_name).parent)
        if free is None:
            return None
        mapped = {str(p.log_buffers.path) for p in self._publications.values()}
        others = 0
        for path in mapped - {file_name}:
            try:
                other_device, other_missing = unallocated_bytes(path)
            except OSError:
                continue
            if other_device == device:
                others += other_missing
        if missing + others <= free:
            return None
        return (
            f"cannot publish on {file_name}: the log is sparse and writing it takes {missing} more bytes "
            f"(and {others} more for this client's other sparse logs there), but its file system has {free} "
            "bytes free; writing it would fault. Free space there, or use smaller terms (term-length) or "
            "logs that are not sparse"
        )

    def _acquire_log_buffers(self, file_name: str, populate: bool = True) -> LogBuffers:
        entry = self._log_buffers.get(file_name)
        if entry is None:
            entry = self._log_buffers[file_name] = [LogBuffers(file_name, populate), 0]
        entry[1] += 1
        return entry[0]

    def _linger(self, log_buffers: LogBuffers) -> None:
        """Drop one reference; unmap only after the linger time, as a poll may still be reading."""
        entry = self._log_buffers.get(str(log_buffers.path))
        if entry is None or entry[0] is not log_buffers:
            return
        entry[1] -= 1
        if entry[1] == 0:
            del self._log_buffers[str(log_buffers.path)]
            self._lingering.append((self._nano_clock() + RESOURCE_LINGER_MS * 1_000_000, log_buffers))

    def _free_lingering(self, now_ns: int) -> int:
        if not self._lingering or self._lingering[0][0] > now_ns:
            return 0
        expired = [entry for entry in self._lingering if entry[0] <= now_ns]
        self._lingering = [entry for entry in self._lingering if entry[0] > now_ns]
        for _, log_buffers in expired:
            log_buffers.close()
        return len(expired)
