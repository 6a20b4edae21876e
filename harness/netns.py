"""Two "hosts" for system tests and benchmarks: network namespaces joined by a link with optional loss, delay,
jitter, reordering and duplication.

    with two_hosts(loss=0.05, delay_ms=10, jitter_ms=2, reorder=0.25, duplicate=0.01, seed=7) as (a, b):
        server = b.run(sys.executable, "-m", "driver", "run")     # subprocess.Popen inside namespace b
        a.check("ip", "addr")                                      # run to completion, CompletedProcess
        print(a.name, a.address, b.address, a.link.mode)           # 10.201.0.1 / 10.201.0.2

Rates are fractions (0.05 = 5 %), as in ``LossGenerator``; times in milliseconds. The 10.201.0.0/24
addresses exist only inside the two namespaces, and ``lo`` is up in each (a fresh namespace has it down:
binding 127.0.0.1 there works, but nothing sent to it arrives until ``ip link set lo up``).

How the link is made (``mode``):

- ``"veth"``: a veth pair, with ``tc qdisc ... root netem`` on both ends when any impairment is asked
  (the same parameters each way; ``seed`` is passed to netem when this tc knows it). ``"netem"`` asks for
  this and fails (NetnsUnavailable) when the kernel has no netem and an impairment is asked.
- ``"relay"``: a TUN device in each namespace and a small relay process (this file run as a script) in the
  root namespace that moves every IP packet between them and applies the impairments to UDP packets,
  seeded (one ``random.Random`` per direction, drawn only for UDP packets, so the same seed and the same
  UDP traffic give the same decisions; ICMP, IGMP and IPv6 ND/MLD pass unimpaired). For kernels without ``sch_netem`` -- this project's machines run a
  kernel built without CONFIG_NET_SCH_NETEM, where ``tc qdisc add ... netem`` fails with "Specified qdisc
  kind is unknown". Semantics follow netem: loss, then duplication (both copies impaired alike), then a
  packet is either reordered (sent at once, overtaking delayed ones) or delayed by delay ± uniform jitter.
- ``"auto"`` (default): veth alone without impairments; with impairments veth + netem when the kernel has
  netem, else the relay.

Both links get a transmit queue of 10,000 packets (``txqueuelen``) so a test blasting datagrams loses them
to the impairments it asked for, not to a short device queue.

Multicast works over both links (veth and TUN have the MULTICAST flag) and on ``lo`` inside a namespace,
with no route needed when the sender sets IP_MULTICAST_IF, as UdpTransport does.

Every name carries this process's pid and a random token (``amd-<pid>-<token>-a``; interfaces
``amd<token>a``), so parallel runs never clash, and namespaces left behind by a process that died are
removed by the next :func:`two_hosts`. Teardown (also on failure) ends every process started through
``run``, stops the relay, and deletes both namespaces, each step bounded by a timeout.

Needs root and iproute2 (``ip``; ``tc`` for netem): :func:`require_netns` calls ``pytest.skip`` with the
reason otherwise (``make system-deps`` installs iproute2).
"""

from __future__ import annotations

import contextlib
import fcntl
import heapq
import json
import os
import random
import secrets
import select
import selectors
import shutil
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PREFIX = "amd-"
SUBNET = "10.201.0"
PREFIX_LENGTH = 24
COMMAND_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 5.0
REPO = Path(__file__).resolve().parents[1]

_TUNSETIFF = 0x400454CA
_IFF_TUN = 0x0001
_IFF_NO_PI = 0x1000


class NetnsUnavailable(RuntimeError):
    """Namespaces cannot be built here; ``str()`` says why."""


def _run(*cmd: str, timeout: float = COMMAND_TIMEOUT_S, check: bool = True) -> subprocess.CompletedProcess:
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as ex:
        raise RuntimeError(f"{' '.join(cmd)} did not finish within {timeout} s") from ex
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({result.returncode}): {result.stderr.strip()}")
    return result


def unavailable_reason() -> str | None:
    """Why namespaces cannot be used here (None when they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root (run the tests as root, e.g. in the project's container)"
    if shutil.which("ip") is None:
        return "the ip command is missing: install iproute2 (make system-deps)"
    return None


def require_netns() -> None:
    """pytest.skip with the reason when namespaces cannot be built here."""
    import pytest

    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)


_netem_support: bool | None = None


def netem_available() -> bool:
    """Whether ``tc qdisc add ... netem`` works (probed once, in a scratch namespace)."""
    global _netem_support
    if _netem_support is None:
        _netem_support = False
        if shutil.which("tc") is not None and unavailable_reason() is None:
            scratch = f"{PREFIX}{os.getpid()}-{secrets.token_hex(3)}-probe"
            if _run("ip", "netns", "add", scratch, check=False).returncode == 0:
                try:
                    probe = _run(
                        "tc", "-n", scratch, "qdisc", "add", "dev", "lo", "root", "netem", check=False
                    )
                    _netem_support = probe.returncode == 0
                finally:
                    _run("ip", "netns", "del", scratch, check=False)
    return _netem_support


def _tc_knows_netem_seed() -> bool:
    result = _run("tc", "qdisc", "add", "dev", "lo", "root", "netem", "help", check=False)
    return "seed" in (result.stderr + result.stdout)


def remove_stale_namespaces() -> list[str]:
    """Delete ``amd-<pid>-...`` namespaces whose creating process no longer exists; returns their names."""
    listing = _run("ip", "netns", "list", check=False).stdout
    removed = []
    for line in listing.splitlines():
        name = line.split()[0] if line.split() else ""
        if not name.startswith(PREFIX):
            continue
        pid_text = name[len(PREFIX) :].split("-", 1)[0]
        if not pid_text.isdigit() or _alive(int(pid_text)):
            continue
        _kill_namespace_processes(name)
        if _run("ip", "netns", "del", name, check=False).returncode == 0:
            removed.append(name)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_namespace_processes(name: str) -> None:
    pids = _run("ip", "netns", "pids", name, check=False).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


@dataclass
class Link:
    """What joins the two hosts."""

    mode: str
    """"veth" (a veth pair, with tc netem when impaired) or "relay" (TUN devices and a relay process)."""
    impairments: dict[str, float]
    seed: int | None
    relay: subprocess.Popen | None = None
    relay_stats: dict[str, Any] | None = None
    """After teardown, what the relay counted: packets in/out/dropped/duplicated/reordered per direction."""
    netem_args: list[str] = field(default_factory=list)


@dataclass
class Host:
    """One end: a network namespace with ``address`` on ``interface``."""

    name: str
    address: str
    interface: str
    link: Link
    peer_address: str = ""
    processes: list[subprocess.Popen] = field(default_factory=list)

    def command(self, *cmd: str) -> list[str]:
        """``cmd`` wrapped to run inside this namespace."""
        return ["ip", "netns", "exec", self.name, *cmd]

    def run(self, *cmd: str, **popen_kwargs: Any) -> subprocess.Popen:
        """Start ``cmd`` inside this namespace (stdout/stderr piped as text unless given); it is ended at
        teardown if still running."""
        popen_kwargs.setdefault("stdout", subprocess.PIPE)
        popen_kwargs.setdefault("stderr", subprocess.PIPE)
        popen_kwargs.setdefault("text", True)
        process = subprocess.Popen(self.command(*cmd), **popen_kwargs)
        self.processes.append(process)
        return process

    def check(self, *cmd: str, timeout: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess:
        """Run ``cmd`` inside this namespace to completion; RuntimeError when it fails or times out."""
        return _run(*self.command(*cmd), timeout=timeout)

    def python(self, code: str, *args: str, **popen_kwargs: Any) -> subprocess.Popen:
        """``python -c code args...`` inside this namespace, with this repository importable."""
        env = dict(popen_kwargs.pop("env", None) or os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
        return self.run(sys.executable, "-c", code, *args, env=env, **popen_kwargs)

    def stop_processes(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + timeout_s
        for process in self.processes:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout_s)
            for stream in (process.stdout, process.stderr, process.stdin):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()


def _check_rate(name: str, value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name}={value}: rates are fractions 0.0..1.0 (0.05 = 5 %)")
    return float(value)


@contextlib.contextmanager
def two_hosts(
    loss: float = 0.0,
    delay_ms: float = 0.0,
    jitter_ms: float = 0.0,
    reorder: float = 0.0,
    duplicate: float = 0.0,
    seed: int | None = None,
    *,
    mode: str = "auto",
    tag: str = "",
) -> Iterator[tuple[Host, Host]]:
    """Two namespaces joined by a link impaired as asked (both directions alike); see the module doc.
    ``tag`` goes into the namespace names (``amd-<pid>-<tag><token>-a``) to tell a test's namespaces apart.

    Raises NetnsUnavailable when namespaces cannot be built here (callers in tests use
    :func:`require_netns` first to skip instead)."""
    impairments = {
        "loss": _check_rate("loss", loss),
        "delay_ms": float(delay_ms),
        "jitter_ms": float(jitter_ms),
        "reorder": _check_rate("reorder", reorder),
        "duplicate": _check_rate("duplicate", duplicate),
    }
    if delay_ms < 0 or jitter_ms < 0:
        raise ValueError("delay_ms and jitter_ms must not be negative")
    if mode not in ("auto", "veth", "netem", "relay"):
        raise ValueError(f"mode={mode!r}: expected auto, veth, netem or relay")
    reason = unavailable_reason()
    if reason is not None:
        raise NetnsUnavailable(reason)
    impaired = any(impairments.values())
    if mode == "auto":
        mode = "veth" if not impaired or netem_available() else "relay"
    elif mode in ("veth", "netem"):
        if impaired and not netem_available():
            raise NetnsUnavailable(
                "tc netem is not available in this kernel (CONFIG_NET_SCH_NETEM is not set): use mode='relay'"
            )
        mode = "veth"

    remove_stale_namespaces()
    token = secrets.token_hex(3)
    link = Link(mode, impairments, seed)
    names = [f"{PREFIX}{os.getpid()}-{tag}{token}-{side}" for side in "ab"]
    devices = [f"amd{token}{side}" for side in "ab"]
    addresses = [f"{SUBNET}.1", f"{SUBNET}.2"]
    hosts = [Host(n, a, d, link) for n, a, d in zip(names, addresses, devices, strict=True)]
    hosts[0].peer_address, hosts[1].peer_address = addresses[1], addresses[0]
    created: list[str] = []
    tun_fds: list[int] = []
    try:
        for name in names:
            result = _run("ip", "netns", "add", name, check=False)
            if result.returncode != 0:
                raise NetnsUnavailable(f"ip netns add failed: {result.stderr.strip()}")
            created.append(name)
        if mode == "veth":
            _run("ip", "link", "add", devices[0], "type", "veth", "peer", "name", devices[1])
            for host in hosts:
                _run("ip", "link", "set", host.interface, "netns", host.name)
        else:
            for device in devices:
                tun_fds.append(_open_tun(device))
            for host in hosts:
                _run("ip", "link", "set", host.interface, "netns", host.name)
        for host in hosts:
            _run(
                "ip", "-n", host.name, "addr", "add", f"{host.address}/{PREFIX_LENGTH}", "dev", host.interface
            )
            _run("ip", "-n", host.name, "link", "set", host.interface, "txqueuelen", "10000", "up")
            _run("ip", "-n", host.name, "link", "set", "lo", "up")
        if mode == "veth" and impaired:
            link.netem_args = _netem_args(impairments, seed)
            for host in hosts:
                _run(
                    "tc",
                    "-n",
                    host.name,
                    "qdisc",
                    "add",
                    "dev",
                    host.interface,
                    "root",
                    "netem",
                    *link.netem_args,
                )
        if mode == "relay":
            link.relay = _start_relay(tun_fds, impairments, seed)
        for fd in tun_fds:
            os.close(fd)
        tun_fds.clear()
        yield hosts[0], hosts[1]
    finally:
        for host in hosts:
            host.stop_processes()
        for fd in tun_fds:
            os.close(fd)
        if link.relay is not None:
            link.relay_stats = _stop_relay(link.relay)
        for name in created:
            _kill_namespace_processes(name)
            _run("ip", "netns", "del", name, check=False)


def _netem_args(impairments: dict[str, float], seed: int | None) -> list[str]:
    args: list[str] = []
    if impairments["delay_ms"] or impairments["jitter_ms"] or impairments["reorder"]:
        args += ["delay", f"{impairments['delay_ms']}ms"]
        if impairments["jitter_ms"]:
            args += [f"{impairments['jitter_ms']}ms"]
    if impairments["loss"]:
        args += ["loss", f"{impairments['loss'] * 100}%"]
    if impairments["duplicate"]:
        args += ["duplicate", f"{impairments['duplicate'] * 100}%"]
    if impairments["reorder"]:
        args += ["reorder", f"{impairments['reorder'] * 100}%"]
    if seed is not None and _tc_knows_netem_seed():
        args += ["seed", str(seed)]
    return args


def _open_tun(name: str) -> int:
    try:
        fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    except OSError as ex:
        raise NetnsUnavailable(f"cannot open /dev/net/tun for the relay link: {ex}") from ex
    try:
        fcntl.ioctl(fd, _TUNSETIFF, struct.pack("16sH22x", name.encode(), _IFF_TUN | _IFF_NO_PI))
    except OSError as ex:
        os.close(fd)
        raise NetnsUnavailable(f"cannot create TUN device {name}: {ex}") from ex
    return fd


def _start_relay(fds: Sequence[int], impairments: dict[str, float], seed: int | None) -> subprocess.Popen:
    args = [sys.executable, str(Path(__file__).resolve()), "relay", str(fds[0]), str(fds[1])]
    args += [json.dumps({**impairments, "seed": seed})]
    relay = subprocess.Popen(
        args,
        pass_fds=tuple(fds),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.PIPE,
        text=True,
    )
    readable, _, _ = select.select([relay.stdout], [], [], COMMAND_TIMEOUT_S)
    ready = relay.stdout.readline() if readable else ""  # "ready" once it reads both devices
    if ready.strip() != "ready":
        relay.kill()
        _, err = relay.communicate(timeout=STOP_TIMEOUT_S)
        raise RuntimeError(f"the link relay did not start: {ready!r} {err}")
    return relay


def _stop_relay(relay: subprocess.Popen) -> dict[str, Any] | None:
    if relay.poll() is None:
        relay.terminate()
    try:
        out, _ = relay.communicate(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        relay.kill()
        out, _ = relay.communicate(timeout=STOP_TIMEOUT_S)
    for line in reversed((out or "").splitlines()):
        with contextlib.suppress(ValueError):
            return json.loads(line)
    return None


# --- the relay (runs as: python netns.py relay <fd a> <fd b> <json impairments>) -------------------------


def _is_udp(packet: bytes) -> bool:
    """IPv4 protocol / IPv6 next header 17 (every fragment of a UDP datagram carries it in IPv4)."""
    if len(packet) < 20:
        return False
    version = packet[0] >> 4
    if version == 4:
        return packet[9] == 17
    return version == 6 and len(packet) >= 40 and packet[6] == 17


def relay_main(fd_a: int, fd_b: int, settings: dict[str, Any]) -> int:
    """Move IP packets between two TUN fds until SIGTERM, impaired as netem would; print stats as JSON."""
    stopping = False

    def stop(_signum: int, _frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    seed = settings.get("seed")
    loss = settings["loss"]
    duplicate = settings["duplicate"]
    reorder = settings["reorder"]
    delay_s = settings["delay_ms"] / 1000.0
    jitter_s = settings["jitter_ms"] / 1000.0
    delayed = delay_s > 0 or jitter_s > 0
    # one generator per direction, so each direction's decisions depend only on its own packets
    randoms = {
        fd_a: random.Random(None if seed is None else seed * 2),
        fd_b: random.Random(None if seed is None else seed * 2 + 1),
    }
    peer = {fd_a: fd_b, fd_b: fd_a}
    names = {fd_a: "a_to_b", fd_b: "b_to_a"}
    stats = {
        n: {"in": 0, "out": 0, "dropped": 0, "duplicated": 0, "reordered": 0, "overflow": 0}
        for n in names.values()
    }
    queue: list[tuple[float, int, int, bytes]] = []
    sequence = 0

    def emit(fd: int, packet: bytes, counts: dict[str, int]) -> None:
        try:
            os.write(fd, packet)
            counts["out"] += 1
        except (BlockingIOError, OSError):
            counts["overflow"] += 1

    selector = selectors.DefaultSelector()
    selector.register(fd_a, selectors.EVENT_READ)
    selector.register(fd_b, selectors.EVENT_READ)
    print("ready", flush=True)
    while not stopping:
        now = time.monotonic()
        while queue and queue[0][0] <= now:
            _, _, out_fd, packet = heapq.heappop(queue)
            emit(out_fd, packet, stats[names[peer[out_fd]]])
        timeout = None if not queue else max(0.0, queue[0][0] - now)
        try:
            events = selector.select(timeout if timeout is not None else 0.5)
        except InterruptedError:
            continue
        for key, _ in events:
            in_fd = key.fd
            out_fd = peer[in_fd]
            counts = stats[names[in_fd]]
            rng = randoms[in_fd]
            for _ in range(256):
                try:
                    packet = os.read(in_fd, 65536)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    stopping = True
                    break
                counts["in"] += 1
                if not _is_udp(packet):  # ARP-free TUN: ICMP, IGMP, MLD, ND pass unimpaired, draw nothing
                    emit(out_fd, packet, counts)
                    continue
                if loss and rng.random() < loss:
                    counts["dropped"] += 1
                    continue
                copies = 1
                if duplicate and rng.random() < duplicate:
                    copies = 2
                    counts["duplicated"] += 1
                for _ in range(copies):
                    if not delayed:
                        emit(out_fd, packet, counts)
                    elif reorder and rng.random() < reorder:
                        counts["reordered"] += 1
                        emit(out_fd, packet, counts)
                    else:
                        due = time.monotonic() + max(0.0, delay_s + rng.uniform(-jitter_s, jitter_s))
                        sequence += 1
                        heapq.heappush(queue, (due, sequence, out_fd, packet))
    print(json.dumps(stats), flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "relay":
        sys.exit(relay_main(int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])))
    print(f"usage: {sys.argv[0]} relay <tun fd a> <tun fd b> <json settings>", file=sys.stderr)
    sys.exit(2)
