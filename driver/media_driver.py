"""MediaDriver: prepares the aeron dir and cnc.dat, wires the agents and runs them on the loop.

Start-up follows Aeron 1.15.1 (docs/cnc.md §3): refuse a directory whose driver is alive, save the
error log of a dead one beside the directory, then recreate it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import os
import pwd
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from driver.agent.agent_invoker import AgentInvoker
from driver.agent.command_queue import CommandQueue
from driver.agent.idle_strategy import (
    BackoffIdleStrategy,
    BusySpinIdleStrategy,
    IdleStrategy,
    SleepingIdleStrategy,
    YieldingIdleStrategy,
)
from driver.agent.runner import AgentRunner, CompositeAgent
from driver.agent.scheduling import DEFAULT_SLICE_NS, restore, use_realtime, use_slice
from driver.agent.work_probe import WorkProbe
from driver.client_proxy import ClientProxy
from driver.concurrent.broadcast import BroadcastTransmitter
from driver.concurrent.cnc_file import CNC_FILE, CNC_VERSION, CncError, CncFile, CncLengths
from driver.concurrent.counters import CountersManager
from driver.concurrent.error_log import DistinctErrorLog, ErrorLogReader, format_error_log
from driver.concurrent.ring_buffer import ManyToOneRingBuffer
from driver.conductor import DriverConductor
from driver.context import DriverContext
from driver.driver_conductor_proxy import DriverConductorProxy
from driver.fast_cycle import FastCycle
from driver.media.loss_generator import LossGenerator
from driver.protocol.frames import HDR_TYPE_DATA, HDR_TYPE_PAD
from driver.receiver import Receiver
from driver.receiver_proxy import ReceiverProxy
from driver.reports.loss_report import LOSS_REPORT_FILE, LossReport, LossReportFile, create_loss_report_file
from driver.sender import Sender
from driver.sender_proxy import SenderProxy
from driver.status.duty_cycle import DutyCycleTracker
from driver.status.system_counters import SystemCounterDescriptor, SystemCounters
from driver.util.files import FileAllocationError, remove_dir

log = logging.getLogger(__name__)

IDLE_MAX_SPINS = 0
IDLE_MAX_YIELDS = 0
IDLE_MIN_PARK_NS = 16_000
IDLE_BUSY_WORK = 256
"""The agents' backoff: no spins or yields, parks from aeron.idle.min.park (IDLE_MIN_PARK_NS) doubling up to
aeron.idle.max.park; after a cycle that moved less than IDLE_BUSY_WORK (bytes sent plus datagrams and
commands handled: one small message), the shortest park before the next cycle. Why (tools/bench/rtt_split.py,
Java Ping/Pong on 2 cores): a Python duty cycle costs 10-20 us, so each spin or extra cycle keeps a
busy-spinning client off its core and the round trip waits behind it; parking at once lets the client answer
first."""


class DriverStartError(RuntimeError):
    """The driver cannot start; the message says why and what to do."""


class ActiveDriverError(DriverStartError):
    """Another driver is alive on the same aeron dir."""


AERON_DIR_ENTRIES = frozenset({CNC_FILE, LOSS_REPORT_FILE, "publications", "images"})
"""What the driver makes in its aeron dir: all that goes from a dir the driver may not remove (a mount point)."""


def owns_entry(name: str) -> bool:
    return name in AERON_DIR_ENTRIES


def epoch_ms() -> int:
    return time.time_ns() // 1_000_000


def _error_log_file_name(directory: Path, now: datetime.datetime) -> Path:
    # Aeron names it <dir>-<yyyy-MM-dd-HH-mm-ss-SSSZ>-error.log
    stamp = now.strftime("%Y-%m-%d-%H-%M-%S-") + f"{now.microsecond // 1000:03d}" + now.strftime("%z")
    return directory.with_name(f"{directory.name}-{stamp}-error.log")


def inspect_existing_driver(directory: Path, driver_timeout_ms: int) -> Path | None:
    """Raise ActiveDriverError if a live driver owns ``directory``; else save a dead one's error log.

    Returns the saved error log path, if any.
    """
    cnc_path = directory / CNC_FILE
    if not cnc_path.exists() or cnc_path.stat().st_size == 0:
        return None
    try:
        cnc = CncFile.map_existing(cnc_path, writable=False)
    except CncError:
        return None  # a torn or truncated file from a crashed start: nothing to keep
    with cnc:
        deadline = time.monotonic() + 1.0
        while cnc.version == 0 and time.monotonic() < deadline:
            time.sleep(0.001)
        version = cnc.version
        if version == 0:
            return None
        if version != CNC_VERSION:
            raise DriverStartError(
                f"{cnc_path} has CnC version {version}, not {CNC_VERSION} (Aeron 1.15.1): another Aeron "
                f"version's driver may own {directory}. Stop it, remove the directory, or start with "
                "-Daeron.dir.delete.on.start=true"
            )
        ring = ManyToOneRingBuffer(cnc.to_driver_buffer)
        heartbeat_ms = ring.consumer_heartbeat_time()
        age_ms = epoch_ms() - heartbeat_ms
        if heartbeat_ms != 0 and age_ms <= driver_timeout_ms:
            raise ActiveDriverError(active_driver_message(directory, cnc.pid, age_ms, driver_timeout_ms))
        if not ErrorLogReader.has_errors(cnc.error_log_buffer):
            return None
        text = format_error_log(cnc.error_log_buffer)
    saved = _error_log_file_name(directory, datetime.datetime.now().astimezone())
    try:
        saved.write_text(text)
    except OSError:
        # Beside the dir is not writable (a mount point at /aeron): inside it, under a name the driver keeps.
        saved = directory / saved.name
        saved.write_text(text)
    return saved


def pid_alive(pid: int) -> bool | None:
    """Whether process ``pid`` runs in this pid namespace; None where that cannot tell (a pid of 0, or this
    process's own pid: the old driver ran in another namespace, as a restarted container's pid 1 does)."""
    if pid <= 0 or pid == os.getpid():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def active_driver_message(directory: Path, pid: int, age_ms: int, driver_timeout_ms: int) -> str:
    """Why a dir with a fresh heartbeat is refused, and when it can be used: a live pid is a driver to stop; a pid
    that is gone left its heartbeat behind (kill -9), which goes stale after the driver timeout."""
    head = f"active driver detected in {directory}: pid {pid}"
    alive = pid_alive(pid)
    if alive:
        return (
            f"{head} is running, heartbeat {age_ms} ms ago; stop that driver first (mediadriver terminate "
            f"--dir {directory}) or choose another directory with --dir, AERON_DIR or -Daeron.dir"
        )
    state = "is gone (no such process here)" if alive is False else "cannot be checked from this pid namespace"
    wait_ms = max(driver_timeout_ms - age_ms + 1, 0)
    return (
        f"{head} {state} but its last heartbeat was {age_ms} ms ago; a new driver takes the dir over in "
        f"{wait_ms} ms, once that heartbeat is older than the {driver_timeout_ms} ms driver timeout "
        "(aeron.driver.timeout), or now with -Daeron.dir.delete.on.start=true (safe unless a driver in another "
        "pid namespace, such as another container, shares the dir)"
    )


def _not_ours(directory: Path, error: PermissionError) -> str | None:
    """A refusal on another user's aeron dir (a file or dir there is not ours), in the one wording of a permission
    refusal: the path, whose it is, what to do; None when what refused is this user's own."""
    path = Path(error.filename) if error.filename else directory
    for candidate in (path, *path.parents):
        try:
            uid = candidate.stat().st_uid
        except OSError:
            continue
        if uid == os.geteuid():
            return None
        try:
            owner = f" (it belongs to {pwd.getpwuid(uid).pw_name})"
        except KeyError:
            owner = f" (it belongs to uid {uid})"
        break
    else:
        return None
    return (
        f"permission denied on {path}{owner}: the aeron dir {directory} is another user's, perhaps its driver's; "
        "run the driver as that user or give it a directory of its own with --dir, AERON_DIR or -Daeron.dir"
    )


class MediaDriver:
    def __init__(
        self,
        ctx: DriverContext,
        epoch_clock_ms: Callable[[], int] = epoch_ms,
        nano_clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        """Clocks are injectable so that tests can drive timeouts by hand (INVOKER mode)."""
        self.ctx = ctx
        self.aeron_dir = ctx.aeron_path
        self.saved_error_log: Path | None = None
        self.permissions = ctx.file_permissions
        self._prepare_directory()
        try:
            self._create_files(ctx, epoch_clock_ms)
        except FileAllocationError as e:
            with contextlib.suppress(OSError):
                remove_dir(self.aeron_dir, owns_entry)
            raise DriverStartError(f"cannot create the driver's files: {e}") from e
        self.counters = CountersManager(
            self.cnc.counters_metadata_buffer,
            self.cnc.counters_values_buffer,
            epoch_clock_ms,
            ctx.counter_free_to_reuse_timeout_ms,
        )
        self.system_counters = SystemCounters(self.counters)
        self.error_log = DistinctErrorLog(self.cnc.error_log_buffer, epoch_clock_ms)
        self._continue_init(ctx, epoch_clock_ms, nano_clock)

    def _create_files(self, ctx: DriverContext, epoch_clock_ms: Callable[[], int]) -> None:
        """cnc.dat and loss-report.dat, allocated in full (nothing to fault on later)."""
        self.cnc = CncFile.create(
            self.aeron_dir,
            CncLengths(
                ctx.conductor_buffer_length,
                ctx.to_clients_buffer_length,
                ctx.counters_metadata_buffer_length,
                ctx.counters_values_buffer_length,
                ctx.error_buffer_length,
            ),
            ctx.client_liveness_timeout_ns,
            epoch_clock_ms(),
            os.getpid(),
            ctx.file_page_size,
            self.permissions,
        )
        try:
            loss_report_path = create_loss_report_file(
                self.aeron_dir, ctx.loss_report_buffer_length, ctx.file_page_size, self.permissions
            )
        except BaseException:
            self.cnc.close()
            raise
        self.loss_report_file = LossReportFile.map_existing(loss_report_path, writable=True)

    def _continue_init(
        self, ctx: DriverContext, epoch_clock_ms: Callable[[], int], nano_clock: Callable[[], int]
    ) -> None:
        self.to_driver = ManyToOneRingBuffer(self.cnc.to_driver_buffer)
        self.client_proxy = ClientProxy(BroadcastTransmitter(self.cnc.to_clients_buffer))
        loss_generator = None
        if ctx.receive_data_loss_rate > 0:
            loss_generator = LossGenerator(
                ctx.receive_data_loss_rate, ctx.receive_data_loss_seed, {HDR_TYPE_DATA, HDR_TYPE_PAD}
            )
        # One bounded queue into each agent; the others reach it only through its proxy.
        sender_commands, receiver_commands, conductor_commands = (
            CommandQueue(),
            CommandQueue(),
            CommandQueue(),
        )
        counter = self.system_counters.get
        self.sender = Sender(
            self.system_counters,
            nano_clock,
            commands=sender_commands,
            conductor_proxy=DriverConductorProxy(
                conductor_commands, counter(SystemCounterDescriptor.CONDUCTOR_PROXY_FAILS)
            ),
        )
        self.receiver = Receiver(
            self.system_counters,
            loss_generator,
            nano_clock,
            conductor_proxy=DriverConductorProxy(
                conductor_commands, counter(SystemCounterDescriptor.CONDUCTOR_PROXY_FAILS)
            ),
            commands=receiver_commands,
        )
        self.conductor = DriverConductor(
            ctx,
            self.to_driver,
            self.client_proxy,
            self.counters,
            self.system_counters,
            self.on_error,
            epoch_clock_ms,
            nano_clock,
            commands=conductor_commands,
            sender_proxy=SenderProxy(sender_commands, counter(SystemCounterDescriptor.SENDER_PROXY_FAILS)),
            receiver_proxy=ReceiverProxy(
                receiver_commands, counter(SystemCounterDescriptor.RECEIVER_PROXY_FAILS)
            ),
            loss_report=LossReport(self.loss_report_file.buffer),
            termination_hook=self.request_stop,
        )
        mapped = self.conductor.mapped_files_length = (
            self.cnc.path.stat().st_size + self.loss_report_file.path.stat().st_size
        )
        counter(SystemCounterDescriptor.BYTES_CURRENTLY_MAPPED).set(mapped)  # logs join on the conductor's timer
        # Each agent's duty cycle timed (system counters 26..31), whatever runs it.
        for agent, longest, exceeded in (
            (
                self.conductor,
                SystemCounterDescriptor.CONDUCTOR_MAX_CYCLE_TIME,
                SystemCounterDescriptor.CONDUCTOR_CYCLE_TIME_THRESHOLD_EXCEEDED,
            ),
            (
                self.sender,
                SystemCounterDescriptor.SENDER_MAX_CYCLE_TIME,
                SystemCounterDescriptor.SENDER_CYCLE_TIME_THRESHOLD_EXCEEDED,
            ),
            (
                self.receiver,
                SystemCounterDescriptor.RECEIVER_MAX_CYCLE_TIME,
                SystemCounterDescriptor.RECEIVER_CYCLE_TIME_THRESHOLD_EXCEEDED,
            ),
        ):
            agent.do_work = DutyCycleTracker(counter(longest), counter(exceeded)).wrap(agent.do_work)  # type: ignore[method-assign]
        self.to_driver.set_consumer_heartbeat_time(epoch_clock_ms())
        # Today's drivers use up one correlation id before signalling ready, so the first client id is 1
        # (modern clients treat 0 as "no client"); 1.15.1 clients take whatever comes next.
        self.to_driver.next_correlation_id()
        self.cnc.signal_ready()
        self._runners: list[AgentRunner] = []
        self._extra_agents: list[tuple[Any, bool]] = []
        self._embedded_clients: dict[int, Callable[[], bool]] = {}
        self._embedded_client_ids: frozenset[int] = frozenset()
        self._stop_requested = False
        self._stop_event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self.invoker: AgentInvoker | None = None
        """INVOKER threading mode: the embedder calls ``invoker.start()``, then ``invoker.invoke()``
        repeatedly on the thread (event loop) of its choice, and ``close()`` (or the driver's ``close()``)."""
        if ctx.threading_mode == "INVOKER":
            self.invoker = AgentInvoker(CompositeAgent(self._all_agents()), self.on_error)

    @classmethod
    def launch(cls, ctx: DriverContext | None = None) -> MediaDriver:
        return cls(ctx or DriverContext())

    @classmethod
    def launch_embedded(cls, ctx: DriverContext | None = None) -> MediaDriver:
        """A driver on a fresh, unique aeron dir (tests and embedders), like Aeron's launchEmbedded."""
        ctx = ctx or DriverContext()
        ctx.aeron_dir = f"{ctx.aeron_dir}-{uuid.uuid4().hex[:12]}"
        ctx.dir_delete_on_shutdown = True
        return cls(ctx)

    def _prepare_directory(self) -> None:
        try:
            self._make_directory()
        except PermissionError as e:
            raise DriverStartError(
                _not_ours(self.aeron_dir, e)
                or f"cannot create the aeron dir {self.aeron_dir}: permission denied on {e.filename or self.aeron_dir}. "
                "Choose a writable directory with --dir, AERON_DIR or -Daeron.dir"
            ) from e
        except OSError as e:
            raise DriverStartError(
                f"cannot create the aeron dir {self.aeron_dir}: {e.strerror or e}. "
                "Choose a writable directory with --dir, AERON_DIR or -Daeron.dir"
            ) from e

    def _make_directory(self) -> None:
        directory = self.aeron_dir
        if directory.is_symlink():
            # The driver deletes and remakes its dir at start: through a link that would empty whatever it
            # points to (or, for the link alone, leave the data elsewhere), so a link is refused by name.
            raise DriverStartError(
                f"cannot use the aeron dir {directory}: it is a symbolic link (to {os.readlink(directory)}), "
                "and the driver deletes and recreates its dir at start. Give the real directory, or another "
                "path, with --dir, AERON_DIR or -Daeron.dir"
            )
        kept = False
        if directory.exists():
            if not self.ctx.dir_delete_on_start:
                self.saved_error_log = inspect_existing_driver(directory, self.ctx.driver_timeout_ms)
            # A mount point (a tmpfs, a container's memory volume) stays: what the driver made in it goes.
            kept = not remove_dir(directory, owns_entry)
        directory.mkdir(parents=True, exist_ok=kept)
        (directory / "publications").mkdir()
        (directory / "images").mkdir()
        # Exact modes and group, whatever the umask: the dir holds every payload and the command ring. A kept dir
        # of another owner keeps its mode (only its owner may change it); what the driver makes is private.
        for path in (directory, directory / "publications", directory / "images"):
            if path is directory and kept and directory.stat().st_uid != os.geteuid():
                continue
            self.permissions.apply_to_dir(path)

    def on_error(self, error: BaseException) -> None:
        """Every error the driver observes: kept once per distinct kind in the error log, then counted (as Aeron's
        CountedErrorHandler: whoever sees the count go up finds the entry already logged)."""
        self.error_log.record(error)
        self.system_counters.get(SystemCounterDescriptor.ERRORS).increment()

    # --- running ---------------------------------------------------------------------------------

    def add_agent(self, agent: Any, share_runner: bool = False) -> None:
        """Run another agent on the driver's loop (the archive's, embedded): before ``run()``. With
        ``share_runner`` it joins the driver's composite in SHARED mode (and the invoker in INVOKER mode);
        otherwise it gets a runner of its own."""
        self._extra_agents.append((agent, share_runner))
        if self.invoker is not None:
            self.invoker.agent.agents.append(agent)

    def add_embedded_client(self, client_id: int, is_dormant: Callable[[], bool]) -> None:
        """A client in this process (the embedded archive's) that need not keep the driver awake: while it
        is the only client and ``is_dormant()`` says it has nothing to do, the driver's agents (and agents
        added with ``add_agent``) park ``aeron.idle.dormant.park``. Any other client ends that."""
        self._embedded_clients[client_id] = is_dormant
        self._embedded_client_ids = frozenset(self._embedded_clients)

    def _all_agents(self) -> list[Any]:
        # Java's SHARED order: a client's offer goes out first in a cycle, and the answer is read in the
        # same cycle, before the conductor's bookkeeping (a round trip waits for one fewer agent per hop).
        return [self.sender, self.receiver, self.conductor]

    def _agents(self) -> list[tuple[Any, str]]:
        """What each runner runs, with its idle strategy's name (Aeron's aeron.*.idle.strategy settings):
        DEDICATED, one runner per agent; SHARED (default), one over all of them; SHARED_NETWORK, the
        conductor alone and one over the sender and receiver. Added agents back off."""
        ctx = self.ctx
        mode = ctx.threading_mode
        own = [(agent, "backoff") for agent, share in self._extra_agents if not share or mode != "SHARED"]
        if mode == "DEDICATED":
            return [
                (self.conductor, ctx.conductor_idle_strategy),
                (self.sender, ctx.sender_idle_strategy),
                (self.receiver, ctx.receiver_idle_strategy),
                *own,
            ]
        if mode == "SHARED_NETWORK":
            return [
                (self.conductor, ctx.conductor_idle_strategy),
                (CompositeAgent([self.sender, self.receiver]), ctx.shared_network_idle_strategy),
                *own,
            ]
        shared = [agent for agent, share in self._extra_agents if share]
        return [(CompositeAgent([*self._all_agents(), *shared]), ctx.shared_idle_strategy), *own]

    def _idle_strategy(self, name: str) -> IdleStrategy:
        max_park_ns = self.ctx.idle_max_park_ns
        if name == "busy-spin" or name == "noop":
            return BusySpinIdleStrategy()
        if name == "yield":
            return YieldingIdleStrategy()
        if name == "sleeping":
            return SleepingIdleStrategy(max_park_ns, self.ctx.idle_dormant_park_ns, self.is_dormant)
        return BackoffIdleStrategy(
            # A Python duty cycle costs ~20 us and a spin or yield keeps the CPU, so back off to
            # short (timerfd-precise) parks soon: on a small machine the clients the driver waits
            # for then get the CPU (tools/bench/udp_throughput.py: ~0.4 -> ~0.7 M msgs/s, 32 B).
            max_spins=IDLE_MAX_SPINS,
            max_yields=IDLE_MAX_YIELDS,
            min_park_ns=min(self.ctx.idle_min_park_ns, max_park_ns),
            max_park_ns=max_park_ns,
            busy_work=IDLE_BUSY_WORK,
            adaptive_answer_park=self.ctx.idle_min_park_adapt,
            # A driver nobody uses parks longer; a client's first command then waits <= this
            # (clients allow seconds), and the ≤ 1 ms park resumes as soon as it is served.
            dormant_park_ns=self.ctx.idle_dormant_park_ns,
            is_dormant=self.is_dormant,
        )

    def _probe(self, agent: Any) -> WorkProbe | None:
        if not self.ctx.idle_probe:
            return None
        members = agent.agents if isinstance(agent, CompositeAgent) else [agent]
        return WorkProbe.for_agents(members, spin_ns=self.ctx.idle_probe_spin_ns)

    def _fast_cycle(self, agent: Any) -> FastCycle | None:
        """The native steady-state cycle for the SHARED runner over exactly the driver's three agents (one
        with an added agent, the embedded archive's, keeps the Python cycle: its work is not visible here)."""
        if not (self.ctx.native_cycle and self.ctx.idle_probe and isinstance(agent, CompositeAgent)):
            return None
        if set(map(id, agent.agents)) != {id(self.conductor), id(self.sender), id(self.receiver)}:
            return None
        return FastCycle([self.conductor, self.sender, self.receiver])

    async def run(self) -> None:
        """Run every agent until ``request_stop()`` (also when that came first); then shut down in two
        phases. In INVOKER threading mode there is nothing to run: use :attr:`invoker` instead."""
        if self.invoker is not None:
            raise DriverStartError(
                "threading mode INVOKER runs no agent by itself: call driver.invoker.start(), then "
                "driver.invoker.invoke() repeatedly, or choose DEDICATED, SHARED or SHARED_NETWORK to run()"
            )
        self._loop = asyncio.get_running_loop()
        self._stop_event = asyncio.Event()
        if self._stop_requested:
            self._stop_event.set()
        self._runners = [
            AgentRunner(agent, self._idle_strategy(name), self.on_error, self._probe(agent), self._fast_cycle(agent))
            for agent, name in self._agents()
        ]
        # Socket readiness wakes the runner that polls the socket (sender: control, receiver: data).
        for runner in self._runners:
            members = runner.agent.agents if isinstance(runner.agent, CompositeAgent) else [runner.agent]
            for agent in members:
                if isinstance(agent, Sender | Receiver):
                    agent.waker = runner.waker
        restore_scheduling = None
        if self.ctx.realtime_priority:
            restore_scheduling, refused = use_realtime(self.ctx.realtime_priority)
            if refused is not None:
                log.warning("aeron.driver.realtime.priority: %s; running with normal scheduling", refused)
        if restore_scheduling is None and self.ctx.scheduler_slice_ns:
            refused = use_slice(self.ctx.scheduler_slice_ns)
            if refused is not None:
                # The default is a request the kernel may not grant (a sandbox's seccomp): only a value the user
                # chose is worth a warning.
                level = logging.DEBUG if self.ctx.scheduler_slice_ns == DEFAULT_SLICE_NS else logging.WARNING
                log.log(level, "aeron.driver.scheduler.slice: %s; the kernel's default slice applies", refused)
        for runner in self._runners:
            runner.start()
        try:
            await self._stop_event.wait()
        finally:
            for runner in self._runners:
                runner.stop()
            await asyncio.gather(*(runner.join(timeout_s=5.0) for runner in self._runners))
            if restore_scheduling is not None:
                restore(restore_scheduling)
            elif self.ctx.scheduler_slice_ns:
                use_slice(0)

    def is_dormant(self) -> bool:
        """Nothing to serve (its agents then park aeron.idle.dormant.park): see DriverConductor.is_dormant."""
        return (
            self.conductor.is_dormant(self._embedded_client_ids)
            and not self.sender.commands
            and not self.receiver.has_pending_commands()
            and all(is_dormant() for is_dormant in self._embedded_clients.values())
        )

    def request_stop(self) -> None:
        """Ask ``run()`` to stop; from any thread, before or while it runs (a later run returns at once
        after a clean start and stop)."""
        self._stop_requested = True
        loop, event = self._loop, self._stop_event
        if loop is None or event is None:
            return  # run() has not started: it sees the flag
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            event.set()
        elif not loop.is_closed():
            loop.call_soon_threadsafe(event.set)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.invoker is not None:
            self.invoker.close()  # the agents close their sockets and logs before the files go
        # A clean stop withdraws the heartbeat: clients learn at once that the driver is gone, and a new
        # driver may start on the same dir without waiting out the driver timeout.
        self.to_driver.set_consumer_heartbeat_time(0)
        self.loss_report_file.close()
        self.cnc.close()
        if self.ctx.dir_delete_on_shutdown:
            with contextlib.suppress(OSError):
                remove_dir(self.aeron_dir, owns_entry)

    def __enter__(self) -> MediaDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
