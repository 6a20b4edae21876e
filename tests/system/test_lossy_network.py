"""Reliability on a bad network: a stream of up to 1,000,000 messages crosses an impaired link complete and in
order, through our driver on both ends and across drivers both ways, with NAKs, retransmits and loss reports to
show for it.

Two network namespaces (harness/netns.py) are joined by a link with 5 % loss, 10 ms delay (± 2 ms
jitter), 25 % reordering and 1 % duplication, both directions alike, seeded. On this project's machines the
kernel has no sch_netem, so that link is netns.py's TUN relay; where netem exists it is veth + netem.

Per case, host a runs the sending driver and host b the receiving one (ours or the Aeron 1.15.1 Java driver,
in SHARED threading mode), each with a Java client: ``SequencedPublisher`` on a offers 1,000,000 messages
(250,000 to the Java receiver, whose loss recovery moves ~20 k messages a second here: a million took a minute)
of 32 bytes (message k carries k and a pattern derived from it) as fast as flow control allows to
``aeron:udp?endpoint=<b's address>:40123``, and ``SequencedSubscriber`` on b checks that message k is the
k-th to arrive, from one session, 32 bytes long and intact -- so nothing is missing, duplicated, reordered
or corrupt -- and that the stream ends at 64 bytes a message (a 32-byte header per message).

Then, while both drivers still run (the publisher holds its publication open):
- counters: the receiving driver sent NAKs; the sending driver received NAKs and sent retransmits;
- loss report: the real ``io.aeron.samples.LossStat`` reads the receiving driver's loss-report.dat and finds
  an entry for this session, stream, channel and source; ``mediadriver loss --format csv`` prints exactly
  what LossStat printed (both read the same file, from the same environment, so the same time zone).
Our drivers must exit 0 on SIGTERM at the end.

Every case is bounded (CASE_TIMEOUT_S for the stream; every other step has its own timeout); processes and
namespaces are removed by ``two_hosts`` and by the ``finally`` blocks below, also on failure. One case takes
10-20 s on a 2-core machine; ``pytest -s`` prints what each case saw (durations, counters, relay stats).

Needs root and iproute2 (skipped otherwise, with the reason), and the Aeron peer (``make peers``).
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import netns
from harness.children import child_env
from harness.cnc import cnc_ready, read_cnc_counters
from harness.netns import Host, two_hosts
from tests.support.java_peers import JavaPeers, Spawned, compile_java_sources, find_peer_paths, log_tail

pytestmark = [pytest.mark.slow, pytest.mark.interop]

ROOT = Path(__file__).resolve().parents[2]
JAVA_SOURCES = Path(__file__).resolve().parent / "java"

MESSAGES = 1_000_000
MESSAGE_LENGTH = 32
FRAME_LENGTH = 64  # 32-byte data header + 32 bytes, already 32-aligned
STREAM_ID = 1001
PORT = 40123
IMPAIRMENTS = {"loss": 0.05, "delay_ms": 10, "jitter_ms": 2, "reorder": 0.25, "duplicate": 0.01}
SEED = 7

CASE_TIMEOUT_S = 240.0  # the stream itself; 5-15 s is normal here
CONNECT_TIMEOUT_S = 30.0
DRIVER_READY_TIMEOUT_S = 30.0
OUR_DRIVER_EXIT_TIMEOUT_S = 5.0
JAVA_DRIVER_PROPS = {"aeron.threading.mode": "SHARED"}


@pytest.fixture(autouse=True)
def _needs_netns() -> None:
    reason = netns.unavailable_reason()
    if reason is not None:
        pytest.skip(f"two-host lossy network tests: {reason}")


@pytest.fixture(scope="module")
def peers(tmp_path_factory: pytest.TempPathFactory) -> Any:
    try:
        paths = find_peer_paths()
    except FileNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)
    tmp = tmp_path_factory.mktemp("lossy-network")
    classes = compile_java_sources(paths, tmp / "classes", JAVA_SOURCES)
    return JavaPeers(paths, classes, tmp)


class Drivers:
    """Drivers started inside the namespaces, each in a fresh dir under /dev/shm with its log beside it."""

    def __init__(self, peers: Any, tmp: Path) -> None:
        self.peers = peers
        self.tmp = tmp
        self.started: list[tuple[str, Path, subprocess.Popen[bytes], Path]] = []

    def start(self, host: Host, kind: str) -> Path:
        base = Path("/dev/shm") if Path("/dev/shm").is_dir() else self.tmp
        aeron_dir = base / f"aeron-lossy-{kind}-{host.name}"
        log_path = self.tmp / f"{kind}-driver-{host.name}.log"
        if kind == "ours":
            cmd = [sys.executable, "-m", "driver", "run", "--dir", str(aeron_dir), "--delete-dir-on-start"]
        else:
            props = {"aeron.dir": aeron_dir, "aeron.dir.delete.on.start": "true", **JAVA_DRIVER_PROPS}
            cmd = self.peers.cmd("io.aeron.driver.MediaDriver", props=props, tool=False)
        with open(log_path, "wb") as log:
            proc = host.run(*cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, text=False,
                            cwd=ROOT, env=child_env())  # fmt: skip
        self.started.append((kind, aeron_dir, proc, log_path))
        deadline = time.monotonic() + DRIVER_READY_TIMEOUT_S
        while not cnc_ready(aeron_dir):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"{kind} driver in {host.name} not ready (rc={proc.poll()}):\n{self.log(log_path)}"
                )
            time.sleep(0.02)
        return aeron_dir

    @staticmethod
    def log(path: Path) -> str:
        return log_tail(path, 6000)

    def stop(self) -> list[str]:
        """SIGTERM every driver (by pid); returns what went wrong with ours (not exiting 0 in time)."""
        problems = []
        for kind, aeron_dir, proc, log_path in reversed(self.started):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout=OUR_DRIVER_EXIT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
                code = None
            if kind == "ours" and code != 0:
                problems.append(f"our driver ({aeron_dir}) exited {code} on SIGTERM:\n{self.log(log_path)}")
            subprocess.run(["rm", "-rf", str(aeron_dir)], check=False, timeout=30)
        self.started.clear()
        return problems


def spawn_in(
    host: Host, peers: Any, main_class: str, *args: Any, aeron_dir: Path, stdin: bool = False
) -> Any:
    """A Java client inside ``host`` (``ip netns exec`` execs it, so the pid is the JVM's)."""
    cmd = peers.cmd(main_class, *map(str, args), props={"aeron.dir": aeron_dir}, tool=False)
    return Spawned(main_class, host.command(*cmd), peers.log_dir, stdin=stdin)


def system_counters(aeron_dir: Path) -> dict[str, int]:
    return {c.label: c.value for c in read_cnc_counters(aeron_dir).values() if c.type_id == 0}


def stream_counters(aeron_dir: Path, session_id: int) -> dict[str, int]:
    """Per-stream counters of this session and stream, by label prefix (``snd-pos``, ``rcv-hwm`` ...)."""
    found = {}
    for counter in read_cnc_counters(aeron_dir).values():
        match = re.match(r"^([a-z-]+): .*?(-?\d+) (\d+) aeron:", counter.label)
        if match and int(match[2]) == session_id and int(match[3]) == STREAM_ID:
            found[match[1]] = counter.value
    return found


def diagnose(a: Host, a_dir: Path, b_dir: Path) -> str:
    """Counters of both drivers and the state of the relay, for a failure message."""
    relay = a.link.relay
    lines = [f"link {a.link.mode}, relay " + ("-" if relay is None else f"rc={relay.poll()}")]
    for name, aeron_dir in (("sending", a_dir), ("receiving", b_dir)):
        counters = read_cnc_counters(aeron_dir)
        lines.append(
            f"{name} driver: " + ", ".join(f"{c.label}={c.value}" for c in counters.values() if c.value)
        )
    return "\n".join(lines)


@pytest.fixture
def case_log(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """What a case saw (counters, durations), printed at the end (pytest -s shows it, -rA in the summary)."""
    record: dict[str, Any] = {}
    started = time.monotonic()
    yield record
    record["case_s"] = round(time.monotonic() - started, 1)
    print(f"\n{request.node.name}: {record}")


@pytest.mark.parametrize(
    ("sender", "receiver", "messages"),
    [("ours", "ours", MESSAGES), ("java", "ours", MESSAGES), ("ours", "java", MESSAGES // 4)],
    ids=["ours-to-ours", "java-to-ours", "ours-to-java"],
)
def test_a_stream_crosses_a_lossy_link_complete_and_in_order(
    sender: str, receiver: str, messages: int, peers: Any, tmp_path: Path, case_log: dict[str, Any]
) -> None:
    drivers = Drivers(peers, tmp_path)
    clients: list[Any] = []
    problems: list[str] = []
    with two_hosts(**IMPAIRMENTS, seed=SEED) as (a, b):
        try:
            channel = f"aeron:udp?endpoint={b.address}:{PORT}"
            case_log["link"] = a.link.mode
            a_dir = drivers.start(a, sender)
            b_dir = drivers.start(b, receiver)

            sub = spawn_in(b, peers, "SequencedSubscriber", channel, STREAM_ID, messages, MESSAGE_LENGTH,
                           int(CASE_TIMEOUT_S) + 30, aeron_dir=b_dir)  # fmt: skip
            clients.append(sub)
            sub.read_until(r"^READY", CONNECT_TIMEOUT_S)
            pub = spawn_in(a, peers, "SequencedPublisher", channel, STREAM_ID, messages, MESSAGE_LENGTH, 0,
                           int(CASE_TIMEOUT_S) + 30, "--hold", aeron_dir=a_dir, stdin=True)  # fmt: skip
            clients.append(pub)
            session_id = int(pub.read_until(r"^PUB -?\d+", CONNECT_TIMEOUT_S)[0].split()[1])
            try:
                pub.read_until(r"^CONNECTED", CONNECT_TIMEOUT_S)
            except pytest.fail.Exception as exc:
                pytest.fail(f"{exc}\n{diagnose(a, a_dir, b_dir)}", pytrace=False)
            started = time.monotonic()

            lines = sub.read_until(r"^(DONE|ERROR|TIMEOUT)", CASE_TIMEOUT_S)
            case_log["stream_s"] = round(time.monotonic() - started, 1)
            last = next(line for line in reversed(lines) if re.match(r"^(DONE|ERROR|TIMEOUT)", line))
            assert last.startswith("DONE"), f"subscriber: {last}\n" + "\n".join(lines[-10:])
            _, received, position, sub_session = last.split()
            assert int(received) == messages
            assert int(position) == messages * FRAME_LENGTH
            assert int(sub_session) == session_id
            available = [line for line in lines if line.startswith("AVAILABLE")]
            assert len(available) == 1, available  # one image, joined at 0, from host a
            assert available[0].split()[1:3] == [str(session_id), "0"]
            assert available[0].split()[3].startswith(f"{a.address}:")

            sent, received_by = system_counters(a_dir), system_counters(b_dir)
            case_log["sender"] = {k: sent[k] for k in ("NAKs received", "Retransmits sent", "Bytes sent")}
            case_log["receiver"] = {k: received_by[k] for k in ("NAKs sent", "Bytes received")}
            assert received_by["NAKs sent"] > 0
            assert sent["NAKs received"] > 0
            assert sent["Retransmits sent"] > 0
            assert stream_counters(a_dir, session_id).get("snd-pos") == messages * FRAME_LENGTH
            image = stream_counters(b_dir, session_id)
            assert image.get("rcv-pos") == image.get("rcv-hwm") == messages * FRAME_LENGTH, image

            loss_stat = peers.run("io.aeron.samples.LossStat", props={"aeron.dir": b_dir}, timeout=60.0)
            assert loss_stat.returncode == 0, loss_stat.stderr
            java_lines = loss_stat.stdout.splitlines()
            ours = subprocess.run(
                [sys.executable, "-m", "driver", "loss", "--dir", str(b_dir), "--format", "csv"],
                capture_output=True, text=True, timeout=60, cwd=ROOT, env=child_env(),
            )  # fmt: skip
            assert ours.returncode == 0, ours.stderr
            entries = [line.split(",") for line in java_lines[1:] if not line.endswith("entries read")]
            ours_entry = [
                e for e in entries if e[4:7] == [str(session_id), str(STREAM_ID), channel]
            ]  # count, bytes, first, last, session, stream, channel, source
            assert len(ours_entry) == 1, java_lines
            count, lost, _, _, _, _, _, source = ours_entry[0]
            assert int(count) > 0 and int(lost) > 0
            assert source.startswith(f"/{a.address}:"), source
            case_log["loss_report"] = {"observations": int(count), "bytes_lost": int(lost)}
            assert ours.stdout.splitlines() == java_lines  # same file, same moment: nothing finds gaps now

            pub.write_line("close")
            pub.read_until(r"^CLOSED", 30)
            assert pub.wait(30) == 0
            assert sub.wait(30) == 0
        finally:
            for client in reversed(clients):
                client.stop()
            problems = drivers.stop()
    stats = a.link.relay_stats
    if stats is not None:  # the relay counted what it did to the packets (None with netem)
        case_log["relay"] = stats
        assert stats["a_to_b"]["dropped"] > 0 and stats["a_to_b"]["duplicated"] > 0
        assert stats["a_to_b"]["reordered"] > 0
    assert not problems, "\n".join(problems)
