"""The Python Aeron client: connects to a driver through its cnc.dat, exactly as Aeron's Java client does."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

from driver.client.client_conductor import ClientConductor, epoch_ms
from driver.client.counter import Counter
from driver.client.exceptions import AeronError, CncVersionError, DriverTimeoutError
from driver.concurrent.broadcast import BroadcastReceiver
from driver.concurrent.cnc_file import CNC_FILE, CNC_VERSION, CncError, CncFile
from driver.concurrent.counters import AtomicCounter, CountersReader
from driver.concurrent.ring_buffer import ManyToOneRingBuffer
from driver.context import default_aeron_dir
from driver.protocol import control_protocol as cp

DEFAULT_DRIVER_TIMEOUT_MS = 10_000
IDLE_SLEEP_S = 0.01


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
