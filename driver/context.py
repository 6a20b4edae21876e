"""DriverContext: every driver setting with its ``aeron.*`` property, ``AERON_*`` variable, default and unit.

Precedence: explicit values (CLI flags) > ``-Daeron.x=y`` properties > ``AERON_X_Y`` environment > default.
Sizes accept k/m/g suffixes (x 1024^n) and durations ns/us/ms/s suffixes (plain numbers are the unit
named by the setting), as Agrona's SystemUtil parses them.
"""

from __future__ import annotations

import getpass
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from driver.agent.idle_strategy import IDLE_STRATEGY_NAMES, idle_strategy_name
from driver.agent.scheduling import DEFAULT_SLICE_NS, MAX_SLICE_NS, MIN_SLICE_NS
from driver.protocol.untethered import UntetheredTimeouts
from driver.termination import parse_termination_validator
from driver.util.bit_util import is_power_of_two
from driver.util.files import FilePermissions
from driver.util.settings import (
    ConfigurationError,
    parse_bool,
    parse_duration_ns,
    parse_group,
    parse_mode,
    parse_ms,
    parse_size,
    resolve_settings,
    setting,
    settings_of,
    unknown_properties,
)


def parse_threading_mode(name: str, text: str) -> str:
    mode = text.strip().upper()
    if mode not in ("DEDICATED", "SHARED", "SHARED_NETWORK", "INVOKER"):
        raise ConfigurationError(f"{name}={text!r}: expected DEDICATED, SHARED, SHARED_NETWORK or INVOKER")
    return mode


def parse_realtime_priority(name: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 99:
        raise ConfigurationError(
            f"{name}={text!r}: expected 0 (normal scheduling) or a SCHED_FIFO priority 1-99"
        )
    return value


def parse_idle_strategy(name: str, text: str) -> str:
    """An ``aeron.*.idle.strategy`` value: a short name or the Agrona class name Aeron takes."""
    value = idle_strategy_name(text)
    if value is None:
        raise ConfigurationError(
            f"{name}={text!r}: expected one of {', '.join(IDLE_STRATEGY_NAMES)} "
            "(or org.agrona.concurrent.BackoffIdleStrategy, BusySpinIdleStrategy, YieldingIdleStrategy, "
            "NoOpIdleStrategy, SleepingIdleStrategy)"
        )
    return value


PROFILES: dict[str, dict[str, str]] = {
    # Round trips first (docs/tuning.md, "The low-latency profile"): the default backoff capped at 100 us parks, under
    # SCHED_FIFO where permitted, so a woken driver does not wait behind busy-spinning clients for a
    # scheduler slice. Shorter parks (8 or 4 us) or spinning lose to those clients on a small machine: each
    # wake takes a core from one of them (Ping/Pong p50 16 us: ~131, 8 us: ~184, 4 us: ~218 us).
    "low-latency": {
        "aeron.idle.max.park": "100us",
        "aeron.driver.realtime.priority": "10",
    },
}
"""``mediadriver run --profile NAME``: properties applied below any given explicitly."""


# 1.15.1 names FlowControl classes; we take those (or their simple names) and keep a short key.
FLOW_CONTROL_STRATEGIES = {
    "io.aeron.driver.UnicastFlowControl": "unicast",
    "io.aeron.driver.MaxMulticastFlowControl": "max",
    "io.aeron.driver.MinMulticastFlowControl": "min",
}


def parse_flow_control(name: str, text: str) -> str:
    value = text.strip()
    for class_name, key in FLOW_CONTROL_STRATEGIES.items():
        if value in (class_name, class_name.rsplit(".", 1)[1], key):
            return key
    raise ConfigurationError(
        f"{name}={text!r}: expected one of {', '.join(FLOW_CONTROL_STRATEGIES)} (or unicast, max, min)"
    )


def default_aeron_dir() -> str:
    """Aeron's default: /dev/shm/aeron-<user> on Linux, else <tmpdir>/aeron-<user>."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "default"
    base = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    return os.path.join(base, f"aeron-{user}")


_setting = setting
_IDLE_DOC = "idle strategy: backoff, busy-spin, yield, noop or sleeping"


MIB = 1024 * 1024


@dataclass
class DriverContext:
    aeron_dir: str = _setting("aeron.dir", lambda _n, v: v, "", "path", "the aeron directory")
    dir_delete_on_start: bool = _setting(
        "aeron.dir.delete.on.start",
        parse_bool,
        False,
        "bool",
        "delete the aeron dir even if a driver is active",
    )
    dir_mode: int | None = _setting(
        "aeron.dir.mode",
        parse_mode,
        None,
        "octal",
        "mode of the aeron dir and its subdirectories (default 0700, 0770 with aeron.dir.group)",
    )
    file_mode: int | None = _setting(
        "aeron.file.mode",
        parse_mode,
        None,
        "octal",
        "mode of cnc.dat, loss-report.dat and the log buffers (default 0600, 0660 with aeron.dir.group)",
    )
    dir_group: int | None = _setting(
        "aeron.dir.group",
        parse_group,
        None,
        "group",
        "group (name or gid) owning the aeron dir and its files, whose members' clients may use the driver",
    )
    log_async_length: int = _setting(
        "aeron.log.async.length",
        parse_size,
        64 * 1024 * 1024,
        "bytes",
        "logs this long or longer are made and deleted off the conductor's duty cycle",
    )
    dir_delete_on_shutdown: bool = _setting(
        "aeron.dir.delete.on.shutdown",
        parse_bool,
        False,
        "bool",
        "delete the aeron dir when the driver stops",
    )
    conductor_buffer_length: int = _setting(
        "aeron.conductor.buffer.length", parse_size, MIB + 768, "bytes", "to-driver ring buffer incl. trailer"
    )
    to_clients_buffer_length: int = _setting(
        "aeron.clients.buffer.length",
        parse_size,
        MIB + 128,
        "bytes",
        "to-clients broadcast buffer incl. trailer",
    )
    counters_values_buffer_length: int = _setting(
        "aeron.counters.buffer.length", parse_size, MIB, "bytes", "counter values (metadata is 4x this)"
    )
    error_buffer_length: int = _setting(
        "aeron.error.buffer.length", parse_size, MIB, "bytes", "distinct error log in cnc.dat"
    )
    loss_report_buffer_length: int = _setting(
        "aeron.loss.report.buffer.length", parse_size, MIB, "bytes", "loss-report.dat"
    )
    file_page_size: int = _setting("aeron.file.page.size", parse_size, 4096, "bytes", "page size for files")
    client_liveness_timeout_ns: int = _setting(
        "aeron.client.liveness.timeout",
        parse_duration_ns,
        5_000_000_000,
        "ns",
        "a silent client is timed out",
    )
    driver_timeout_ms: int = _setting(
        "aeron.driver.timeout", parse_ms, 10_000, "ms", "a driver without heartbeat for this long is dead"
    )
    timer_interval_ns: int = _setting(
        "aeron.timer.interval", parse_duration_ns, 1_000_000_000, "ns", "conductor heartbeat and timer checks"
    )
    counter_free_to_reuse_timeout_ns: int = _setting(
        "aeron.counters.free.to.reuse.timeout",
        parse_duration_ns,
        1_000_000_000,
        "ns",
        "freed counter ids wait this long (1.15.1 applies min(this, 1 ms))",
    )
    publication_linger_timeout_ns: int = _setting(
        "aeron.publication.linger.timeout",
        parse_duration_ns,
        5_000_000_000,
        "ns",
        "closed publication linger",
    )
    publication_linger_max_ns: int = _setting(
        "aeron.publication.linger.max",
        parse_duration_ns,
        60_000_000_000,
        "ns",
        "the longest a removed publication lingers once its client is gone (closed or timed out), whatever "
        "linger it asked for",
    )
    termination_validator: str = _setting(
        "aeron.driver.termination.validator",
        parse_termination_validator,
        "deny",
        "name",
        "who may stop the driver with TERMINATE_DRIVER: deny (Aeron's default) or allow",
    )
    reresolution_check_interval_ns: int = _setting(
        "aeron.driver.reresolution.check.interval",
        parse_duration_ns,
        1_000_000_000,
        "ns",
        "an endpoint given as a host name whose receivers went quiet this long is resolved again",
    )
    tether_subscriptions: bool = _setting(
        "aeron.tether.subscriptions",
        parse_bool,
        True,
        "bool",
        "subscriptions hold their stream back by default (a channel's tether= overrides)",
    )
    untethered_window_limit_timeout_ns: int = _setting(
        "aeron.untethered.window.limit.timeout",
        parse_duration_ns,
        5_000_000_000,
        "ns",
        "an untethered subscriber this long behind goes unavailable",
    )
    untethered_linger_timeout_ns: int = _setting(
        "aeron.untethered.linger.timeout",
        parse_duration_ns,
        -1,
        "ns",
        "then still holds the stream this long (-1: the window limit timeout)",
    )
    untethered_resting_timeout_ns: int = _setting(
        "aeron.untethered.resting.timeout",
        parse_duration_ns,
        10_000_000_000,
        "ns",
        "then rests this long before rejoining at the live position",
    )
    term_buffer_length: int = _setting(
        "aeron.term.buffer.length", parse_size, 16 * MIB, "bytes", "term length of network publications"
    )
    ipc_term_buffer_length: int = _setting(
        "aeron.ipc.term.buffer.length", parse_size, 64 * MIB, "bytes", "term length of IPC publications"
    )
    mtu_length: int = _setting("aeron.mtu.length", parse_size, 1408, "bytes", "MTU of network publications")
    ipc_mtu_length: int = _setting(
        "aeron.ipc.mtu.length", parse_size, 1408, "bytes", "MTU of IPC publications"
    )
    spies_simulate_connection: bool = _setting(
        "aeron.spies.simulate.connection",
        parse_bool,
        False,
        "bool",
        "a network publication with spies counts as connected and moves on with them, receivers or not",
    )
    term_buffer_sparse_file: bool = _setting(
        "aeron.term.buffer.sparse.file",
        parse_bool,
        False,
        "bool",
        "do not fault log pages into the driver's mapping up front (the space is reserved all the same)",
    )
    ipc_publication_term_window_length: int = _setting(
        "aeron.ipc.publication.term.window.length",
        parse_size,
        0,
        "bytes",
        "IPC flow window (0 = term length)",
    )
    publication_unblock_timeout_ns: int = _setting(
        "aeron.publication.unblock.timeout",
        parse_duration_ns,
        10_000_000_000,
        "ns",
        "a publication stuck on a dead publisher's claim is unblocked after this",
    )
    publication_reserved_session_id_low: int = _setting(
        "aeron.publication.reserved.session.id.low",
        lambda n, v: int(v),
        -1,
        "int",
        "reserved session ids: low",
    )
    publication_reserved_session_id_high: int = _setting(
        "aeron.publication.reserved.session.id.high", lambda n, v: int(v), 1000, "int", "reserved ids: high"
    )
    status_message_timeout_ns: int = _setting(
        "aeron.rcv.status.message.timeout",
        parse_duration_ns,
        200_000_000,
        "ns",
        "receiver status message interval",
    )
    initial_window_length: int = _setting(
        "aeron.rcv.initial.window.length",
        parse_size,
        MIB,
        "bytes",
        "receiver window (min with term/2 and half the granted SO_RCVBUF; Java: 128 KiB)",
    )
    image_liveness_timeout_ns: int = _setting(
        "aeron.image.liveness.timeout", parse_duration_ns, 10_000_000_000, "ns", "a silent image is retired"
    )
    publication_connection_timeout_ns: int = _setting(
        "aeron.publication.connection.timeout",
        parse_duration_ns,
        5_000_000_000,
        "ns",
        "no status message for this long: the publication is not connected",
    )
    publication_term_window_length: int = _setting(
        "aeron.publication.term.window.length", parse_size, 0, "bytes", "network flow window (0 = term/2)"
    )
    # 1.15.1 fixes both at 60 ms; later Aeron made them settings under these names. A lost retransmission
    # stalls a unicast image for the NAK delay, so on a lossy path with small terms (a 32 KiB window) they
    # cap throughput (docs/archive.md section 16).
    nak_unicast_delay_ns: int = _setting(
        "aeron.nak.unicast.delay",
        parse_duration_ns,
        60_000_000,
        "ns",
        "a unicast image NAKs a new gap at once and again after this long while it stays open",
    )
    retransmit_unicast_linger_ns: int = _setting(
        "aeron.retransmit.unicast.linger",
        parse_duration_ns,
        60_000_000,
        "ns",
        "after a unicast retransmission, NAKs for the same range are ignored this long",
    )
    unicast_flow_control: str = _setting(
        "aeron.unicast.flow.control.strategy",
        parse_flow_control,
        "unicast",
        "class",
        "flow control of unicast publications",
    )
    multicast_flow_control: str = _setting(
        "aeron.multicast.flow.control.strategy",
        parse_flow_control,
        "max",
        "class",
        "flow control of multicast and MDC publications (min: the slowest receiver sets the pace)",
    )
    # Larger than Java's 128 KiB / 128 KiB: each status message round trip then carries 1 MiB, which is what
    # bounds a stream's rate once the kernel trips are batched (docs/performance.md).
    socket_so_rcvbuf: int = _setting(
        "aeron.socket.so_rcvbuf",
        parse_size,
        2 * MIB,
        "bytes",
        "SO_RCVBUF (Java: 128 KiB; capped by rmem_max)",
    )
    socket_so_sndbuf: int = _setting("aeron.socket.so_sndbuf", parse_size, 0, "bytes", "SO_SNDBUF (0 = OS)")
    socket_gso: bool = _setting(
        "aeron.socket.gso",
        parse_bool,
        True,
        "bool",
        "send bursts with UDP segmentation offload (same datagrams on the wire; docs/wire.md section 10)",
    )
    socket_gro: bool = _setting(
        "aeron.socket.gro",
        parse_bool,
        True,
        "bool",
        "let the kernel coalesce received datagrams (UDP_GRO), split again by the receiver",
    )
    socket_multicast_ttl: int = _setting(
        "aeron.socket.multicast.ttl", lambda n, v: int(v), 0, "hops", "multicast TTL (0 = OS default)"
    )
    receive_data_loss_rate: float = _setting(
        "aeron.debug.receive.data.loss.rate",
        lambda n, v: float(v),
        0.0,
        "ratio",
        "tests: drop this share of received DATA datagrams (seeded)",
    )
    receive_data_loss_seed: int = _setting(
        "aeron.debug.receive.data.loss.seed",
        lambda n, v: int(v),
        0,
        "int",
        "tests: seed of the loss generator",
    )
    # SHARED by default: every agent runs on one event loop anyway, and one runner parks once for all of
    # them (DEDICATED would wake the loop once per agent per park).
    threading_mode: str = _setting(
        "aeron.threading.mode",
        parse_threading_mode,
        "SHARED",
        "mode",
        "SHARED (default), DEDICATED, SHARED_NETWORK or INVOKER (embedders: MediaDriver.invoker)",
    )
    idle_max_park_ns: int = _setting(
        "aeron.idle.max.park", parse_duration_ns, 1_000_000, "ns", "longest idle park of an agent (<= 1 ms)"
    )
    idle_min_park_ns: int = _setting(
        "aeron.idle.min.park",
        parse_duration_ns,
        16_000,  # media_driver.IDLE_MIN_PARK_NS
        "ns",
        "first park of the backoff strategy (capped by aeron.idle.max.park), also after a cycle that moved little",
    )
    idle_min_park_adapt: bool = _setting(
        "aeron.idle.min.park.adapt",
        parse_bool,
        # How soon a client answers depends on the host: on a 2-vCPU VM whose driver shares a core with a
        # busy-spinning Pong, a 16 us park woke before Pong had answered (a wasted wake-up of ~23 us of CPU,
        # then a longer park): Java Ping/Pong p50 190 us; at 24 us 133 us (tools/bench/shell_launch.sh -p).
        True,
        "bool",
        "the park after a cycle that moved a little (aeron.idle.min.park) lengthens, up to 4 times, while "
        "the answer it waits for comes after it ends, and shortens back as answers come sooner",
    )
    idle_probe: bool = _setting(
        "aeron.idle.probe",
        parse_bool,
        True,
        "bool",
        "a park that ends on its timer first checks the words clients write (publication "
        "tails, subscriber positions, the command ring) and parks again if none moved (a full cycle still runs "
        "each millisecond)",
    )
    native_cycle: bool = _setting(
        "aeron.driver.native.cycle",
        parse_bool,
        True,
        "bool",
        "in SHARED threading mode, a wake-up between two Python duty cycles runs the steady state (sending what "
        "publishers committed, rebuilding what arrived) in one native call while nothing but data moves "
        "(driver/fast_cycle.py; needs aeron.idle.probe)",
    )
    idle_probe_spin_ns: int = _setting(
        "aeron.idle.probe.spin",
        parse_duration_ns,
        # One look: a client on the other core has often answered by the time the cycle ends, while a park costs
        # a timer's arming and wake-up, ~30 us on a VM (tools/bench/rtt_split.py: Java Ping/Pong p50 134 -> 104 us
        # with the probe and this look; longer spins only delay a client that shares this core).
        1_000,
        "ns",
        "after a cycle that moved a little, how long to watch those words without giving up the CPU before "
        "parking: a client's answer already there runs the next cycle at once (0 = park at once; needs "
        "aeron.idle.probe)",
    )
    idle_dormant_park_ns: int = _setting(
        "aeron.idle.dormant.park",
        parse_duration_ns,
        10_000_000,
        "ns",
        "park of a driver with no clients and no resources (0 = always aeron.idle.max.park)",
    )
    conductor_sweep_interval_ns: int = _setting(
        "aeron.conductor.sweep.interval",
        parse_duration_ns,
        # A Python sweep costs several µs a cycle that a request and its answer wait for (tools/bench/rtt_split.py,
        # Ping/Pong p50 107 -> 96-98 us on a 2-vCPU VM, 103 at 100 us; shell launches, 3 pairs: 200 us 107-110,
        # 1 ms 102-105); a stream (positions moving by a kilobyte) sweeps every cycle, and a trickle of less
        # than a kilobyte a millisecond is far from any limit or status message threshold.
        1_000_000,
        "ns",
        "how often the conductor looks at positions (publisher limits, image rebuilds and status messages) while "
        "they move by less than a kilobyte a cycle: at most this long after a message (0 = every cycle)",
    )
    conductor_idle_strategy: str = _setting(
        "aeron.conductor.idle.strategy", parse_idle_strategy, "backoff", "name", _IDLE_DOC + " (DEDICATED)"
    )
    sender_idle_strategy: str = _setting(
        "aeron.sender.idle.strategy", parse_idle_strategy, "backoff", "name", _IDLE_DOC + " (DEDICATED)"
    )
    receiver_idle_strategy: str = _setting(
        "aeron.receiver.idle.strategy", parse_idle_strategy, "backoff", "name", _IDLE_DOC + " (DEDICATED)"
    )
    shared_network_idle_strategy: str = _setting(
        "aeron.sharednetwork.idle.strategy",
        parse_idle_strategy,
        "backoff",
        "name",
        _IDLE_DOC + " (sender and receiver in SHARED_NETWORK)",
    )
    shared_idle_strategy: str = _setting(
        "aeron.shared.idle.strategy", parse_idle_strategy, "backoff", "name", _IDLE_DOC + " (SHARED)"
    )
    realtime_priority: int = _setting(
        "aeron.driver.realtime.priority",
        parse_realtime_priority,
        0,
        "1-99",
        "SCHED_FIFO priority of the thread running the agents; 0 = normal scheduling "
        "(needs CAP_SYS_NICE or RLIMIT_RTPRIO, else a warning)",
    )
    scheduler_slice_ns: int = _setting(
        "aeron.driver.scheduler.slice",
        parse_duration_ns,
        # driver/agent/scheduling.py says why: a woken driver preempts busy-spinning clients sooner.
        DEFAULT_SLICE_NS,
        "ns",
        "time slice the thread running the agents asks for under normal scheduling (Linux 6.12+, "
        "100us-100ms; 0 = the kernel's default)",
    )
    # -D properties given in the aeron.* namespace that no setting knows (reported, not fatal, as in Java).
    unknown_properties: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.aeron_dir:
            self.aeron_dir = default_aeron_dir()

    @classmethod
    def settings(cls) -> list[Any]:
        return settings_of(cls)

    @classmethod
    def from_sources(
        cls,
        explicit: Mapping[str, Any] | None = None,
        properties: Mapping[str, str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> DriverContext:
        """Build a context from flags (field names), -D properties (aeron.*) and AERON_* variables."""
        properties = dict(properties or {})
        values = resolve_settings(
            cls, dict(explicit or {}), properties, os.environ if environ is None else environ
        )
        # aeron.archive.* belong to the archive's context, which reports its own unknown ones.
        unknown = [
            p for p in unknown_properties(cls, properties, "aeron.") if not p.startswith("aeron.archive.")
        ]
        ctx = cls(**values, unknown_properties=unknown)
        ctx.validate()
        return ctx

    def validate(self) -> None:
        def power_of_two_capacity(name: str, length: int, trailer: int) -> None:
            if length <= trailer or not is_power_of_two(length - trailer):
                raise ConfigurationError(
                    f"{name}={length}: capacity (length - {trailer} trailer bytes) must be a power of two"
                )

        power_of_two_capacity("aeron.conductor.buffer.length", self.conductor_buffer_length, 768)
        power_of_two_capacity("aeron.clients.buffer.length", self.to_clients_buffer_length, 128)
        if self.counters_values_buffer_length <= 0 or self.counters_values_buffer_length % 128:
            raise ConfigurationError(
                f"aeron.counters.buffer.length={self.counters_values_buffer_length}: must be a multiple of 128"
            )
        if self.error_buffer_length <= 0 or self.error_buffer_length % 8:
            raise ConfigurationError(f"aeron.error.buffer.length={self.error_buffer_length}: multiple of 8")
        if not is_power_of_two(self.file_page_size) or self.file_page_size < 4096:
            raise ConfigurationError(f"aeron.file.page.size={self.file_page_size}: power of two >= 4096")
        if self.client_liveness_timeout_ns < 1_000_000:
            raise ConfigurationError("aeron.client.liveness.timeout must be at least 1 ms")
        if not 0 < self.idle_max_park_ns <= 1_000_000:
            raise ConfigurationError("aeron.idle.max.park must be between 1 ns and 1 ms")
        if self.scheduler_slice_ns and not MIN_SLICE_NS <= self.scheduler_slice_ns <= MAX_SLICE_NS:
            raise ConfigurationError(
                f"aeron.driver.scheduler.slice={self.scheduler_slice_ns} ns: must be 0 or between 100us and 100ms"
            )
        if self.idle_min_park_ns <= 0:
            raise ConfigurationError("aeron.idle.min.park must be at least 1 ns (aeron.idle.max.park caps it)")

    @property
    def untethered_timeouts(self) -> UntetheredTimeouts:
        linger = self.untethered_linger_timeout_ns
        return UntetheredTimeouts(
            self.untethered_window_limit_timeout_ns,
            self.untethered_window_limit_timeout_ns if linger < 0 else linger,
            self.untethered_resting_timeout_ns,
        )

    @property
    def file_permissions(self) -> FilePermissions:
        """Modes and group of the aeron dir and its files: private to this user unless the operator opts
        in (docs/getting-started.md, "Sharing the aeron dir")."""
        return FilePermissions.from_settings(self.dir_group, self.dir_mode, self.file_mode)

    @property
    def aeron_path(self) -> Path:
        return Path(self.aeron_dir)

    @property
    def counters_metadata_buffer_length(self) -> int:
        return self.counters_values_buffer_length * 4

    @property
    def counter_free_to_reuse_timeout_ms(self) -> int:
        # Reproduces 1.15.1's min() (instead of max()) in MediaDriver.Context.concludeCounters.
        return min(self.counter_free_to_reuse_timeout_ns // 1_000_000, 1)


def parse_property_args(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """Split ``-Dkey=value`` (or ``-D key=value``) arguments from the rest of a command line."""
    properties: dict[str, str] = {}
    rest: list[str] = []
    it = iter(argv)
    for arg in it:
        if arg.startswith("-D"):
            body = arg[2:] or next(it, "")
            key, sep, value = body.partition("=")
            if not sep or not key:
                shown = arg if arg != "-D" else f"-D {body}"
                raise ConfigurationError(
                    f"{shown!r}: expected -Dname=value, for example -Daeron.dir=/dev/shm/aeron"
                )
            properties[key] = value
        else:
            rest.append(arg)
    return properties, rest
