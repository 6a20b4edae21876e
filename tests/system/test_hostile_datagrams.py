"""Hostile datagrams against a live receiver and publication of our driver (a subprocess): none may crash it
or corrupt a stream.

One driver serves the whole module. Each test opens its own UDP channel (``aeron:udp?endpoint=localhost:<free
port>``, term length 64 KiB) with a Python publication and subscription on it: a healthy stream. A raw Python
UDP socket (the attacker) sends crafted datagrams at the subscription's endpoint (the receiver's data socket)
or at the publication's own port (its control socket, where SMs and NAKs arrive).

Every hostile datagram must be counted in "Invalid packets" (system counter 14) or ignored; either way it must
not create an image, must not move the image's high-water mark (rcv-hwm) past what the publisher sent, and the
healthy stream must go on intact and in order. At the end of the module the driver is still serving clients,
has counted no errors, its error log is empty, and it stops cleanly on SIGTERM.

What Aeron cannot defend against is left out on purpose: the protocol has no authentication, so a frame forged
with the live session's ids and a valid position is indistinguishable from the publisher's (an in-window DATA
frame, an EOS heartbeat, an SM with a large window). The fuzz test keeps its mutations away from those (see
``Fuzzer``), and keeps valid SETUPs from creating more than one extra image.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from driver.client import Aeron
from driver.client.fragment_assembler import FragmentAssembler
from driver.client.offer_result import ADMIN_ACTION, BACK_PRESSURED, NOT_CONNECTED
from driver.protocol import frames
from tests.support import free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]
INVALID_PACKETS, ERRORS = 14, 15
FLOW_CONTROL_UNDER_RUNS, FLOW_CONTROL_OVER_RUNS = 12, 13
TERM_LENGTH = 64 * 1024
WAIT_S = 20.0
SETTLE_S = 0.3  # after the last hostile datagram: let the driver's agents drain their sockets
SIZES = (0, 1, 100, 1376, 1377, 3000, 200)
SEED = 20_240_401

_PATTERN = bytes(range(256)) * 40


def payload(k: int, length: int) -> bytes:
    start = (k * 31) & 0xFF
    return _PATTERN[start : start + length]


# ---------------------------------------------------------------------------------------------------------------
# The driver under attack


class DriverUnderAttack:
    """``python -m driver run`` in a fresh dir under /dev/shm, output to a log file; stopped by pid."""

    def __init__(self) -> None:
        base = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
        self.parent = Path(tempfile.mkdtemp(prefix="aeron-hostile-", dir=base))
        self.aeron_dir = self.parent / "aeron"
        self.log_path = self.parent / "driver.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "driver", "run", "--dir", str(self.aeron_dir),
                 "-Daeron.publication.linger.timeout=1000000000"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env,
            )  # fmt: skip

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def error_log(self) -> str:
        result = subprocess.run(
            [sys.executable, "-m", "driver", "errors", "--dir", str(self.aeron_dir)],
            capture_output=True, text=True, timeout=30, cwd=ROOT,
        )  # fmt: skip
        return result.stdout + result.stderr

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGKILL)
                self.proc.wait(10)
                return None
        return self.proc.returncode

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.parent, ignore_errors=True)


@dataclass
class Live:
    driver: DriverUnderAttack
    aeron: Aeron
    next_stream: list[int] = field(default_factory=lambda: [3001])

    def counter(self, counter_id: int) -> int:
        return self.aeron.counters_reader.get_counter_value(counter_id)

    def stream_id(self) -> int:
        self.next_stream[0] += 1
        return self.next_stream[0]


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    driver = DriverUnderAttack()
    try:
        with Aeron.connect(driver.aeron_dir, timeout_s=30) as aeron:
            yield Live(driver, aeron)
        assert driver.alive(), f"driver died:\n{driver.log()}"
        code = driver.stop()
        assert code == 0, f"driver exit {code}:\n{driver.log()}"
    finally:
        driver.close()


# ---------------------------------------------------------------------------------------------------------------
# A healthy stream and an attacker


class Checker:
    """Fragment handler (behind a FragmentAssembler): message k of the healthy session must be payload(k, ...)."""

    def __init__(self, session_id: int) -> None:
        self.session_id = session_id
        self.count = 0
        self.other_sessions = 0
        self.last_position = 0

    def __call__(self, buffer, offset: int, length: int, header) -> None:
        if header.session_id != self.session_id:
            self.other_sessions += 1
            return
        k = self.count
        expected_length = SIZES[k % len(SIZES)]
        data = buffer.get_bytes(offset, length)
        assert (length, data) == (expected_length, payload(k, expected_length)), (
            f"message {k}: {length} bytes at position {header.position}, crc {zlib.crc32(data)}"
        )
        self.count += 1
        self.last_position = header.position


class HealthyStream:
    def __init__(self, live: Live, term_length: int = TERM_LENGTH) -> None:
        self.live = live
        self.port = free_port()
        self.stream_id = live.stream_id()
        self.channel = f"aeron:udp?endpoint=localhost:{self.port}"
        self.available: list[int] = []
        self.unavailable: list[int] = []
        self.sub = live.aeron.add_subscription(
            self.channel,
            self.stream_id,
            lambda image: self.available.append(image.session_id),
            lambda image: self.unavailable.append(image.session_id),
        )
        self.pub = live.aeron.add_publication(f"{self.channel}|term-length={term_length}", self.stream_id)
        wait_for(lambda: self.pub.is_connected and self.sub.images, WAIT_S, "the healthy stream to connect")
        (self.image,) = self.sub.images
        self.session_id = self.pub.session_id
        assert self.image.session_id == self.session_id
        host, _, port = self.image.source_identity.rpartition(":")
        self.data_address = ("127.0.0.1", self.port)
        self.control_address = (host, int(port))  # the publication's socket
        self.checker = Checker(self.session_id)
        self.assembler = FragmentAssembler(self.checker)
        self.published = 0
        self.hwm_id, self.rcv_pos_id = self._image_counters()

    def _image_counters(self) -> tuple[int, int]:
        found: dict[str, int] = {}
        suffix = f"{self.image.correlation_id} {self.session_id} {self.stream_id} {self.channel}"

        def visit(counter_id: int, _type_id: int, _key: bytes, label: str) -> None:
            for name in ("rcv-hwm", "rcv-pos"):
                if label == f"{name}: {suffix}":
                    found[name] = counter_id

        self.live.aeron.counters_reader.for_each(visit)
        return found["rcv-hwm"], found["rcv-pos"]

    @property
    def hwm(self) -> int:
        return self.live.counter(self.hwm_id)

    @property
    def rcv_pos(self) -> int:
        return self.live.counter(self.rcv_pos_id)

    @property
    def term_id(self) -> int:
        """The term of the publication's position (the active term once the stream is drained)."""
        return self.pub.initial_term_id + (self.pub.position // TERM_LENGTH)

    @property
    def term_offset(self) -> int:
        return self.pub.position % TERM_LENGTH

    def offer_one(self) -> bool:
        k = self.published
        result = self.pub.offer(payload(k, SIZES[k % len(SIZES)]))
        if result > 0:
            self.published += 1
            return True
        assert result in (NOT_CONNECTED, BACK_PRESSURED, ADMIN_ACTION), f"message {k}: {result}"
        return False

    def poll(self) -> int:
        return self.sub.poll(self.assembler, 64)

    def send(self, count: int, timeout: float = WAIT_S) -> None:
        """Publish ``count`` more messages and read them all back, intact and in order."""
        target = self.published + count
        deadline = time.monotonic() + timeout
        while self.checker.count < target:
            if self.published < target:
                self.offer_one()
            if self.poll() == 0 and time.monotonic() > deadline:
                pytest.fail(
                    f"healthy stream stalled: published {self.published}, received {self.checker.count}, "
                    f"rcv-hwm {self.hwm}, rcv-pos {self.rcv_pos}, pub position {self.pub.position}"
                )
        assert self.checker.last_position == self.pub.position

    def settled(self) -> bool:
        return self.hwm == self.rcv_pos == self.pub.position

    def close(self) -> None:
        self.pub.close()
        self.sub.close()


class Spoofer:
    """Sends UDP datagrams with a forged source address (a raw IPv4 socket, IP_HDRINCL; needs root or
    CAP_NET_RAW). A unicast publication's socket is connected to the subscription's endpoint, so the kernel
    passes it only datagrams from that address: an attacker has to forge it."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)

    def sendto(self, data: bytes, source: tuple[str, int], destination: tuple[str, int]) -> None:
        udp = struct.pack("!HHHH", source[1], destination[1], 8 + len(data), 0) + data  # checksum 0: none
        ip = struct.pack(
            "!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, socket.IPPROTO_UDP, 0,
            socket.inet_aton(source[0]), socket.inet_aton(destination[0]),
        )  # fmt: skip  # the kernel fills in the id and header checksum
        self.sock.sendto(ip + udp, (destination[0], 0))

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def spoofer() -> Iterator[Spoofer]:
    try:
        spoof = Spoofer()
    except PermissionError:
        pytest.skip("raw sockets need root or CAP_NET_RAW (to forge a publication's peer address)")
    yield spoof
    spoof.close()


@contextlib.contextmanager
def attacker() -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock
    finally:
        sock.close()


# ---------------------------------------------------------------------------------------------------------------
# Hostile datagrams, one family per test

# DATA: frame_length, version, flags, type, term_offset, session, stream, term_id, reserved
DATA = frames.DATA_HEADER
SETUP = frames.SETUP_HEADER
SM = frames.SM_HEADER
NAK = frames.NAK_HEADER
I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def to_i32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def data_frame(
    s: HealthyStream,
    *,
    body: bytes = b"x" * 32,
    frame_length: int | None = None,
    version: int = 0,
    flags: int = 0xC0,
    frame_type: int = frames.HDR_TYPE_DATA,
    term_offset: int | None = None,
    session_id: int | None = None,
    stream_id: int | None = None,
    term_id: int | None = None,
) -> bytes:
    """A DATA frame at the stream's current position (by default) for its session and stream."""
    header = DATA.pack(
        32 + len(body) if frame_length is None else frame_length,
        version,
        flags,
        frame_type,
        s.term_offset if term_offset is None else term_offset,
        s.session_id if session_id is None else session_id,
        s.stream_id if stream_id is None else stream_id,
        s.term_id if term_id is None else term_id,
        0,
    )
    return header + body


def setup_frame(s: HealthyStream, **fields: int) -> bytes:
    values = {
        "frame_length": 40, "version": 0, "flags": 0, "type": frames.HDR_TYPE_SETUP,
        "term_offset": 0, "session_id": s.session_id, "stream_id": s.stream_id,
        "initial_term_id": s.pub.initial_term_id, "active_term_id": s.term_id,
        "term_length": TERM_LENGTH, "mtu": 1408, "ttl": 0,
    }  # fmt: skip
    values.update(fields)
    return SETUP.pack(*values.values())


def sm_frame(s: HealthyStream, **fields: int) -> bytes:
    values = {
        "frame_length": 36, "version": 0, "flags": 0, "type": frames.HDR_TYPE_SM,
        "session_id": s.session_id, "stream_id": s.stream_id, "term_id": s.term_id, "term_offset": 0,
        "window": 0, "receiver_id": 1234,
    }  # fmt: skip
    values.update(fields)
    return SM.pack(*values.values())


def nak_frame(s: HealthyStream, **fields: int) -> bytes:
    values = {
        "frame_length": 28, "version": 0, "flags": 0, "type": frames.HDR_TYPE_NAK,
        "session_id": s.session_id, "stream_id": s.stream_id, "term_id": s.term_id, "term_offset": 0,
        "length": 1408,
    }  # fmt: skip
    values.update(fields)
    return NAK.pack(*values.values())


# (datagram, "data" | "control", "invalid" | "ignored" | "either")
Attack = list[tuple[bytes, str, str]]


def short_datagrams(s: HealthyStream) -> Attack:
    """Fewer than 8 bytes (no common header), and DATA headers cut to 9..31 bytes."""
    full = data_frame(s)
    return [(full[:n], "data", "invalid") for n in range(8)] + [
        (full[:n], "data", "invalid") for n in range(9, 32)
    ]


def wrong_version(s: HealthyStream) -> Attack:
    return [(data_frame(s, version=v), "data", "invalid") for v in (1, 0x7F, 0xFF)] + [
        (setup_frame(s, version=1, session_id=s.session_id + 1), "data", "invalid")
    ]


def bad_frame_lengths(s: HealthyStream) -> Attack:
    """frame_length past the end of the datagram, negative, or shorter than a DATA header (not a heartbeat)."""
    lengths = (65, 96, 1500, 65504, I32_MAX, -1, -32, I32_MIN, 0, 1, 31)
    return [(data_frame(s, frame_length=n), "data", "invalid") for n in lengths]


def bad_term_offsets(s: HealthyStream) -> Attack:
    """Unaligned, negative, or past the largest term length (1 GiB) at the stream's term."""
    offsets = (
        s.term_offset + 1,
        s.term_offset + 8,
        s.term_offset + 31,
        -32,
        -1,
        I32_MIN,
        2**30,
        I32_MAX - 31,
    )
    return [(data_frame(s, term_offset=o), "data", "invalid") for o in offsets]


def past_the_image_term(s: HealthyStream) -> Attack:
    """A term offset at or past the image's own term length (64 KiB), named from the previous term so that
    the position it works out to is the stream's current one, inside the receiver window: 1.15.1 would throw
    (IndexOutOfBounds in TermRebuilder.insert, no high-water mark move). It must not be written, nor move
    rcv-hwm."""
    return [
        (data_frame(s, term_id=s.term_id - 1, term_offset=TERM_LENGTH + s.term_offset), "data", "invalid"),
        (
            data_frame(s, term_id=s.term_id - 1, term_offset=TERM_LENGTH + s.term_offset + 64),
            "data",
            "invalid",
        ),
    ]


def padding_past_term_end(s: HealthyStream) -> Attack:
    """A PAD frame at the current position whose length runs past the end of the term (1.15.1 would write it,
    and a subscriber would then skip past the end of the term)."""
    return [
        (
            data_frame(s, frame_type=frames.HDR_TYPE_PAD, body=b"", frame_length=TERM_LENGTH),
            "data",
            "invalid",
        ),
        (data_frame(s, frame_type=frames.HDR_TYPE_PAD, body=b"", frame_length=I32_MAX), "data", "invalid"),
    ]


def far_term_ids(s: HealthyStream) -> Attack:
    """Term ids far outside the receiver window (under and over runs, wrapping int32 arithmetic)."""
    ids = [to_i32(t) for t in (s.term_id + 2, s.term_id + 2**20, s.term_id - 2**20, s.term_id + 2**31 - 1,
                               s.term_id - 2**31, s.pub.initial_term_id - 1, I32_MAX, I32_MIN)]  # fmt: skip
    return [(data_frame(s, term_id=t), "data", "ignored") for t in ids] + [
        (data_frame(s, term_id=t, body=b"", frame_length=0), "data", "ignored")
        for t in ids  # heartbeats
    ]


def unknown_session_and_stream(s: HealthyStream) -> Attack:
    return [
        (data_frame(s, session_id=s.session_id + 1), "data", "ignored"),
        (
            data_frame(s, session_id=s.session_id ^ 0x40000000, flags=0xE0, body=b"", frame_length=0),
            "data",
            "ignored",
        ),
        (data_frame(s, stream_id=s.stream_id + 1000), "data", "ignored"),
        (setup_frame(s, stream_id=s.stream_id + 1000, session_id=77), "data", "ignored"),
    ]


def forged_setup_for_live_session(s: HealthyStream) -> Attack:
    """A SETUP for the live session with other parameters: the existing image keeps its own."""
    return [
        (setup_frame(s, initial_term_id=s.pub.initial_term_id + 5), "data", "ignored"),
        (setup_frame(s, term_length=1024 * 1024), "data", "ignored"),
        (setup_frame(s, mtu=4096), "data", "ignored"),
        (setup_frame(s, mtu=8192, term_length=16 * 1024 * 1024, initial_term_id=0, active_term_id=7), "data",
         "ignored"),
        (setup_frame(s, term_offset=32 * 100, active_term_id=s.term_id + 3), "data", "ignored"),
    ]  # fmt: skip


def invalid_setups(s: HealthyStream) -> Attack:
    """SETUPs for a new session of the subscribed stream with impossible parameters: no image may come of them."""
    new = s.session_id + 7
    return [
        (setup_frame(s, session_id=new, term_length=1000), "data", "invalid"),
        (setup_frame(s, session_id=new, term_length=32 * 1024), "data", "invalid"),
        (setup_frame(s, session_id=new, term_length=2**31 - 1), "data", "invalid"),
        (setup_frame(s, session_id=new, mtu=33), "data", "invalid"),
        (setup_frame(s, session_id=new, mtu=0), "data", "invalid"),
        (setup_frame(s, session_id=new, mtu=65536), "data", "invalid"),
        (setup_frame(s, session_id=new, term_offset=-32), "data", "invalid"),
        (setup_frame(s, session_id=new, term_offset=TERM_LENGTH), "data", "invalid"),
        (setup_frame(s, session_id=new, frame_length=24)[:24], "data", "invalid"),
        (setup_frame(s, session_id=new)[:39], "data", "invalid"),
    ]


def control_frames_at_data_endpoint(s: HealthyStream) -> Attack:
    """SM and NAK belong on a publication's socket: the receiver ignores them; unknown types too."""
    unknown = [
        (data_frame(s, frame_type=t), "data", "either")
        for t in (frames.HDR_TYPE_ERR, frames.HDR_TYPE_EXT, 7, 0x1234)
    ]
    return [(sm_frame(s), "data", "ignored"), (nak_frame(s), "data", "ignored"), *unknown]


def garbage_to_publication(s: HealthyStream) -> Attack:
    """Malformed SMs and NAKs (and junk) at the publication's own socket, and well-formed ones it must ignore."""
    rng = random.Random(SEED)
    junk = [bytes(rng.getrandbits(8) for _ in range(n)) for n in (1, 7, 8, 27, 35, 100, 1500)]
    mid_payload = max(0, s.term_offset - 1024) & ~31  # inside earlier messages' payloads (not frame starts)
    return [
        *[(j, "control", "either") for j in junk],
        (sm_frame(s)[:20], "control", "invalid"),
        (sm_frame(s)[:35], "control", "invalid"),
        (sm_frame(s, version=3), "control", "invalid"),
        (sm_frame(s, window=-1), "control", "invalid"),
        (sm_frame(s, term_offset=-64), "control", "invalid"),
        (sm_frame(s, frame_length=1000), "control", "invalid"),
        (sm_frame(s, session_id=s.session_id + 1, window=1 << 20), "control", "ignored"),
        (sm_frame(s, stream_id=s.stream_id + 1, window=1 << 20), "control", "ignored"),
        (nak_frame(s)[:27], "control", "invalid"),
        (nak_frame(s, version=1), "control", "invalid"),
        (nak_frame(s, term_offset=-32), "control", "invalid"),
        (nak_frame(s, term_offset=I32_MAX), "control", "either"),
        (nak_frame(s, term_offset=TERM_LENGTH), "control", "either"),
        (nak_frame(s, length=-1), "control", "either"),
        (nak_frame(s, session_id=s.session_id + 1), "control", "ignored"),
        (nak_frame(s, term_id=s.term_id + 1000), "control", "ignored"),
        (nak_frame(s, term_id=s.term_id - 1000), "control", "ignored"),
        # Well-formed NAKs for the live session that ask for odd ranges: retransmits of data the receiver has
        # (duplicates), from offsets inside message payloads, or everything to the end of the term.
        (nak_frame(s, term_offset=0, length=I32_MAX), "control", "ignored"),
        (nak_frame(s, term_offset=mid_payload, length=4096), "control", "ignored"),
        (nak_frame(s, term_offset=mid_payload + 32, length=64), "control", "ignored"),
        (nak_frame(s, term_offset=TERM_LENGTH - 32, length=32), "control", "ignored"),
    ]


ATTACKS = {
    "short": short_datagrams,
    "wrong-version": wrong_version,
    "frame-length": bad_frame_lengths,
    "term-offset": bad_term_offsets,
    "past-image-term": past_the_image_term,
    "padding-past-term-end": padding_past_term_end,
    "far-term-ids": far_term_ids,
    "unknown-session-or-stream": unknown_session_and_stream,
    "forged-setup-existing-session": forged_setup_for_live_session,
    "invalid-setup": invalid_setups,
    "control-frames-at-data-endpoint": control_frames_at_data_endpoint,
    "garbage-sm-nak-to-publication": garbage_to_publication,
}

PENDING_SETUP_BUG = (
    "BUG pending-setup expiry: DataPacketDispatcher.on_data_packet passes the endpoint where "
    "Receiver.on_pending_setup expects the dispatcher, so 1 s later Receiver.do_work raises AttributeError "
    "('ReceiveChannelEndpoint' object has no attribute 'remove_pending_setup'; Errors +1, error log) and the "
    "session stays PENDING_SETUP: its data never asks for a SETUP again (1.15.1 re-elicits after 1 s)"
)
PENDING_SETUP_ERROR = "has no attribute 'remove_pending_setup'"
XFAIL: dict[str, str] = {}  # known driver bugs, by attack name (none open)


def error_entries(text: str) -> list[str]:
    """The distinct errors in ``mediadriver errors`` output (ErrorStat format)."""
    return [entry.strip() for entry in text.split("***") if "observations from" in entry]


def setup_requests(datagrams: list[bytes]) -> list[tuple[int, int]]:
    """(session, stream) of each setup-eliciting SM (flag SEND_SETUP, window 0) among ``datagrams``."""
    sms = [
        SM.unpack_from(d) for d in datagrams if len(d) >= 36 and frames.frame_type(d) == frames.HDR_TYPE_SM
    ]
    return [(sm[4], sm[5]) for sm in sms if sm[2] == frames.SEND_SETUP_FLAG and sm[8] == 0]


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=XFAIL[n])) if n in XFAIL else n
        for n in ATTACKS
    ],
)
def test_hostile_datagrams(name, live, request):
    stream = HealthyStream(live)
    try:
        # Some messages first, and a position inside the second term (so "the previous term" exists).
        while stream.pub.position < TERM_LENGTH + TERM_LENGTH // 2:
            stream.send(20)
        wait_for(stream.settled, 5.0, "rcv-hwm = rcv-pos = publication position")
        attack = ATTACKS[name](stream)
        before = {cid: live.counter(cid) for cid in (INVALID_PACKETS, ERRORS)}
        images_before = [image.correlation_id for image in stream.sub.images]
        hwm_before = stream.hwm
        spoof = request.getfixturevalue("spoofer") if any(t == "control" for _, t, _ in attack) else None
        with attacker() as sock:
            sock.settimeout(0.0)
            for datagram, target, _ in attack:
                if target == "data":
                    sock.sendto(datagram, stream.data_address)
                else:  # as if from the subscription's endpoint, the only peer the publication's socket hears
                    spoof.sendto(datagram, stream.data_address, stream.control_address)
            lowest = sum(1 for *_, expect in attack if expect == "invalid")
            highest = sum(1 for *_, expect in attack if expect != "ignored")
            wait_for(
                lambda: live.counter(INVALID_PACKETS) - before[INVALID_PACKETS] >= lowest, 5.0, "invalid"
            )
            time.sleep(SETTLE_S)
            elicited = []
            with contextlib.suppress(BlockingIOError):
                while True:
                    elicited.append(sock.recv(2048))
        invalid = live.counter(INVALID_PACKETS) - before[INVALID_PACKETS]
        assert lowest <= invalid <= highest, (name, invalid, lowest, highest)
        assert live.counter(ERRORS) == before[ERRORS], live.driver.error_log()
        assert live.driver.alive(), live.driver.log()
        assert [image.correlation_id for image in stream.sub.images] == images_before
        assert stream.available == [stream.session_id] and stream.unavailable == []
        assert stream.hwm == hwm_before == stream.pub.position, "a hostile datagram moved rcv-hwm"
        if name == "unknown-session-or-stream":
            # Data of an unknown session of the subscribed stream asks its source for a SETUP (not an EOS) ...
            assert setup_requests(elicited) == [(stream.session_id + 1, stream.stream_id)], elicited
            # ... and asks again for new data once the request is 1 s old (PENDING_SETUPS_TIMEOUT_NS).
            time.sleep(1.3)
            with attacker() as sock:
                sock.sendto(attack[0][0], stream.data_address)
                sock.settimeout(2.0)
                again = [sock.recv(2048)]
            assert setup_requests(again) == [(stream.session_id + 1, stream.stream_id)], again
        # The stream goes on, intact, across more terms.
        stream.send(300)
        wait_for(stream.settled, 5.0, "rcv-hwm = rcv-pos = publication position after the attack")
        assert stream.checker.other_sessions == 0
        assert live.counter(ERRORS) == before[ERRORS], live.driver.error_log()
    finally:
        stream.close()


# ---------------------------------------------------------------------------------------------------------------
# Fuzz: 100,000 random and mutated datagrams beside a healthy stream of 20,000 messages

FUZZ_DATAGRAMS = 100_000
FUZZ_MESSAGES = 20_000
FUZZ_SECONDS = 12.0  # the attack's pace: FUZZ_DATAGRAMS over about this long; the stream is paced along
INTERESTING = (0, 1, -1, 8, 31, 32, 33, 36, 40, 64, 1376, 1408, 4096, 65504, 65535, 65536, TERM_LENGTH - 32,
               2**24, 2**30, I32_MAX, I32_MIN, -32)  # fmt: skip


@dataclass
class Captured:
    """Real frames, as our driver sent them: a publication's SETUP, DATA, PAD and heartbeats (session C) and
    the receiver's SM and NAK for that session."""

    session_id: int
    setup: list[bytes] = field(default_factory=list)
    data: list[bytes] = field(default_factory=list)
    pad: list[bytes] = field(default_factory=list)
    heartbeat: list[bytes] = field(default_factory=list)
    sm: list[bytes] = field(default_factory=list)
    nak: list[bytes] = field(default_factory=list)

    def sort(self, datagram: bytes) -> None:
        """A datagram from the capture publication: heartbeat (32 bytes, frame length 0), PAD or DATA."""
        if len(datagram) == 32 and DATA.unpack_from(datagram)[0] == 0:
            self.heartbeat.append(datagram)
        elif frames.frame_type(datagram) == frames.HDR_TYPE_PAD:
            self.pad.append(datagram)
        elif frames.frame_type(datagram) == frames.HDR_TYPE_DATA:
            self.data.append(datagram)
            offset = 0  # a PAD header ends a datagram: alone, it is what the sender sends from that position
            while offset + 32 <= len(datagram):
                if frames.frame_type(datagram, offset) == frames.HDR_TYPE_PAD:
                    self.pad.append(datagram[offset : offset + 32])
                    break
                step = (DATA.unpack_from(datagram, offset)[0] + 31) & ~31
                if step <= 0:
                    break
                offset += step

    def all(self) -> list[bytes]:
        return self.setup + self.data + self.pad + self.heartbeat + self.sm + self.nak


def _drain(sock: socket.socket, seconds: float) -> list[tuple[bytes, tuple[str, int]]]:
    got = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        try:
            got.append(sock.recvfrom(65536))
        except TimeoutError:
            break
    return got


def capture(live: Live, healthy: HealthyStream, atk: socket.socket) -> Captured:
    """A capture publication (same stream id) sending to our socket, which plays the receiver: its SETUP, DATA
    (incl. a multi-frame datagram and the PAD at a term's end) and heartbeats; then the SETUP replayed at the
    live endpoint makes the receiver send an SM, and a datagram skipped on purpose makes it send a NAK."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as cap:
        cap.bind(("127.0.0.1", 0))
        channel = f"aeron:udp?endpoint=127.0.0.1:{cap.getsockname()[1]}|term-length={TERM_LENGTH}"
        pub = live.aeron.add_publication(channel, healthy.stream_id)
        try:
            got = Captured(pub.session_id)
            (setup, source), *_ = wait_for(
                lambda: _drain(cap, 0.2), WAIT_S, "the capture publication's SETUP"
            )
            assert frames.frame_type(setup) == frames.HDR_TYPE_SETUP
            got.setup.append(setup)
            initial_term_id = SETUP.unpack_from(setup)[7]

            def grant() -> None:  # an SM as a receiver would send it: window 128 KiB from the position
                term_id = initial_term_id + pub.position // TERM_LENGTH
                cap.sendto(
                    frames.encode_status_message(
                        pub.session_id, healthy.stream_id, term_id, pub.position % TERM_LENGTH, 128 * 1024, 99
                    ),
                    source,
                )

            grant()
            wait_for(lambda: pub.is_connected, WAIT_S, "the capture publication to connect")
            k = 0
            while pub.position < TERM_LENGTH + 4096:  # past a term end: the sender sends the PAD header
                if pub.offer(payload(k, (0, 10, 100, 1376, 1377, 3000, 200, 20, 777)[k % 9])) > 0:
                    k += 1
                for data, _ in _drain(cap, 0.0005):
                    got.sort(data)
                grant()
            for data, _ in _drain(cap, 0.4):  # the rest, then heartbeats while idle
                got.sort(data)
        finally:
            pub.close()
    assert got.data and got.pad and got.heartbeat, (len(got.data), len(got.pad), len(got.heartbeat))

    # The receiver's side: the SETUP replayed at the live endpoint makes an image (source: the attacker), which
    # sends SMs to us; the first data skipped, the second one makes a gap, and a NAK for it.
    atk.sendto(got.setup[0], healthy.data_address)
    replies = wait_for(lambda: _drain(atk, 0.3), WAIT_S, "an SM from the receiver")
    later = [d for d in got.data if 0 < DATA.unpack_from(d)[4] < 8192]
    atk.sendto(later[0], healthy.data_address)
    replies += _drain(atk, 0.3)
    for data, _ in replies:
        kind = frames.frame_type(data)
        if kind == frames.HDR_TYPE_SM:
            got.sm.append(data)
        elif kind == frames.HDR_TYPE_NAK:
            got.nak.append(data)
    assert got.sm and got.nak, replies
    return got


class Fuzzer:
    """Random datagrams and mutations of captured frames, from a seeded RNG.

    Two constraints keep the fuzz about parsing rather than about what the protocol cannot stop (module doc):
    a DATA or PAD frame never carries the healthy session's id (it is moved to the capture session), and a
    SETUP for the subscribed stream names the capture session (which already has an image) or the healthy one,
    with a term length of at most 1 MiB, so no further images (and log files) come of valid SETUPs."""

    def __init__(self, seed: int, captured: Captured, healthy_session: int, stream_id: int) -> None:
        self.rng = random.Random(seed)
        self.corpus = captured.all()
        self.capture_session = captured.session_id
        self.healthy_session = healthy_session
        self.stream_id = stream_id

    def random_bytes(self, n: int) -> bytes:
        return self.rng.randbytes(n)

    def datagram(self) -> bytes:
        rng = self.rng
        roll = rng.random()
        if roll < 0.08:
            data = self.random_bytes(rng.choice((rng.randrange(0, 64), rng.randrange(0, 1500))))
        elif roll < 0.16:  # random body behind a plausible common header
            frame_type = rng.choice((0, 1, 2, 3, 4, 5, 6, 0xFFFF, rng.randrange(0x10000)))
            body = self.random_bytes(rng.choice((rng.randrange(0, 48), rng.randrange(0, 1500))))
            data = (
                struct.pack(
                    "<iBBH", rng.choice((len(body) + 8, *INTERESTING)), 0, rng.randrange(256), frame_type
                )
                + body
            )
        else:
            data = bytearray(rng.choice(self.corpus))
            for _ in range(rng.choice((1, 1, 2, 3))):
                data = self.mutate(data)
        return self.guard(bytearray(data))

    def mutate(self, data: bytearray) -> bytearray:
        rng = self.rng
        op = rng.randrange(9)
        if not data:
            return bytearray(self.random_bytes(rng.randrange(1, 64)))
        if op == 0:  # flip a bit
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        elif op == 1:  # a random byte
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif op in (2, 3) and len(data) >= 8:  # an int32 field: an interesting or random value
            offset = (
                rng.randrange(0, len(data) - 3, 4) if rng.random() < 0.8 else rng.randrange(len(data) - 3)
            )
            value = rng.choice(INTERESTING) if op == 2 else rng.randrange(I32_MIN, I32_MAX)
            struct.pack_into("<i", data, offset, value)
        elif op == 4:  # truncate
            del data[rng.randrange(len(data)) :]
        elif op == 5:  # extend
            data += self.random_bytes(rng.randrange(1, 256))
        elif op == 6:  # glue another frame behind it
            data += rng.choice(self.corpus)
        elif op == 7 and len(data) >= 8:  # another type, or version
            if rng.random() < 0.8:
                struct.pack_into(
                    "<H", data, 6, rng.choice((0, 1, 2, 3, 4, 5, 6, 0xFFFF, rng.randrange(0x10000)))
                )
            else:
                data[4] = rng.randrange(1, 256)
        elif op == 8 and len(data) >= 24:  # move term offset / term id (DATA layout) a little or a lot
            field_offset = rng.choice((8, 20))
            (value,) = struct.unpack_from("<i", data, field_offset)
            delta = rng.choice((32, -32, 64, 1408, -1408, 4096, TERM_LENGTH, 1, -1, 2**20))
            struct.pack_into("<i", data, field_offset, max(I32_MIN, min(I32_MAX, value + delta)))
        return data

    def guard(self, data: bytearray) -> bytes:
        if len(data) >= 20:
            frame_type = struct.unpack_from("<H", data, 6)[0]
            session_id, stream_id = struct.unpack_from("<ii", data, 12)
            if (
                frame_type in (frames.HDR_TYPE_DATA, frames.HDR_TYPE_PAD)
                and session_id == self.healthy_session
            ):
                struct.pack_into("<i", data, 12, self.capture_session)
            if frame_type == frames.HDR_TYPE_SETUP and stream_id == self.stream_id:
                if session_id not in (self.capture_session, self.healthy_session):
                    struct.pack_into("<i", data, 12, self.capture_session)
                if len(data) >= 32:
                    (term_length,) = struct.unpack_from("<i", data, 28)
                    if frames.is_valid_term_length(term_length) and term_length > 1024 * 1024:
                        struct.pack_into("<i", data, 28, TERM_LENGTH)
        return bytes(data)


@pytest.mark.slow
def test_fuzz_beside_a_healthy_stream(live):
    """100,000 datagrams (8 % random bytes, 8 % random bodies behind a plausible header, the rest 1-3 mutations
    of captured DATA/PAD/heartbeat/SETUP/SM/NAK frames; seed SEED) at the live receiver endpoint while a
    Python publisher sends 20,000 messages to a Python subscriber on the same channel and port: the stream
    completes intact and in order, and the driver still serves a new client afterwards."""
    started = time.monotonic()
    healthy = HealthyStream(live)
    try:
        with attacker() as atk:
            captured = capture(live, healthy, atk)
            fuzzer = Fuzzer(SEED, captured, healthy.session_id, healthy.stream_id)
            datagrams = [fuzzer.datagram() for _ in range(FUZZ_DATAGRAMS)]
            before = {cid: live.counter(cid) for cid in (INVALID_PACKETS, ERRORS, FLOW_CONTROL_OVER_RUNS)}
            atk.setblocking(False)
            sent = [0]
            stop = threading.Event()

            def attack() -> None:
                chunk = 100
                pace = FUZZ_SECONDS / (FUZZ_DATAGRAMS / chunk)
                t0 = time.monotonic()
                for i in range(0, FUZZ_DATAGRAMS, chunk):
                    if stop.is_set():
                        return
                    for datagram in datagrams[i : i + chunk]:
                        with contextlib.suppress(BlockingIOError):
                            atk.sendto(datagram, healthy.data_address)
                    sent[0] = i + chunk
                    with contextlib.suppress(BlockingIOError, OSError):
                        while atk.recv(65536):  # the receiver's SMs and NAKs to "our" sessions
                            pass
                    delay = t0 + (i // chunk + 1) * pace - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)

            thread = threading.Thread(target=attack, name="fuzz-attacker", daemon=True)
            attack_started = time.monotonic()
            thread.start()
            try:
                deadline = time.monotonic() + 60
                while healthy.checker.count < FUZZ_MESSAGES:
                    # Publish in step with the attack, so the whole stream runs beside it.
                    allowed = (
                        FUZZ_MESSAGES if not thread.is_alive() else sent[0] * FUZZ_MESSAGES // FUZZ_DATAGRAMS
                    )
                    if healthy.published < allowed:
                        healthy.offer_one()
                    if healthy.poll() == 0:
                        if time.monotonic() > deadline:
                            pytest.fail(
                                f"healthy stream stalled under fuzz: published {healthy.published}, received "
                                f"{healthy.checker.count}, attack sent {sent[0]}, rcv-hwm {healthy.hwm}, "
                                f"rcv-pos {healthy.rcv_pos}"
                            )
                        time.sleep(0.0002)
            finally:
                stop.set()
                thread.join(30)
            attack_seconds = time.monotonic() - attack_started
        assert healthy.checker.count == FUZZ_MESSAGES
        assert healthy.checker.last_position == healthy.pub.position
        wait_for(healthy.settled, 5.0, "the healthy image to settle")
        invalid = live.counter(INVALID_PACKETS) - before[INVALID_PACKETS]
        over_runs = live.counter(FLOW_CONTROL_OVER_RUNS) - before[FLOW_CONTROL_OVER_RUNS]
        print(
            f"fuzz: {FUZZ_DATAGRAMS} datagrams ({len(captured.all())} captured frames) beside {FUZZ_MESSAGES} "
            f"messages in {attack_seconds:.1f} s; invalid packets +{invalid}, flow control over runs +{over_runs}"
        )
        assert invalid > FUZZ_DATAGRAMS // 4, invalid
        # No agent raised, but for the known pending-setup bug (test_no_agent_errors, xfail until it is fixed).
        unexpected = [e for e in error_entries(live.driver.error_log()) if PENDING_SETUP_ERROR not in e]
        assert unexpected == [], "\n***\n".join(unexpected)
        assert live.driver.alive(), live.driver.log()
    finally:
        healthy.close()

    # Still serving: a new client, a new stream, a round trip.
    with Aeron.connect(live.driver.aeron_dir, timeout_s=10) as aeron:
        fresh = HealthyStream(Live(live.driver, aeron, [live.stream_id()]))
        fresh.send(100)
        fresh.close()
    assert time.monotonic() - started < 90


def test_no_agent_errors(live):
    """Runs last in the module: after everything above, and after a setup request has timed out (data of an
    unknown session, then 1.2 s), no agent has raised: Errors counter 0, empty distinct error log."""
    stream = HealthyStream(live)
    try:
        with attacker() as sock:
            sock.sendto(data_frame(stream, session_id=stream.session_id + 1), stream.data_address)
        time.sleep(1.2)
        stream.send(50)
    finally:
        stream.close()
    text = live.driver.error_log()
    assert live.counter(ERRORS) == 0, text
    assert error_entries(text) == [], text
