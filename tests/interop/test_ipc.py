"""Messages cross ``aeron:ipc`` exactly between the real Aeron 1.15.1 Java clients and our Python client, through our
driver and through the Java 1.15.1 driver.

Java programs: the jar's samples (BasicPublisher/BasicSubscriber, StreamingPublisher/RateSubscriber) and
tests/interop/java/MessageSource.java / MessageSink.java. Message k of a publication has ``lengths[k]`` bytes,
byte i = (k * 31 + i) & 0xff; receivers report length and CRC-32 per whole message, and the tests compare them,
per session, with what was published: content, order and count exact.
"""

from __future__ import annotations

import re
import struct
import time
import zlib
from collections import defaultdict
from pathlib import Path

import pytest

from driver.client import Aeron
from driver.client.fragment_assembler import FragmentAssembler
from driver.client.offer_result import ADMIN_ACTION, BACK_PRESSURED, NOT_CONNECTED
from driver.concurrent.logbuffer.buffer_claim import BufferClaim
from tests.support import wait_for

pytestmark = pytest.mark.interop

KINDS = ("ours", "java")
LINGER_S = 1.0
TIMER_INTERVAL_S = 1.0  # both drivers check publication state (drained, linger over) once per timer tick
DRIVER_PROPS = {"aeron.publication.linger.timeout": int(LINGER_S * 1e9)}
WAIT_S = 20.0

IPC = "aeron:ipc"
IPC_1M = "aeron:ipc?term-length=1m"
TERM_1M = 1024 * 1024
MAX_MESSAGE_1M = min(TERM_1M // 8, 16 * 1024 * 1024)  # 1.15.1 FrameDescriptor.computeMaxMessageLength
MAX_PAYLOAD = 1408 - 32  # default IPC MTU (aeron.ipc.mtu.length) less the data header
# Around the one-frame boundary (mtu - 32 = 1376), several frames, and the largest a 1 MiB term allows.
SIZES = (0, 1, 32, 1375, 1376, 1377, 4096, MAX_MESSAGE_1M, 200, MAX_MESSAGE_1M - 32)
CYCLES = 4  # 4 x sum(SIZES) ~ 1.08 MB: more than one 1 MiB term, so the log rotates (with padding) once
CLAIM_SIZES = (0, 1, 32, 1375, 1376)

_PATTERN = bytes(range(256)) * (MAX_MESSAGE_1M // 256 + 2)
MSG_LINE = re.compile(r"^MSG (\d+) (\d+) (\d+) (-?\d+) (\d+)$")
RATE_TOTAL = re.compile(r"totals (\d+) messages")


def payload(k: int, length: int) -> bytes:
    start = (k * 31) & 0xFF
    return _PATTERN[start : start + length]


def cycle(sizes: tuple[int, ...], count: int) -> list[int]:
    return [sizes[k % len(sizes)] for k in range(count)]


def expected(lengths: list[int], first_k: int = 0) -> list[tuple[int, int]]:
    """(length, crc32) of messages first_k, first_k + 1, ... with the given lengths."""
    return [(n, zlib.crc32(payload(k, n))) for k, n in enumerate(lengths, first_k)]


def publish(
    pub, lengths: list[int], *, first_k: int = 0, claim: bool = False, timeout: float = WAIT_S
) -> int:
    """Offer (or try_claim + commit) messages first_k.. with retries; returns the position after the last."""
    buffer_claim = BufferClaim()
    deadline = time.monotonic() + timeout
    position = 0
    for k, length in enumerate(lengths, first_k):
        data = payload(k, length)
        while True:
            position = pub.try_claim(length, buffer_claim) if claim else pub.offer(data)
            if position > 0:
                break
            assert position in (NOT_CONNECTED, BACK_PRESSURED, ADMIN_ACTION), (
                f"message {k}: result {position}"
            )
            if time.monotonic() > deadline:
                pytest.fail(
                    f"message {k} ({length} bytes) not published within {timeout}s: result {position}"
                )
            if position != ADMIN_ACTION:
                time.sleep(0.0005)
        if claim:
            buffer_claim.put_bytes(data)
            buffer_claim.commit()
    return position


class Collector:
    """A fragment handler (behind a FragmentAssembler) recording (length, crc32, position) per session."""

    def __init__(self) -> None:
        self.by_session: dict[int, list[tuple[int, int]]] = defaultdict(list)
        self.positions: dict[int, list[int]] = defaultdict(list)
        self.count = 0

    def __call__(self, buffer, offset: int, length: int, header) -> None:
        data = buffer.get_bytes(offset, length)
        self.by_session[header.session_id].append((length, zlib.crc32(data)))
        self.positions[header.session_id].append(header.position)
        self.count += 1


class ImageEvents:
    """Image handlers for a Python subscription; unavailable records the image's final state."""

    def __init__(self) -> None:
        self.available: list[tuple[int, int, str]] = []
        self.unavailable: list[tuple[int, int, int, bool]] = []

    def on_available(self, image) -> None:
        self.available.append((image.session_id, image.join_position, image.source_identity))

    def on_unavailable(self, image) -> None:
        self.unavailable.append(
            (image.session_id, image.position, image.end_of_stream_position, image.is_end_of_stream)
        )


def poll_until(sub, handler, done, timeout: float = WAIT_S, what: str = "messages") -> None:
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
        match = MSG_LINE.match(line)
        if match:
            assert int(match[1]) == seq, line
            seq += 1
            by_session[int(match[4])].append((int(match[2]), int(match[3])))
            positions[int(match[4])].append(int(match[5]))
    return by_session, positions


def line_fields(lines: list[str], tag: str) -> list[list[str]]:
    return [line.split()[1:] for line in lines if line.startswith(tag + " ")]


# ---------------------------------------------------------------------------------------------------------------
# The jar's samples through our driver


def test_basic_publisher_to_basic_subscriber(drivers, spawn_java):
    messages = 3  # BasicPublisher sleeps 1 s after each offer
    driver = drivers.ours(DRIVER_PROPS)
    props = {"aeron.dir": driver.aeron_dir, "aeron.sample.channel": IPC, "aeron.sample.streamId": 1001}
    subscriber = spawn_java("io.aeron.samples.BasicSubscriber", props=props)
    # BasicPublisher does not retry a failed offer: make sure the subscription is in the driver first (a probe
    # publication connects only once the driver has linked a subscription to it).
    with Aeron.connect(driver.aeron_dir, timeout_s=10) as aeron:
        probe = aeron.add_publication(IPC, 1001)
        wait_for(lambda: probe.is_connected, WAIT_S, "BasicSubscriber's subscription")
        probe_session = probe.session_id
        probe.close()

    publisher = spawn_java(
        "io.aeron.samples.BasicPublisher", props={**props, "aeron.sample.messages": messages}
    )
    assert publisher.wait(messages + 20) == 0, publisher.stderr_text()
    offers = [line for line in publisher.lines if line.startswith("Offering ")]
    assert offers == [f"Offering {i}/{messages} - yay!" for i in range(messages)], publisher.lines

    message = re.compile(r"^Message to stream 1001 from session (-?\d+) \((\d+)@(\d+)\) <<(.*)>>$")
    unavailable = re.compile(r"^Unavailable image on aeron:ipc streamId=1001 sessionId=(-?\d+)$")

    def publisher_gone(lines):
        sessions = {m[1] for line in lines if (m := message.match(line))}
        return sessions and any((m := unavailable.match(line)) and m[1] in sessions for line in lines)

    lines = subscriber.read_until(publisher_gone, WAIT_S)
    received = [m for line in lines if (m := message.match(line))]
    assert [m[4] for m in received] == [f"Hello World! {i}" for i in range(messages)], lines
    (session,) = {int(m[1]) for m in received}
    assert session != probe_session
    assert [int(m[2]) for m in received] == [len(f"Hello World! {i}") for i in range(messages)]
    # Each 14-byte message takes one 64-byte aligned frame, from the start of the log.
    assert [int(m[3]) for m in received] == [32 + 64 * i for i in range(messages)]
    assert f"Available image on aeron:ipc streamId=1001 sessionId={session} from aeron:ipc" in lines


def test_streaming_publisher_million_messages(drivers, spawn_java):
    messages = 1_000_000
    driver = drivers.ours(DRIVER_PROPS)
    props = {
        "aeron.dir": driver.aeron_dir,
        "aeron.sample.channel": IPC,
        "aeron.sample.streamId": 1002,
        "aeron.sample.messages": messages,
        "aeron.sample.messageLength": 32,
        "user.language": "en",
        "user.country": "US",
    }

    def totals(lines):
        return [int(m[1]) for line in lines if (m := RATE_TOTAL.search(line))]

    subscriber = spawn_java("io.aeron.samples.RateSubscriber", props=props)
    subscriber.read_until(RATE_TOTAL, WAIT_S)  # running and reporting once a second
    # StreamingPublisher retries every offer until it succeeds, so nothing is lost before it connects.
    publisher = spawn_java("io.aeron.samples.StreamingPublisher", props=props, stdin=True)
    publisher.write_line("n")  # "Execute again?"
    subscriber.read_until(lambda lines: totals(lines) and totals(lines)[-1] >= messages, 40)
    reports = len(totals(subscriber.lines))
    subscriber.read_until(lambda lines: len(totals(lines)) > reports, 5)  # one more report: no extras
    assert totals(subscriber.lines)[-2:] == [messages, messages], subscriber.lines
    assert publisher.wait(WAIT_S) == 0, publisher.stderr_text()
    assert any(line.startswith("Done streaming.") for line in publisher.lines), publisher.lines


# ---------------------------------------------------------------------------------------------------------------
# Python <-> Java, through either driver


@pytest.mark.parametrize("kind", KINDS)
def test_python_to_java(kind, drivers, spawn_java):
    """Shared publication, offers of every size up to the maximum message length, log rotation included."""
    driver = drivers.start(kind, DRIVER_PROPS)
    lengths = cycle(SIZES, CYCLES * len(SIZES))
    sink = spawn_java("MessageSink", driver.aeron_dir, IPC, 1003, "--count", len(lengths), "--timeout", 30)
    sink.read_until("^READY ", WAIT_S)
    with Aeron.connect(driver.aeron_dir, timeout_s=10) as aeron:
        pub = aeron.add_publication(IPC_1M, 1003)
        assert (pub.max_message_length, pub.max_payload_length) == (MAX_MESSAGE_1M, MAX_PAYLOAD)
        with pytest.raises(ValueError):
            pub.offer(bytes(MAX_MESSAGE_1M + 1))
        final_position = publish(pub, lengths)
        assert final_position > TERM_1M
        lines = sink.read_until("^(DONE|TIMEOUT)", WAIT_S)
        assert sink.wait(10) == 0, lines
    by_session, positions = sink_messages(lines)
    assert dict(by_session) == {pub.session_id: expected(lengths)}
    assert positions[pub.session_id][-1] == final_position
    assert line_fields(lines, "AVAILABLE") == [
        [str(pub.session_id), "0", str(pub.original_registration_id), IPC_1M]
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_python_exclusive_and_try_claim_to_java(kind, drivers, spawn_java):
    """A shared publication filled by try_claim and an exclusive one by offer then try_claim, both at once."""
    driver = drivers.start(kind, DRIVER_PROPS)
    claimed = cycle(CLAIM_SIZES, 40)
    offered = cycle(SIZES, CYCLES * len(SIZES))
    total = len(claimed) + len(offered) + len(claimed)
    sink = spawn_java("MessageSink", driver.aeron_dir, IPC, 1004, "--count", total, "--timeout", 30)
    sink.read_until("^READY ", WAIT_S)
    with Aeron.connect(driver.aeron_dir, timeout_s=10) as aeron:
        shared = aeron.add_publication(IPC_1M, 1004)
        exclusive = aeron.add_exclusive_publication(IPC_1M, 1004)
        assert shared.session_id != exclusive.session_id
        publish(shared, claimed, claim=True)
        publish(exclusive, offered)
        end = publish(exclusive, claimed, first_k=len(offered), claim=True)
        assert end > TERM_1M
        with pytest.raises(ValueError):
            exclusive.try_claim(MAX_PAYLOAD + 1, BufferClaim())
        lines = sink.read_until("^(DONE|TIMEOUT)", WAIT_S)
        assert sink.wait(10) == 0, lines
    by_session, positions = sink_messages(lines)
    assert dict(by_session) == {
        shared.session_id: expected(claimed),
        exclusive.session_id: expected(offered + claimed),
    }
    assert positions[exclusive.session_id][-1] == end


JAVA_SOURCE_MODES = {
    "offer": (),
    "exclusive": ("--exclusive",),
    "try-claim": ("--try-claim",),
    "exclusive-try-claim": ("--exclusive", "--try-claim"),
}


@pytest.mark.parametrize("mode", list(JAVA_SOURCE_MODES))
@pytest.mark.parametrize("kind", KINDS)
def test_java_to_python(kind, mode, drivers, spawn_java):
    """MessageSource (every size; with --try-claim, claims for those that fit one frame) -> our subscription;
    the source then closes its publication: end of stream, then image unavailable."""
    driver = drivers.start(kind, DRIVER_PROPS)
    lengths = cycle(SIZES, CYCLES * len(SIZES))
    events = ImageEvents()
    collector = Collector()
    with Aeron.connect(driver.aeron_dir, timeout_s=10) as aeron:
        sub = aeron.add_subscription(IPC, 1005, events.on_available, events.on_unavailable)
        source = spawn_java(
            "MessageSource",
            driver.aeron_dir,
            IPC_1M,
            1005,
            *JAVA_SOURCE_MODES[mode],
            "--sizes",
            ",".join(map(str, SIZES)),
            "--count",
            len(lengths),
            "--timeout",
            30,
        )
        assembler = FragmentAssembler(collector)
        poll_until(sub, assembler, lambda: collector.count >= len(lengths), what=f"{len(lengths)} messages")
        assert source.wait(WAIT_S) == 0, source.stderr_text()
        (pub_line,) = line_fields(source.lines, "PUB")
        session_id = int(pub_line[0])
        assert [int(v) for v in pub_line[1:]] == [MAX_MESSAGE_1M, MAX_PAYLOAD, TERM_1M]
        sent = line_fields(source.lines, "SENT")
        assert [(int(k), int(n)) for k, n, *_ in sent] == list(enumerate(lengths))
        claims = {int(n) for _, n, _, how in sent if how == "claim"}
        assert claims == ({n for n in SIZES if n <= MAX_PAYLOAD} if "try-claim" in mode else set()), sent
        (done,) = line_fields(source.lines, "DONE")
        final_position = int(done[0])
        assert final_position > TERM_1M

        assert dict(collector.by_session) == {session_id: expected(lengths)}
        assert collector.positions[session_id] == [int(p) for _, _, p, _ in sent]
        assert events.available == [(session_id, 0, IPC_1M)]
        # The source closed its publication: the image reaches end of stream, then goes unavailable.
        poll_until(sub, assembler, lambda: events.unavailable, TIMER_INTERVAL_S + 5, "image unavailable")
        assert events.unavailable == [(session_id, final_position, final_position, True)]
        assert sub.images == ()
        assert collector.count == len(lengths)


# ---------------------------------------------------------------------------------------------------------------
# Removing a publication


@pytest.mark.parametrize("kind", KINDS)
def test_publication_removal(kind, drivers, spawn_java):
    """Both a Java and a Python subscriber see end of stream and image unavailable; the log file is deleted
    once the publication has lingered (aeron.publication.linger.timeout = 1 s), not before."""
    driver = drivers.start(kind, DRIVER_PROPS)
    lengths = cycle(SIZES[:7], 30)
    events = ImageEvents()
    collector = Collector()
    sink = spawn_java(
        "MessageSink", driver.aeron_dir, IPC, 1006, "--count", len(lengths), "--until-unavailable", 1,
        "--timeout", 30,
    )  # fmt: skip
    sink.read_until("^READY ", WAIT_S)
    with Aeron.connect(driver.aeron_dir, timeout_s=10) as aeron:
        sub = aeron.add_subscription(IPC, 1006, events.on_available, events.on_unavailable)
        pub = aeron.add_publication(IPC, 1006)
        log_file = Path(pub.log_buffers.path)
        assert log_file.parent == Path(driver.aeron_dir) / "publications"
        assert log_file.exists()
        end = publish(pub, lengths)
        assembler = FragmentAssembler(collector)
        poll_until(sub, assembler, lambda: collector.count >= len(lengths))
        sink.read_until(lambda lines: len(line_fields(lines, "MSG")) >= len(lengths), WAIT_S)
        (image,) = sub.images
        assert not image.is_end_of_stream

        removed_at = time.monotonic()
        pub.close()
        # The driver sets the end-of-stream position when the last publisher goes (the image stays mapped a
        # while after it goes unavailable, so this read is safe either way).
        wait_for(lambda: image.end_of_stream_position == end, TIMER_INTERVAL_S + 2, "end of stream position")
        poll_until(
            sub, assembler, lambda: events.unavailable, TIMER_INTERVAL_S + 2, "Python image unavailable"
        )
        unavailable_at = time.monotonic()
        assert events.unavailable == [(pub.session_id, end, end, True)]
        lines = sink.read_until("^DONE$", TIMER_INTERVAL_S + 2)
        assert line_fields(lines, "UNAVAILABLE") == [[str(pub.session_id), str(end), "true"]]
        assert sink.wait(10) == 0, lines

        # Drained at the first timer tick after the close, linger, freed at the next tick after that.
        deadline = LINGER_S + 2 * TIMER_INTERVAL_S + 1.0  # + scheduling slack on a busy 2-core machine
        wait_for(
            lambda: not log_file.exists(), deadline - (time.monotonic() - removed_at), "log file deletion"
        )
        deleted_at = time.monotonic()
        assert deleted_at - unavailable_at >= LINGER_S * 0.7, (
            deleted_at - removed_at,
            unavailable_at - removed_at,
        )
    by_session, _ = sink_messages(lines)
    assert dict(by_session) == {pub.session_id: expected(lengths)}
    assert dict(collector.by_session) == {pub.session_id: expected(lengths)}


# ---------------------------------------------------------------------------------------------------------------
# Two subscribers at different speeds and a late joiner (Python clients)

FRAME = 256  # 32-byte header + 224-byte payload: one aligned frame per message
TERM_64K = 64 * 1024


def _numbered(seq: int) -> bytes:
    return struct.pack("<i", seq) + payload(seq, FRAME - 32 - 4)


class _Numbered:
    """Records (seq, start position) of every message and fails on any byte that is not what was published."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seqs: list[int] = []
        self.starts: list[int] = []

    def __call__(self, buffer, offset: int, length: int, header) -> None:
        data = buffer.get_bytes(offset, length)
        seq = struct.unpack_from("<i", data)[0] if length >= 4 else -1
        assert length == FRAME - 32 and data == _numbered(seq), (
            self.name,
            header.position,
            length,
            data[:16],
        )
        self.seqs.append(seq)
        self.starts.append(header.position - FRAME)


@pytest.mark.parametrize("kind", KINDS)
def test_two_speeds_and_late_joiner(kind, drivers, cnc):
    """A and B read at different speeds; C joins while B lags: C starts at the join position (1.15.1
    IpcPublication.joinPosition = the consumer position, the furthest subscriber position the conductor has
    seen), labelled ``@<join>`` on its sub-pos counter, reads only intact data; B still gets everything; the
    term behind the slowest subscriber is cleaned (zeroed)."""
    driver = drivers.start(kind, DRIVER_PROPS)
    channel = "aeron:ipc?term-length=64k"
    a, b, c = _Numbered("A"), _Numbered("B"), _Numbered("C")
    published = 0

    def send(count: int, poll) -> None:
        nonlocal published
        deadline = time.monotonic() + WAIT_S
        for seq in range(published, published + count):
            while (result := pub.offer(_numbered(seq))) < 0:
                assert result in (BACK_PRESSURED, ADMIN_ACTION), result
                assert time.monotonic() < deadline, f"message {seq} not published: {result}"
                if result == BACK_PRESSURED:
                    poll()
        published += count

    def drain(sub, handler, upto: int) -> None:
        poll_until(sub, handler, lambda: len(handler.seqs) >= upto, what=f"{handler.name} to read {upto}")

    with Aeron.connect(driver.aeron_dir, timeout_s=10) as aeron:
        sub_a = aeron.add_subscription(IPC, 1007)
        sub_b = aeron.add_subscription(IPC, 1007)
        pub = aeron.add_publication(channel, 1007)
        wait_for(lambda: sub_a.images and sub_b.images, WAIT_S, "A's and B's images")

        def poll_both() -> None:
            sub_a.poll(a, 64)
            sub_b.poll(b, 64)

        # 1. Both keep up, across a term boundary (the window is one term, so the publisher waits for them).
        send(400, poll_both)
        drain(sub_a, a, 400)
        drain(sub_b, b, 400)
        # 2. A reads everything, B only 50 of 150 more.
        send(150, lambda: sub_a.poll(a, 64))  # B does not read here; a stale limit moves within a duty cycle
        drain(sub_a, a, 550)
        while len(b.seqs) < 450:
            assert sub_b.poll(b, 450 - len(b.seqs)) > 0
        assert (sub_a.images[0].position, sub_b.images[0].position) == (550 * FRAME, 450 * FRAME)
        time.sleep(0.3)  # let the conductor sample the consumer position (it does so every duty cycle)

        # 3. C joins.
        events = ImageEvents()
        sub_c = aeron.add_subscription(IPC, 1007, events.on_available, events.on_unavailable)
        wait_for(lambda: sub_c.images, WAIT_S, "C's image")
        join = sub_c.images[0].join_position
        assert join == 550 * FRAME
        assert events.available == [(pub.session_id, join, IPC)]
        labels = {ctr.label for ctr in cnc.counters(driver.aeron_dir).values()}
        for sub, joined_at in ((sub_a, 0), (sub_b, 0), (sub_c, join)):
            assert f"sub-pos: {sub.registration_id} {pub.session_id} 1007 {IPC} @{joined_at}" in labels, (
                labels
            )

        # 4. Everyone reads to the end; B catches up.
        send(100, lambda: (sub_a.poll(a, 64), sub_b.poll(b, 64), sub_c.poll(c, 64)))
        drain(sub_a, a, 650)
        drain(sub_b, b, 650)
        drain(sub_c, c, 100)
        assert a.seqs == b.seqs == list(range(650))
        assert c.seqs == list(range(550, 650))
        assert c.starts[0] == join
        assert a.starts == b.starts == [seq * FRAME for seq in range(650)]

        # Everything is read up to 650 * 256 = 166,400 > one term: term 0 (positions 0..64K) is cleaned.
        log_file = Path(pub.log_buffers.path)
        zero = bytes(TERM_64K)

        def term0_cleaned() -> bool:
            with open(log_file, "rb") as f:
                return f.read(TERM_64K) == zero

        wait_for(term0_cleaned, 2.0, "term 0 to be cleaned behind the slowest subscriber")
