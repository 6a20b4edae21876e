"""Messages cross ``aeron:udp`` unicast on loopback exactly between the real Aeron 1.15.1 Java clients and driver, our
Python client and our driver.

- Java MessageSource -> Java MessageSink, both on our driver (one driver carries the publication and the image).
- Across drivers, both ways (Java driver's publisher -> our subscriber, ours -> Java's), with Java clients on both
  sides and with our Python client on our driver's side: 20,000 messages of mixed sizes, exact.
- Across drivers under 5 % receive loss (each receiving driver's loss generator), both ways: every gap repaired.
- Java StreamingPublisher -> RateSubscriber across the two drivers, 1,000,000 messages of 32 B, both ways.
- The stream counters our driver allocates have the Java driver's label formats (each driver doing the same
  roles), and the system counters for bytes, status messages and heartbeats move.
- End of stream: when the publisher closes, the remote subscriber sees the image go unavailable at end of stream.

Message k of a publication has ``lengths[k]`` bytes, byte i = (k * 31 + i) & 0xff (MessageSource's rule);
receivers report length and CRC-32 per whole message and the tests compare them with what was published.
Every endpoint port is a free loopback port found by binding port 0.
"""

from __future__ import annotations

import re
import threading
import time
import zlib
from collections import defaultdict

import pytest

from driver.client import Aeron
from driver.client.fragment_assembler import FragmentAssembler
from driver.client.offer_result import ADMIN_ACTION, BACK_PRESSURED, NOT_CONNECTED
from driver.concurrent.counter_types import CLIENT_CLOSES_TYPE_ID, LOCAL_SOCKET_ADDRESS_TYPE_ID
from driver.status.system_counters import SystemCounterDescriptor
from tests.support import free_port, wait_for

pytestmark = pytest.mark.interop

LINGER_S = 1.0
OUR_PROPS = {"aeron.publication.linger.timeout": int(LINGER_S * 1e9)}
# SHARED: one Java driver thread (its default DEDICATED mode runs three back-off spinners on a 2-core machine).
JAVA_PROPS = {**OUR_PROPS, "aeron.threading.mode": "SHARED"}
WAIT_S = 60.0
EOS_WAIT_S = 10.0  # close -> EOS heartbeat (next 1 s timer tick) -> image inactive -> unavailable

TERM_1M = 1024 * 1024
MAX_MESSAGE_1M = TERM_1M // 8  # 1.15.1 FrameDescriptor.computeMaxMessageLength
MTU = 1408
FIRST_NON_SYSTEM_ID = len(SystemCounterDescriptor)
MAX_PAYLOAD = MTU - 32
# Empty, one byte, one whole frame, one byte into a second frame, several frames, half and all of the maximum.
FRAGMENT_SIZES = (0, 1, MAX_PAYLOAD, MAX_PAYLOAD + 1, 4096, 65536, MAX_MESSAGE_1M)
# Mostly small and around the frame boundary, with a maximum-size message every 500th.
MIXED_BASE = (0, 1, 31, 32, 100, 200, 500, 1000, 1375, 1376, 1377, 2000, 64, 4096, 300, 8192)
MIXED_SIZES = tuple(
    MAX_MESSAGE_1M if k % 500 == 499 else MIXED_BASE[k % len(MIXED_BASE)] for k in range(1000)
)
MIXED_COUNT = 6_000  # with a 128 KiB message every 500th: ~2,000 terms-worth of frames

MSG_LINE = re.compile(r"^MSG (\d+) (\d+) (\d+) (-?\d+) (\d+)$")
RATE_TOTAL = re.compile(r"totals (\d+) messages")
SOURCE_IDENTITY = re.compile(r"^127\.0\.0\.1:\d+$")

_PATTERN = bytes(range(256)) * (MAX_MESSAGE_1M // 256 + 2)


def udp_channel(port: int) -> str:
    return f"aeron:udp?endpoint=localhost:{port}"


def payload(k: int, length: int) -> bytes:
    start = (k * 31) & 0xFF
    return _PATTERN[start : start + length]


def cycle(sizes: tuple[int, ...], count: int) -> list[int]:
    return [sizes[k % len(sizes)] for k in range(count)]


def expected(lengths: list[int]) -> list[tuple[int, int]]:
    return [(n, zlib.crc32(payload(k, n))) for k, n in enumerate(lengths)]


def publish(pub, lengths: list[int], timeout: float = WAIT_S) -> int:
    """Offer messages 0.. with retries; returns the position after the last."""
    deadline = time.monotonic() + timeout
    position = 0
    for k, length in enumerate(lengths):
        data = payload(k, length)
        while (position := pub.offer(data)) <= 0:
            assert position in (NOT_CONNECTED, BACK_PRESSURED, ADMIN_ACTION), f"message {k}: {position}"
            if time.monotonic() > deadline:
                pytest.fail(f"message {k} ({length} bytes) not published within {timeout}s: {position}")
            if position != ADMIN_ACTION:
                time.sleep(0.0002)
    return position


class Collector:
    """Fragment handler (behind a FragmentAssembler): (length, crc32) and end position per session."""

    def __init__(self) -> None:
        self.by_session: dict[int, list[tuple[int, int]]] = defaultdict(list)
        self.positions: dict[int, list[int]] = defaultdict(list)
        self.count = 0

    def __call__(self, buffer, offset: int, length: int, header) -> None:
        self.by_session[header.session_id].append((length, zlib.crc32(buffer.get_bytes(offset, length))))
        self.positions[header.session_id].append(header.position)
        self.count += 1


class ImageEvents:
    def __init__(self) -> None:
        self.available: list[tuple[int, int, str]] = []
        self.unavailable: list[tuple[int, int, bool]] = []

    def on_available(self, image) -> None:
        self.available.append((image.session_id, image.join_position, image.source_identity))

    def on_unavailable(self, image) -> None:
        self.unavailable.append((image.session_id, image.position, image.is_end_of_stream))


def poll_until(sub, handler, done, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if sub.poll(handler, 64) == 0:
            if time.monotonic() > deadline:
                pytest.fail(f"timed out after {timeout}s waiting for {what}")
            time.sleep(0.0005)


def sink_messages(lines: list[str]) -> tuple[dict[int, list[tuple[int, int]]], dict[int, list[int]]]:
    """MessageSink's MSG lines: (length, crc) and positions per session, checking seq runs 0, 1, 2, ..."""
    by_session: dict[int, list[tuple[int, int]]] = defaultdict(list)
    positions: dict[int, list[int]] = defaultdict(list)
    seq = 0
    for line in lines:
        if match := MSG_LINE.match(line):
            assert int(match[1]) == seq, line
            seq += 1
            by_session[int(match[4])].append((int(match[2]), int(match[3])))
            positions[int(match[4])].append(int(match[5]))
    return by_session, positions


def line_fields(lines: list[str], tag: str) -> list[list[str]]:
    return [line.split()[1:] for line in lines if line.startswith(tag + " ")]


class Pumped:
    """A spawned Java program whose stdout a background thread keeps reading: MessageSource and MessageSink print
    a line per message, and a program blocked on a full stdout pipe stops publishing or polling."""

    def __init__(self, spawned) -> None:
        self.spawned = spawned
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"pump-{spawned.name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self.spawned._eof and not self._stop.is_set():
            self.spawned._pump(0.1)

    @property
    def lines(self) -> list[str]:
        return self.spawned.lines

    def until(self, predicate, timeout: float, what: str) -> list[str]:
        """Wait (bounded) until ``predicate(lines)`` holds, or fail if the program exits first."""
        deadline = time.monotonic() + timeout
        while not predicate(self.lines):
            if (self.spawned._eof and not self._thread.is_alive()) or time.monotonic() > deadline:
                if predicate(self.lines):
                    break
                pytest.fail(
                    f"{self.spawned.name}: {what} not seen within {timeout}s (rc={self.spawned.proc.poll()}); "
                    f"last lines: {self.lines[-5:]}; stderr: {self.spawned.stderr_text()[-2000:]}"
                )
            time.sleep(0.01)
        return self.lines

    def finish(self, timeout: float) -> int:
        """Exit code once the program has exited and all its output is read (killed and failed after
        ``timeout``)."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._stop.set()
            self.spawned.stop()
            self._thread.join(5)
            pytest.fail(f"{self.spawned.name} did not exit within {timeout}s; last lines: {self.lines[-5:]}")
        return self.spawned.wait(10)


def spawn_source(spawn_java, driver, channel: str, stream: int, sizes, count: int) -> Pumped:
    return Pumped(spawn_java(
        "MessageSource", driver.aeron_dir, channel, stream,
        "--sizes", ",".join(map(str, sizes)), "--count", count, "--timeout", int(WAIT_S),
    ))  # fmt: skip


def spawn_sink(spawn_java, driver, channel: str, stream: int, count: int) -> Pumped:
    sink = Pumped(spawn_java(
        "MessageSink", driver.aeron_dir, channel, stream,
        "--count", count, "--until-unavailable", 1, "--timeout", int(WAIT_S + EOS_WAIT_S),
    ))  # fmt: skip
    sink.until(lambda lines: any(line.startswith("READY ") for line in lines), WAIT_S, "READY")
    return sink


def check_source(source: Pumped, lengths: list[int]) -> tuple[int, int]:
    """MessageSource's (session id, final position) once it has exited 0 having sent every message."""
    assert source.finish(WAIT_S) == 0, source.spawned.stderr_text()
    (pub_line,) = line_fields(source.lines, "PUB")
    assert [int(v) for v in pub_line[1:]] == [MAX_MESSAGE_1M, MAX_PAYLOAD, TERM_1M]
    sent = line_fields(source.lines, "SENT")
    assert len(sent) == len(lengths)
    (done,) = line_fields(source.lines, "DONE")
    assert "CLOSED" in source.lines
    return int(pub_line[0]), int(done[0])


def check_sink(sink: Pumped, lengths: list[int], session_id: int, final_position: int) -> None:
    """MessageSink got exactly ``lengths`` from ``session_id``, then the image went unavailable at EOS."""
    assert sink.finish(WAIT_S + EOS_WAIT_S) == 0, [x for x in sink.lines if not x.startswith("MSG")][-5:]
    lines = sink.lines
    assert "DONE" in lines, lines[-5:]
    by_session, positions = sink_messages(lines)
    assert list(by_session) == [session_id]
    got = by_session[session_id]
    assert len(got) == len(lengths)
    assert got == expected(lengths)
    assert positions[session_id][-1] == final_position
    (available,) = line_fields(lines, "AVAILABLE")
    assert available[:2] == [str(session_id), "0"]
    assert SOURCE_IDENTITY.match(available[3]), available
    assert line_fields(lines, "UNAVAILABLE") == [[str(session_id), str(final_position), "true"]]


# ---------------------------------------------------------------------------------------------------------------
# One driver (ours): Java publisher -> Java subscriber over UDP


def test_java_to_java_through_our_driver(drivers, spawn_java):
    """Publication and subscription on the same UDP channel of our driver; every fragmentation case, several
    1 MiB terms (so the log rotates); the source's close ends the stream at the sink."""
    driver = drivers.ours(OUR_PROPS)
    port = free_port()
    channel = udp_channel(port)
    lengths = cycle(FRAGMENT_SIZES, 7 * 40)  # 40 x 206 KiB ~ 8 terms
    sink = spawn_sink(spawn_java, driver, channel, 2001, len(lengths))
    source = spawn_source(spawn_java, driver, f"{channel}|term-length=1m", 2001, FRAGMENT_SIZES, len(lengths))
    session_id, final_position = check_source(source, lengths)
    assert final_position > 4 * TERM_1M
    check_sink(sink, lengths, session_id, final_position)


# ---------------------------------------------------------------------------------------------------------------
# Across drivers, both ways


@pytest.mark.parametrize("our_client", ["java", "python"])
@pytest.mark.parametrize("direction", ["java-to-ours", "ours-to-java"])
def test_across_drivers(direction, our_client, drivers, spawn_java):
    """20,000 messages of mixed sizes (up to the 128 KiB maximum of a 1 MiB term) from a publisher on one
    driver to a subscriber on the other; our driver's side uses a Java client or our Python client, the Java
    driver's side a Java client. Exact content, order and count; end of stream when the publisher closes."""
    pub_kind, sub_kind = ("java", "ours") if direction == "java-to-ours" else ("ours", "java")
    pub_driver = drivers.start(pub_kind, JAVA_PROPS if pub_kind == "java" else OUR_PROPS)
    sub_driver = drivers.start(sub_kind, JAVA_PROPS if sub_kind == "java" else OUR_PROPS)
    channel = udp_channel(free_port())
    pub_channel = f"{channel}|term-length=1m"
    stream = 2002
    lengths = cycle(MIXED_SIZES, MIXED_COUNT)
    python_sub = our_client == "python" and sub_kind == "ours"
    python_pub = our_client == "python" and pub_kind == "ours"

    if python_sub:
        events, collector = ImageEvents(), Collector()
        with Aeron.connect(sub_driver.aeron_dir, timeout_s=10) as aeron:
            sub = aeron.add_subscription(channel, stream, events.on_available, events.on_unavailable)
            source = spawn_source(spawn_java, pub_driver, pub_channel, stream, MIXED_SIZES, len(lengths))
            assembler = FragmentAssembler(collector)
            poll_until(sub, assembler, lambda: collector.count >= len(lengths), WAIT_S, "20,000 messages")
            session_id, final_position = check_source(source, lengths)
            poll_until(sub, assembler, lambda: events.unavailable, EOS_WAIT_S, "image unavailable")
        assert list(collector.by_session) == [session_id]
        assert collector.by_session[session_id] == expected(lengths)
        assert collector.positions[session_id][-1] == final_position
        ((available_session, join, source_identity),) = events.available
        assert (available_session, join) == (session_id, 0)
        assert SOURCE_IDENTITY.match(source_identity), source_identity
        assert events.unavailable == [(session_id, final_position, True)]
        return

    sink = spawn_sink(spawn_java, sub_driver, channel, stream, len(lengths))
    if python_pub:
        with Aeron.connect(pub_driver.aeron_dir, timeout_s=10) as aeron:
            pub = aeron.add_publication(pub_channel, stream)
            assert (pub.max_message_length, pub.max_payload_length) == (MAX_MESSAGE_1M, MAX_PAYLOAD)
            wait_for(lambda: pub.is_connected, WAIT_S, "the publication to connect")
            final_position = publish(pub, lengths)
            session_id = pub.session_id
            # Keep the publication until everything arrived (its close is the end of stream).
            last = f"MSG {len(lengths) - 1} "
            sink.until(lambda lines: any(x.startswith(last) for x in lines[-5:]), WAIT_S, "every message")
            pub.close()
    else:
        source = spawn_source(spawn_java, pub_driver, pub_channel, stream, MIXED_SIZES, len(lengths))
        session_id, final_position = check_source(source, lengths)
    check_sink(sink, lengths, session_id, final_position)


LOSS = 0.05
LOSS_PROPS = {
    "ours": {**OUR_PROPS, "aeron.debug.receive.data.loss.rate": LOSS},
    # 1.15.1's debug endpoint drops received data frames as our loss generator does.
    "java": {
        **JAVA_PROPS,
        "aeron.ReceiveChannelEndpoint.supplier": "io.aeron.driver.ext.DebugReceiveChannelEndpointSupplier",
        "aeron.debug.receive.data.loss.rate": LOSS,
    },
}
LOSS_COUNT = 1_000


@pytest.mark.parametrize("direction", ["java-to-ours", "ours-to-java"])
def test_across_drivers_under_receive_loss(direction, drivers, spawn_java, cnc):
    """5 % of the data datagrams the receiving driver gets are dropped (each driver's own loss generator):
    our receiver's NAKs (docs/wire.md section 7, "Unicast NAK policy") get a 1.15.1 Java sender to repair
    every gap, and our sender repairs a Java receiver's; every message arrives, exact and in order."""
    pub_kind, sub_kind = ("java", "ours") if direction == "java-to-ours" else ("ours", "java")
    pub_driver = drivers.start(pub_kind, JAVA_PROPS if pub_kind == "java" else OUR_PROPS)
    sub_driver = drivers.start(sub_kind, LOSS_PROPS[sub_kind])
    channel = udp_channel(free_port())
    stream = 2005
    lengths = cycle(MIXED_BASE, LOSS_COUNT)
    sink = spawn_sink(spawn_java, sub_driver, channel, stream, len(lengths))
    source = spawn_source(
        spawn_java, pub_driver, f"{channel}|term-length=1m", stream, MIXED_BASE, len(lengths)
    )
    session_id, final_position = check_source(source, lengths)
    check_sink(sink, lengths, session_id, final_position)
    naks_sent = cnc.counters(sub_driver.aeron_dir)[5].value
    retransmits = cnc.counters(pub_driver.aeron_dir)[11].value
    assert naks_sent > 0 and retransmits > 0, (naks_sent, retransmits)


OFFLOAD_COUNT = 1_500  # ~2 MiB with three 128 KiB messages: the 1 MiB term rotates


def offload_props(on: bool) -> dict:
    flag = "true" if on else "false"
    return {**OUR_PROPS, "aeron.socket.gso": flag, "aeron.socket.gro": flag}


@pytest.mark.slow
@pytest.mark.parametrize("offloads", ["on", "off"])
def test_java_receiver_gets_plain_datagrams_whatever_our_offloads(offloads, drivers, spawn_java):
    """Our sender hands bursts to the kernel as segmented sends when offloads are on (the default): the Java
    1.15.1 driver, which reads datagram by datagram, still rebuilds every message of mixed sizes (fragmented
    ones included) exactly and in order (docs/wire.md section 10)."""
    pub_driver = drivers.start("ours", offload_props(offloads == "on"))
    sub_driver = drivers.start("java", JAVA_PROPS)
    channel = udp_channel(free_port())
    lengths = cycle(MIXED_SIZES, OFFLOAD_COUNT)
    sink = spawn_sink(spawn_java, sub_driver, channel, 2005, len(lengths))
    source = spawn_source(
        spawn_java, pub_driver, f"{channel}|term-length=1m", 2005, MIXED_SIZES, len(lengths)
    )
    session_id, final_position = check_source(source, lengths)
    check_sink(sink, lengths, session_id, final_position)


@pytest.mark.slow
def test_between_our_drivers_with_offloads(drivers, spawn_java):
    """Two of our drivers, offloads on at both ends (segmented sends, coalesced receives split again): every
    message of mixed sizes, fragmented ones included, arrives exactly and in order, across several terms."""
    pub_driver = drivers.start("ours", offload_props(True))
    sub_driver = drivers.start("ours", offload_props(True))
    channel = udp_channel(free_port())
    lengths = cycle(MIXED_SIZES, OFFLOAD_COUNT)
    sink = spawn_sink(spawn_java, sub_driver, channel, 2006, len(lengths))
    source = spawn_source(
        spawn_java, pub_driver, f"{channel}|term-length=1m", 2006, MIXED_SIZES, len(lengths)
    )
    session_id, final_position = check_source(source, lengths)
    assert final_position > TERM_1M
    check_sink(sink, lengths, session_id, final_position)


@pytest.mark.parametrize("kind", ["ours", "java"])
def test_java_spy_subscription(kind, drivers, spawn_java):
    """A Java MessageSink on ``aeron-spy:<channel>`` beside a regular one, both on one driver with the Java
    MessageSource: the spy reads the publication's own log (source identity "aeron:ipc"), gets every message,
    and sees the image go unavailable at end of stream. The Java driver is the reference."""
    driver = drivers.start(kind, JAVA_PROPS if kind == "java" else OUR_PROPS)
    channel = udp_channel(free_port())
    lengths = cycle(MIXED_SIZES, 2_000)
    spy = spawn_sink(spawn_java, driver, "aeron-spy:" + channel, 2006, len(lengths))
    sink = spawn_sink(spawn_java, driver, channel, 2006, len(lengths))
    source = spawn_source(spawn_java, driver, f"{channel}|term-length=1m", 2006, MIXED_SIZES, len(lengths))
    session_id, final_position = check_source(source, lengths)
    check_sink(sink, lengths, session_id, final_position)
    assert spy.finish(WAIT_S + EOS_WAIT_S) == 0, spy.lines[-5:]
    by_session, positions = sink_messages(spy.lines)
    assert by_session == {session_id: expected(lengths)}
    assert positions[session_id][-1] == final_position
    assert line_fields(spy.lines, "AVAILABLE")[0][3] == "aeron:ipc"
    assert line_fields(spy.lines, "UNAVAILABLE") == [[str(session_id), str(final_position), "true"]]


# ---------------------------------------------------------------------------------------------------------------
# StreamingPublisher -> RateSubscriber, a million small messages, both ways


@pytest.mark.slow
@pytest.mark.parametrize("direction", ["ours-to-java", "java-to-ours"])
def test_streaming_million_messages_across_drivers(direction, drivers, spawn_java):
    messages = 1_000_000
    pub_kind, sub_kind = ("ours", "java") if direction == "ours-to-java" else ("java", "ours")
    pub_driver = drivers.start(pub_kind, JAVA_PROPS if pub_kind == "java" else OUR_PROPS)
    sub_driver = drivers.start(sub_kind, JAVA_PROPS if sub_kind == "java" else OUR_PROPS)
    sample = {
        "aeron.sample.channel": udp_channel(free_port()),
        "aeron.sample.streamId": 2003,
        "aeron.sample.messages": messages,
        "aeron.sample.messageLength": 32,
        "user.language": "en",
        "user.country": "US",
    }

    def totals(lines):
        return [int(m[1]) for line in lines if (m := RATE_TOTAL.search(line))]

    subscriber = spawn_java(
        "io.aeron.samples.RateSubscriber", props={**sample, "aeron.dir": sub_driver.aeron_dir}
    )
    subscriber.read_until(RATE_TOTAL, 20)  # running, reporting once a second
    started = time.monotonic()
    publisher = spawn_java(
        "io.aeron.samples.StreamingPublisher", props={**sample, "aeron.dir": pub_driver.aeron_dir}, stdin=True
    )
    publisher.write_line("n")  # "Execute again?"
    subscriber.read_until(lambda lines: totals(lines) and totals(lines)[-1] >= messages, WAIT_S)
    elapsed = time.monotonic() - started
    reports = len(totals(subscriber.lines))
    subscriber.read_until(lambda lines: len(totals(lines)) > reports, 5)  # one more report: nothing extra
    assert totals(subscriber.lines)[-2:] == [messages, messages], subscriber.lines[-5:]
    assert publisher.wait(20) == 0, publisher.stderr_text()
    assert any(line.startswith("Done streaming.") for line in publisher.lines), publisher.lines
    print(f"{direction}: {messages} x 32 B in {elapsed:.1f} s")


# ---------------------------------------------------------------------------------------------------------------
# Counters

STREAM_LABEL = re.compile(
    r"^(?P<name>[a-z-]+(?: \(sample\))?): (?P<reg>-?\d+) (?P<session>-?\d+) (?P<stream>-?\d+) "
    r"(?P<channel>\S+)(?: @(?P<join>-?\d+))?$"
)
SYSTEM_COUNTERS = {
    0: "Bytes sent",
    1: "Bytes received",
    7: "Status Messages sent",
    8: "Status Messages received",
    9: "Heartbeats sent",
    10: "Heartbeats received",
}
PUB_NAMES = {"pub-pos (sample)", "pub-lmt", "snd-pos", "snd-lmt"}
SUB_NAMES = {"sub-pos", "rcv-hwm", "rcv-pos"}


def _heartbeat_bytes_counted(aeron_dir, end: int, cnc) -> bool:
    """1.15.1 adds what NetworkPublication.send returns (data or a 32-byte heartbeat) to "Bytes sent", and
    what PublicationImage.insertPacket returns (the datagram length, heartbeats too) to "Bytes received".
    Counters move while we read them, so look for a consistent moment (for up to 3 s)."""
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        c = cnc.counters(aeron_dir)
        if (c[0].value, c[1].value) == (end + 32 * c[9].value, end + 32 * c[10].value):
            return True
        time.sleep(0.01)
    return False


def _udp_counters(kind: str, drivers, cnc) -> tuple[dict[str, tuple], dict[int, int], set[tuple], bool]:
    """One driver of ``kind`` with a Python publication and subscription on one UDP channel, 200 messages
    across; returns {name: (type id, reg role, session, stream, channel, join, value, end)} per stream counter,
    system counter values, the normalized (type id, label) of every other non-system counter, and whether the
    byte counters include the heartbeats as 1.15.1's do."""
    driver = drivers.start(kind, JAVA_PROPS if kind == "java" else OUR_PROPS)
    port = free_port()
    channel = udp_channel(port)
    lengths = cycle((100, 3000, 0, 1376), 200)
    collector = Collector()
    with Aeron.connect(driver.aeron_dir, timeout_s=10) as aeron:
        sub = aeron.add_subscription(channel, 2004)
        pub = aeron.add_publication(channel, 2004)
        wait_for(lambda: pub.is_connected and sub.images, WAIT_S, "connection")
        end = publish(pub, lengths)
        poll_until(sub, FragmentAssembler(collector), lambda: collector.count >= len(lengths), WAIT_S, "all")
        (image,) = sub.images
        roles = {pub.registration_id: "PUB", sub.registration_id: "SUB", image.correlation_id: "IMG"}

        def settled():
            counters = cnc.counters(driver.aeron_dir)
            values = {STREAM_LABEL.match(c.label)["name"]: c.value for c in counters.values()
                      if STREAM_LABEL.match(c.label)}  # fmt: skip
            positions = [
                values.get(n) for n in ("pub-pos (sample)", "snd-pos", "rcv-hwm", "rcv-pos", "sub-pos")
            ]
            heartbeats = counters[9].value > 0 and counters[10].value > 0
            return counters if positions == [end] * 5 and heartbeats else None

        counters = wait_for(settled, 5.0, "positions to settle at the end and heartbeats to flow", 0.05)
        heartbeat_bytes = _heartbeat_bytes_counted(driver.aeron_dir, end, cnc)
    stream_counters: dict[str, tuple] = {}
    others: set[tuple] = set()
    for counter in counters.values():
        if counter.type_id == 0 and counter.id < FIRST_NON_SYSTEM_ID:  # 1.15.1's 25 (Java) or 40 (ours)
            continue
        if counter.type_id == CLIENT_CLOSES_TYPE_ID:  # ours alone
            continue
        label = counter.label.replace(f"localhost:{port}", "localhost:PORT")
        if match := STREAM_LABEL.match(label):
            assert match["name"] not in stream_counters, label
            stream_counters[match["name"]] = (
                counter.type_id,
                roles.get(int(match["reg"]), match["reg"]),
                "SESSION" if int(match["session"]) == pub.session_id else match["session"],
                int(match["stream"]),
                match["channel"],
                match["join"],
                counter.value,
                end,
            )
        else:
            others.add((counter.type_id, re.sub(r"\d+$", "N", label)))
    system = {cid: counters[cid].value for cid in SYSTEM_COUNTERS}
    for cid, label in SYSTEM_COUNTERS.items():
        assert counters[cid].label == label
    return stream_counters, system, others, heartbeat_bytes


def test_counters_like_the_java_driver(drivers, cnc):
    """Our driver, doing the same roles as a Java driver (a UDP publication and an image of it with one
    subscriber), allocates the same stream counters: names, type ids, key fields in the label (registration id
    of the publication / subscription / image, session, stream, channel, join position), with values at the
    stream's end; and the system counters for bytes, status messages and heartbeats move."""
    ours, our_system, our_others, _ = _udp_counters("ours", drivers, cnc)
    java, java_system, java_others, java_heartbeat_bytes = _udp_counters("java", drivers, cnc)
    assert set(ours) >= PUB_NAMES | SUB_NAMES, ours
    for name in sorted(PUB_NAMES | SUB_NAMES):
        type_id, role, session, stream, channel, join, value, end = ours[name]
        assert (type_id, role, session, stream, channel, join) == java[name][:6], name
        assert session == "SESSION" and stream == 2004 and channel == "aeron:udp?endpoint=localhost:PORT"
        if name in ("snd-lmt", "pub-lmt"):
            assert value > end, name
    # Today's Aeron per-stream event counters (docs/counters.md section 8), which 1.15.1 does not have.
    modern = {"snd-bpe": (13, "PUB"), "snd-naks-received": (19, "PUB"), "rcv-naks-sent": (20, "IMG")}
    assert set(ours) == set(java) | set(modern)
    for name, (type_id, role) in modern.items():
        assert ours[name][:5] == (type_id, role, "SESSION", 2004, "aeron:udp?endpoint=localhost:PORT"), name
    # and its local socket address counters (type 14), one per endpoint socket
    local_addresses = {o for o in our_others if o[0] == LOCAL_SOCKET_ADDRESS_TYPE_ID}
    assert {label.split(":")[0] for _, label in local_addresses} == {"snd-local-sockaddr", "rcv-local-sockaddr"}
    assert our_others - local_addresses == java_others  # channel status counters (snd-channel, rcv-channel), ...
    assert all(v > 0 for v in our_system.values()), our_system
    assert all(v > 0 for v in java_system.values()), java_system
    assert java_heartbeat_bytes  # the reference for the test below


def test_byte_counters_include_heartbeats(drivers, cnc):
    """Bytes sent = data + 32 x heartbeats sent, bytes received = data + 32 x heartbeats received, as the Java
    driver counts them (checked in test_counters_like_the_java_driver)."""
    *_, heartbeat_bytes = _udp_counters("ours", drivers, cnc)
    assert heartbeat_bytes


# ---------------------------------------------------------------------------------------------------------------
# MDC: one publication, a subscriber on each driver


MIN_FLOW_CONTROL = {"aeron.multicast.flow.control.strategy": "io.aeron.driver.MinMulticastFlowControl"}


@pytest.mark.parametrize("mode", ["dynamic", "manual"])
@pytest.mark.parametrize("pub_kind", ["ours", "java"])
def test_mdc_to_a_subscriber_on_each_driver(pub_kind, mode, drivers, spawn_java):
    """A multi-destination-cast publication (``control-mode=dynamic`` via ``control=``, or ``manual`` with
    ADD_DESTINATION) on one driver; Java MessageSinks on our driver and on the Java driver, each on its own
    port, both joined before the first message. Both get every message, exactly, and see the image go unavailable at end of stream when the
    MessageSource closes.

    The publishing driver runs min multicast flow control (the slowest receiver sets the pace), the same
    property on either driver: with 1.15.1's default (max) a receiver that falls a window behind the fastest
    one loses data for good, with either driver."""
    other_kind = "java" if pub_kind == "ours" else "ours"
    pub_driver = drivers.start(
        pub_kind, {**(JAVA_PROPS if pub_kind == "java" else OUR_PROPS), **MIN_FLOW_CONTROL}
    )
    other_driver = drivers.start(other_kind, JAVA_PROPS if other_kind == "java" else OUR_PROPS)
    control, first, second = free_port(), free_port(), free_port()
    stream = 2005
    lengths = cycle(MIXED_SIZES, 2_000)
    sinks = [
        spawn_sink(spawn_java, driver, f"aeron:udp?endpoint=localhost:{port}|control=localhost:{control}",
                   stream, len(lengths))
        for driver, port in ((pub_driver, first), (other_driver, second))
    ]  # fmt: skip
    channel = f"aeron:udp?control=localhost:{control}|term-length=1m"
    extra: list[str] = []
    if mode == "manual":
        channel += "|control-mode=manual"
        extra = [
            "--destinations",
            ",".join(f"aeron:udp?endpoint=localhost:{port}" for port in (first, second)),
        ]
    source = Pumped(spawn_java(
        "MessageSource", pub_driver.aeron_dir, channel, stream, "--sizes", ",".join(map(str, MIXED_SIZES)),
        "--count", len(lengths), "--timeout", int(WAIT_S), "--go-on-input", *extra, stdin=True,
    ))  # fmt: skip
    # Connected means one receiver has answered; a dynamic one that elicits SETUP a second later would join
    # mid-stream. Publish once both images are up.
    for sink in sinks:
        sink.until(lambda lines: any(line.startswith("AVAILABLE ") for line in lines), WAIT_S, "AVAILABLE")
    source.spawned.write_line("go")
    session_id, final_position = check_source(source, lengths)
    for sink in sinks:
        check_sink(sink, lengths, session_id, final_position)
