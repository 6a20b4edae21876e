"""The Python Aeron client: connects to a driver through its cnc.dat, exactly as Aeron's Java client does."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from pathlib import Path

from driver.client.client_conductor import ClientConductor, epoch_ms
from driver.client.counter import Counter
from driver.client.exceptions import AeronError, CncVersionError, DriverTimeoutError
from driver.client.image import Image
from driver.client.publication import ExclusivePublication, Publication
from driver.client.subscription import ImageHandler, Subscription
from driver.concurrent.broadcast import BroadcastReceiver
from driver.concurrent.cnc_file import CNC_FILE, CNC_VERSION, CncError, CncFile
from driver.concurrent.counters import AtomicCounter, CountersReader
from driver.concurrent.logbuffer.log_buffers import LogBuffers
from driver.concurrent.logbuffer.term_reader import TermReader
from driver.concurrent.ring_buffer import ManyToOneRingBuffer
from driver.context import default_aeron_dir
from driver.protocol import control_protocol as cp

DEFAULT_DRIVER_TIMEOUT_MS = 10_000
IDLE_SLEEP_S = 0.01
RESOURCE_LINGER_MS = 3_000  # closed images and released logs stay mapped this long (a poll may be in flight)


def _map_cnc(cnc_path: Path, deadline: float, timeout_s: float, driver_timeout_ms: int) -> CncFile:
    """Wait for cnc.dat to exist, have a version, and carry a fresh driver heartbeat."""
    while True:
        remaining = deadline - time.monotonic()
        cnc: CncFile | None = None
        with contextlib.suppress(FileNotFoundError, CncError):
            cnc = CncFile.map_existing(cnc_path, writable=True)
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
                if heartbeat != 0 and epoch_ms() - heartbeat <= driver_timeout_ms:
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
    """A connected client. Use ``Aeron.connect()``; close it (or use ``with``) to leave cleanly."""

    def __init__(self, cnc: CncFile, driver_timeout_ms: int, use_conductor_invoker: bool) -> None:
        self.cnc = cnc
        self.aeron_dir = cnc.path.parent
        self._to_driver = ManyToOneRingBuffer(cnc.to_driver_buffer)
        self.counters_reader = CountersReader(cnc.counters_metadata_buffer, cnc.counters_values_buffer)
        self.client_id = self._to_driver.next_correlation_id()
        self.conductor = ClientConductor(
            self._to_driver, BroadcastReceiver(cnc.to_clients_buffer), self.client_id, driver_timeout_ms
        )
        self._counters: dict[int, Counter] = {}
        self._subscriptions: dict[int, Subscription] = {}
        self._publications: dict[int, Publication | ExclusivePublication] = {}
        self._log_buffers: dict[str, list] = {}  # file name -> [LogBuffers, reference count]
        self._lingering: list[tuple[int, LogBuffers]] = []
        self._term_reader = TermReader()
        self.conductor.on_available_image = self._on_available_image
        self.conductor.on_unavailable_image = self._on_unavailable_image
        self.conductor.on_duty_cycle = self._free_lingering
        self._closed = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.conductor.do_work()  # first keepalive at once
        if not use_conductor_invoker:
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
    ) -> Aeron:
        """Connect to the driver whose aeron dir is ``aeron_dir`` (default: AERON_DIR or Aeron's default).

        Waits up to ``timeout_s`` for a live driver; a driver whose heartbeat is older than
        ``driver_timeout_ms`` (aeron.driver.timeout) counts as dead, before and after connecting.
        Raises DriverTimeoutError when no live driver appears in time and CncVersionError when cnc.dat
        is of another Aeron version.
        """
        directory = Path(aeron_dir or os.environ.get("AERON_DIR") or default_aeron_dir())
        cnc = _map_cnc(directory / CNC_FILE, time.monotonic() + timeout_s, timeout_s, driver_timeout_ms)
        return cls(cnc, driver_timeout_ms, use_conductor_invoker)

    # --- lifecycle -----------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.conductor.do_work()
            except AeronError:
                return  # recorded as conductor.failure; the next API call raises it
            self._stop.wait(IDLE_SLEEP_S)

    def do_work(self) -> int:
        """Run one client duty cycle (only needed with ``use_conductor_invoker=True``)."""
        return self.conductor.do_work()

    @property
    def is_closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Tell the driver we are leaving (CLIENT_CLOSE), stop the client thread and unmap cnc.dat."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
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
            self.cnc.close()

    def __enter__(self) -> Aeron:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- counters ------------------------------------------------------------------------------

    def add_counter(self, type_id: int, label: str, key: bytes = b"") -> Counter:
        """Allocate a counter in the driver (visible to AeronStat and every client)."""
        client_id = self.client_id
        correlation_id, _event, update = self.conductor.request(
            cp.Command.ADD_COUNTER,
            lambda corr: cp.encode_counter(client_id, corr, type_id, key, label),
        )
        counter = Counter(
            self,
            correlation_id,
            update.counter_id,
            AtomicCounter(self.cnc.counters_values_buffer, update.counter_id),
        )
        self._counters[correlation_id] = counter
        return counter

    def _remove_counter(self, registration_id: int) -> None:
        self._counters.pop(registration_id, None)
        client_id = self.client_id
        self.conductor.request(
            cp.Command.REMOVE_COUNTER, lambda corr: cp.encode_remove(client_id, corr, registration_id)
        )

    # --- publications --------------------------------------------------------------------------

    def add_publication(self, channel: str, stream_id: int) -> Publication:
        """A publication that other publishers of the same channel and stream share (ADD_PUBLICATION)."""
        return self._add_publication(channel, stream_id, exclusive=False)  # type: ignore[return-value]

    def add_exclusive_publication(self, channel: str, stream_id: int) -> ExclusivePublication:
        """A publication of its own, with a session id nobody else writes to (ADD_EXCLUSIVE_PUBLICATION)."""
        return self._add_publication(channel, stream_id, exclusive=True)  # type: ignore[return-value]

    def _add_publication(
        self, channel: str, stream_id: int, exclusive: bool
    ) -> Publication | ExclusivePublication:
        client_id = self.client_id
        command = cp.Command.ADD_EXCLUSIVE_PUBLICATION if exclusive else cp.Command.ADD_PUBLICATION
        with self.conductor.lock:
            correlation_id, _event, ready = self.conductor.request(
                command, lambda corr: cp.encode_publication(client_id, corr, stream_id, channel)
            )
            log_buffers = self._acquire_log_buffers(ready.log_file_name)
            limit = AtomicCounter(self.cnc.counters_values_buffer, ready.publication_limit_counter_id)
            kind = ExclusivePublication if exclusive else Publication
            publication = kind(
                self,
                channel,
                stream_id,
                ready.session_id,
                correlation_id,
                ready.registration_id,
                log_buffers,
                limit,
            )
            self._publications[correlation_id] = publication
            return publication

    async def add_publication_async(self, channel: str, stream_id: int) -> Publication:
        """``add_publication`` without blocking the event loop while the driver answers."""
        return await asyncio.to_thread(self.add_publication, channel, stream_id)

    async def add_exclusive_publication_async(self, channel: str, stream_id: int) -> ExclusivePublication:
        return await asyncio.to_thread(self.add_exclusive_publication, channel, stream_id)

    async def add_subscription_async(
        self,
        channel: str,
        stream_id: int,
        on_available_image: ImageHandler | None = None,
        on_unavailable_image: ImageHandler | None = None,
    ) -> Subscription:
        return await asyncio.to_thread(
            self.add_subscription, channel, stream_id, on_available_image, on_unavailable_image
        )

    def release_publication(self, publication: Publication | ExclusivePublication) -> None:
        with self.conductor.lock:
            if self._publications.pop(publication.registration_id, None) is None:
                return
            self._linger(publication.log_buffers)
            client_id = self.client_id
            if not self._closed and self.conductor.failure is None:
                self.conductor.request(
                    cp.Command.REMOVE_PUBLICATION,
                    lambda corr: cp.encode_remove(client_id, corr, publication.registration_id),
                )

    def publication_destination(
        self, publication: Publication | ExclusivePublication, channel: str, add: bool
    ) -> None:
        client_id = self.client_id
        command = cp.Command.ADD_DESTINATION if add else cp.Command.REMOVE_DESTINATION
        self.conductor.request(
            command,
            lambda corr: cp.encode_destination(
                client_id, corr, publication.original_registration_id, channel
            ),
        )

    def subscription_destination(self, subscription: Subscription, channel: str, add: bool) -> None:
        client_id = self.client_id
        command = cp.Command.ADD_RCV_DESTINATION if add else cp.Command.REMOVE_RCV_DESTINATION
        self.conductor.request(
            command,
            lambda corr: cp.encode_destination(client_id, corr, subscription.registration_id, channel),
        )

    # --- subscriptions -------------------------------------------------------------------------

    def add_subscription(
        self,
        channel: str,
        stream_id: int,
        on_available_image: ImageHandler | None = None,
        on_unavailable_image: ImageHandler | None = None,
    ) -> Subscription:
        """Subscribe to a channel and stream (ADD_SUBSCRIPTION); images arrive as publishers connect."""
        client_id = self.client_id
        holder: list[Subscription] = []

        def register(correlation_id: int) -> None:
            subscription = Subscription(
                self, channel, stream_id, correlation_id, on_available_image, on_unavailable_image
            )
            holder.append(subscription)
            self._subscriptions[correlation_id] = subscription

        _, _event, ready = self.conductor.request(
            cp.Command.ADD_SUBSCRIPTION,
            lambda corr: cp.encode_subscription(client_id, corr, stream_id, channel),
            before_send=register,
            on_failure=lambda corr: self._subscriptions.pop(corr, None),
        )
        subscription = holder[0]
        subscription.channel_status_id = ready.channel_status_indicator_id
        return subscription

    def release_subscription(self, subscription: Subscription) -> None:
        with self.conductor.lock:
            if self._subscriptions.pop(subscription.registration_id, None) is None:
                return
            for image in subscription.images:
                image.close()
                self._linger(image.log_buffers)
            client_id = self.client_id
            if not self._closed and self.conductor.failure is None:
                self.conductor.request(
                    cp.Command.REMOVE_SUBSCRIPTION,
                    lambda corr: cp.encode_remove(client_id, corr, subscription.registration_id),
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

    def _acquire_log_buffers(self, file_name: str) -> LogBuffers:
        entry = self._log_buffers.get(file_name)
        if entry is None:
            entry = self._log_buffers[file_name] = [LogBuffers(file_name), 0]
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
            self._lingering.append((epoch_ms() + RESOURCE_LINGER_MS, log_buffers))

    def _free_lingering(self, now_ms: int) -> int:
        if not self._lingering or self._lingering[0][0] > now_ms:
            return 0
        expired = [entry for entry in self._lingering if entry[0] <= now_ms]
        self._lingering = [entry for entry in self._lingering if entry[0] > now_ms]
        for _, log_buffers in expired:
            log_buffers.close()
        return len(expired)
