"""Archive directories are interchangeable between the real 1.15.1 archive and ours (docs/archive.md sections 7, 10
and 12): the same scripted input (exclusive IPC publications with fixed init-term-id, term-id, term-offset,
term-length, mtu and session-id) recorded by each archive in turn gives the same catalog entries (timestamps and
control session/correlation ids masked) and the same segment files, byte for byte; each archive lists, replays
and extends recordings the other one wrote; 1.15.1's CatalogTool reads a directory ours recorded into.

Both archives run standalone on one driver of ours (ArchiveLauncher.java; ``mediadriver archive``), one at a
time, each on fresh channels; our Python archive client drives them.
"""

from __future__ import annotations

import shutil
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from driver.archive.catalog import CATALOG_FILE_NAME, DEFAULT_RECORD_LENGTH, DESCRIPTOR_OFFSET
from driver.archive.client import (
    NULL_POSITION,
    AeronArchive,
    ArchiveClientContext,
    RecordingDescriptor,
    SourceLocation,
)
from driver.archive.codecs import messages
from driver.client import Aeron, ExclusivePublication, RegistrationError
from tests.support.driver_pool import DriverPool
from tests.support.java_archive import archive_channels, start_java_archive
from tests.support.our_archive import start_our_archive
from tests.support.scratch import scratch_dir

pytestmark = [pytest.mark.interop, pytest.mark.slow]

WAIT_S = 15.0
IPC = "aeron:ipc"
TERM = 64 * 1024
SETTINGS = {"aeron.archive.segment.file.length": str(TERM), "aeron.archive.threading.mode": "SHARED"}


@dataclass(frozen=True)
class Script:
    """One scripted recording: an exclusive IPC publication with fixed parameters and its messages."""

    stream_id: int
    init_term_id: int
    term_id: int
    term_offset: int
    mtu: int
    session_id: int
    length: int
    count: int

    @property
    def start_position(self) -> int:
        return (self.term_id - self.init_term_id) * TERM + self.term_offset

    def channel(self, position: int | None = None) -> str:
        """The publication's channel, starting at ``position`` (default: the script's start)."""
        position = self.start_position if position is None else position
        term_id = self.init_term_id + position // TERM
        return (
            f"aeron:ipc?init-term-id={self.init_term_id}|term-id={term_id}|term-offset={position % TERM}"
            f"|term-length={TERM}|mtu={self.mtu}|session-id={self.session_id}"
        )

    def message(self, sequence: int) -> bytes:
        return struct.pack("<iq", self.stream_id, sequence) + bytes(
            (sequence + i) & 0xFF for i in range(self.length - 12)
        )

    def frame_length(self) -> int:
        return (32 + self.length + 31) & ~31

    def stop_position(self, count: int) -> int:
        """Where ``count`` messages end: a frame that does not fit a term's end pads it (docs/logbuffer.md)."""
        position = self.start_position
        for _ in range(count):
            if position % TERM + self.frame_length() > TERM:
                position += TERM - position % TERM
            position += self.frame_length()
        return position


SCRIPTS = (
    # Crosses a term and a segment boundary.
    Script(1101, 5, 5, 0, 1408, 771, 1000, 90),
    # A late start in a later term, negative term ids.
    Script(1102, -9, -7, 10560, 4096, 772, 500, 30),
)
EXTENSION = 10
LINGER_NS = 50_000_000  # scripts reuse session ids: a closed publication goes soon


def wait(predicate: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT_S
    while not (result := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {WAIT_S} s waiting for {what}")
        time.sleep(0.002)
    return result


def publish(publication: ExclusivePublication, script: Script, first: int, count: int) -> None:
    for sequence in range(first, first + count):
        wait(lambda s=sequence: publication.offer(script.message(s)) > 0, f"offer of message {sequence}")


def add_exclusive_publication(aeron: Aeron, channel: str, stream_id: int) -> ExclusivePublication:
    """The publication, once the driver let go of the last one of its session id (closed, lingering briefly)."""

    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            return aeron.add_exclusive_publication(channel, stream_id)
        except RegistrationError as e:
            if "same session id" not in str(e) or time.monotonic() > deadline:
                raise
        time.sleep(LINGER_NS / 1e9)


def record(aeron: Aeron, archive: AeronArchive, script: Script) -> int:
    """Record the script's stream from its first message to its last; the recording id."""
    archive.start_recording(IPC, script.stream_id, SourceLocation.LOCAL)
    with add_exclusive_publication(aeron, script.channel(), script.stream_id) as publication:
        assert publication.position == script.start_position
        (d,) = wait(lambda: archive.list_recordings_for_uri(0, 10, IPC, script.stream_id), "the recording")
        publish(publication, script, 0, script.count)
        target = publication.position
        wait(lambda: archive.get_recording_position(d.recording_id) == target, f"recorded up to {target}")
        archive.stop_recording(IPC, script.stream_id)
        wait(lambda: archive.get_stop_position(d.recording_id) == target, "the stop position")
    return d.recording_id


def replayed(archive: AeronArchive, d: RecordingDescriptor, stream_id: int) -> list[bytes]:
    """Every message of recording ``d``, replayed whole over IPC."""
    received: list[bytes] = []

    def on_fragment(buffer: Any, offset: int, length: int, _header: Any) -> None:
        received.append(bytes(buffer.view[offset : offset + length]))

    with archive.replay(
        d.recording_id, d.start_position, d.stop_position - d.start_position, IPC, stream_id
    ) as subscription:
        position = d.start_position

        def done() -> bool:
            nonlocal position
            subscription.poll(on_fragment, 100)
            if subscription.images:
                position = subscription.images[0].position
            return position >= d.stop_position

        wait(done, f"the replay of recording {d.recording_id} (got {len(received)})")
    return received


@dataclass
class Recorded:
    aeron_dir: Path
    aeron: Aeron
    peers: Any
    java_dir: Path
    our_dir: Path


@pytest.fixture(scope="module")
def recorded(
    archive_java: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Recorded]:
    """The scripts recorded by the real archive into one directory and by ours into another, on our driver."""
    pool = DriverPool()
    with scratch_dir(tmp_path_factory, "archive-files") as base:
        try:
            driver = pool.ours({"aeron.publication.linger.timeout": str(LINGER_NS)})
            aeron = Aeron.connect(driver.aeron_dir)
            try:
                java_dir, our_dir = base / "java", base / "ours"
                for kind, archive_dir in (("java", java_dir), ("ours", our_dir)):
                    with RunningArchive(
                        kind, archive_java, aeron, driver.aeron_dir, archive_dir, base
                    ) as archive:
                        ids = [record(aeron, archive, script) for script in SCRIPTS]
                        assert ids == [0, 1]
                yield Recorded(driver.aeron_dir, aeron, archive_java, java_dir, our_dir)
            finally:
                aeron.close()
        finally:
            problems = pool.close()
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


class RunningArchive:
    """An archive (``kind`` "java" or "ours") on ``archive_dir`` with fresh channels, and a client of it."""

    def __init__(
        self,
        kind: str,
        peers: Any,
        aeron: Aeron,
        aeron_dir: Path,
        archive_dir: Path,
        base: Path,
        settings: dict[str, str] | None = None,
    ) -> None:
        self.kind, self.peers, self.aeron, self.aeron_dir = kind, peers, aeron, aeron_dir
        self.archive_dir, self.base = archive_dir, base
        self.settings = settings or {}

    def __enter__(self) -> AeronArchive:
        props = archive_channels() | SETTINGS | self.settings
        if self.kind == "java":
            self.server: Any = start_java_archive(self.peers, self.aeron_dir, self.archive_dir, props)
        else:
            log = self.base / f"ours-{self.archive_dir.name}.log"
            self.server = start_our_archive(self.aeron_dir, self.archive_dir, props, log)
        try:
            context = ArchiveClientContext.from_sources(properties=self.server.props, environ={})
            self.client = AeronArchive.connect(self.aeron, context=context)
        except BaseException:
            self.server.stop()
            raise
        return self.client

    def __exit__(self, *exc: object) -> None:
        try:
            self.client.close()
        finally:
            self.server.stop()
        errors = self.server.errors()
        assert errors == [], self.server.process.stderr_text()[-4000:]


# -- (d) the same input gives the same files -----------------------------------------------------------------

_DESCRIPTOR = messages.codec(messages.RecordingDescriptor)
MASKED = ("control_session_id", "correlation_id", "start_timestamp", "stop_timestamp")


def masked_catalog(archive_dir: Path) -> bytes:
    data = bytearray((archive_dir / CATALOG_FILE_NAME).read_bytes())
    for recording_id in range(len(SCRIPTS)):
        entry = DEFAULT_RECORD_LENGTH * (recording_id + 1)  # the catalog header takes the first record
        for name in MASKED:
            offset = entry + DESCRIPTOR_OFFSET + _DESCRIPTOR.offsets[name]
            data[offset : offset + 8] = bytes(8)
    return bytes(data)


def test_same_input_same_catalog_and_segments(recorded: Recorded) -> None:
    java, ours = masked_catalog(recorded.java_dir), masked_catalog(recorded.our_dir)
    assert len(java) == len(ours)
    differing = [i for i in range(len(java)) if java[i] != ours[i]]
    assert differing == [], f"catalog bytes differ at {differing[:20]}"
    java_segments = sorted(p.name for p in recorded.java_dir.glob("*.rec"))
    assert java_segments == sorted(p.name for p in recorded.our_dir.glob("*.rec"))
    assert java_segments == ["0-0.rec", "0-1.rec", "1-0.rec"]
    for name in java_segments:
        theirs, mine = (recorded.java_dir / name).read_bytes(), (recorded.our_dir / name).read_bytes()
        assert len(theirs) == len(mine), name
        assert theirs == mine, (
            f"{name}: first difference at {next(i for i in range(len(mine)) if theirs[i] != mine[i])}"
        )


# -- (a), (b) each archive lists, replays and extends the other's recordings ---------------------------------


def check_archive_reads_and_extends(kind: str, recorded: Recorded, source_dir: Path, tmp_path: Path) -> None:
    archive_dir = tmp_path / f"{kind}-on-copy"
    shutil.copytree(source_dir, archive_dir)
    with RunningArchive(
        kind, recorded.peers, recorded.aeron, recorded.aeron_dir, archive_dir, tmp_path
    ) as archive:
        listed = archive.list_recordings(0, 10)
        assert [(d.recording_id, d.stream_id, d.session_id) for d in listed] == [
            (i, s.stream_id, s.session_id) for i, s in enumerate(SCRIPTS)
        ]
        for d, script in zip(listed, SCRIPTS, strict=True):
            assert (d.start_position, d.stop_position) == (
                script.start_position,
                script.stop_position(script.count),
            )
            assert replayed(archive, d, 2001) == [script.message(s) for s in range(script.count)]
        # Extend the first recording from its stop position with 10 more messages.
        script, d = SCRIPTS[0], listed[0]
        channel = script.channel(d.stop_position)
        with add_exclusive_publication(recorded.aeron, channel, script.stream_id) as pub:
            assert pub.position == d.stop_position
            subscription_id = archive.extend_recording(0, IPC, script.stream_id, SourceLocation.LOCAL)
            wait(lambda: archive.get_recording_position(0) == d.stop_position, "the extension")
            publish(pub, script, script.count, EXTENSION)
            target = pub.position
            wait(lambda: archive.get_recording_position(0) == target, "the extension recorded")
            archive.stop_recording_subscription(subscription_id)
            wait(lambda: archive.get_stop_position(0) == target, "the extension stopped")
        assert archive.get_recording_position(0) == NULL_POSITION
        (extended,) = archive.list_recordings(0, 1)
        assert replayed(archive, extended, 2002) == [
            script.message(s) for s in range(script.count + EXTENSION)
        ]


def test_java_archive_lists_replays_and_extends_ours(recorded: Recorded, tmp_path: Path) -> None:
    check_archive_reads_and_extends("java", recorded, recorded.our_dir, tmp_path)


def test_our_archive_lists_replays_and_extends_javas(recorded: Recorded, tmp_path: Path) -> None:
    check_archive_reads_and_extends("ours", recorded, recorded.java_dir, tmp_path)


# -- (c) CatalogTool on our directory ------------------------------------------------------------------------


def test_catalog_tool_reads_our_directory(recorded: Recorded, tmp_path: Path) -> None:
    archive_dir = tmp_path / "copy"
    shutil.copytree(recorded.our_dir, archive_dir)

    def catalog_tool(*args: Any) -> str:
        return recorded.peers.run(
            "io.aeron.archive.CatalogTool", archive_dir, *args, timeout=60.0, check=True
        ).stdout.strip()

    assert catalog_tool("count-entries") == str(len(SCRIPTS))
    assert catalog_tool("max-entries") == str(8 * 1024)
    for recording_id, script in enumerate(SCRIPTS):
        described = catalog_tool("describe", recording_id)
        stop = script.stop_position(script.count)
        for field in (
            f"recordingId={recording_id}",
            f"startPosition={script.start_position}",
            f"stopPosition={stop}",
            f"initialTermId={script.init_term_id}",
            f"segmentFileLength={TERM}",
            f"termBufferLength={TERM}",
            f"mtuLength={script.mtu}",
            f"sessionId={script.session_id}",
            f"streamId={script.stream_id}",
            "strippedChannel='aeron:ipc'",
            "originalChannel='aeron:ipc'",
            f"sourceIdentity='{script.channel()}'",  # an IPC image's source: its publication's channel
        ):
            assert f"|{field}|" in f"{described}|", described


# -- (e) purged entries and a catalog grown online, read by 1.15.1 ------------------------------------------------


def test_java_archive_skips_purged_recordings_in_a_catalog_grown_online(
    recorded: Recorded, tmp_path: Path
) -> None:
    archive_dir = tmp_path / "grown"
    one_entry = {"aeron.archive.max.catalog.entries": "1"}
    with RunningArchive(
        "ours", recorded.peers, recorded.aeron, recorded.aeron_dir, archive_dir, tmp_path, one_entry
    ) as archive:
        assert [record(recorded.aeron, archive, script) for script in SCRIPTS] == [0, 1]
        files = sorted(p.name for p in archive_dir.iterdir() if p.name.startswith(("0-", "0.")))
        assert {"0-0.rec", "0-1.rec", "0.crc"} <= set(files)
        assert archive.purge_recording(0) == len(files)
        wait(lambda: not list(archive_dir.glob("0-*.rec")), "the purged segments to go")
    assert (archive_dir / CATALOG_FILE_NAME).stat().st_size == DEFAULT_RECORD_LENGTH * 3  # grown from 1 to 2
    with RunningArchive(
        "java", recorded.peers, recorded.aeron, recorded.aeron_dir, archive_dir, tmp_path, one_entry
    ) as archive:
        assert [d.recording_id for d in archive.list_recordings(0, 10)] == [1]
        assert archive.list_recording(0) is None
        (d,) = archive.list_recordings(1, 1)
        script = SCRIPTS[1]
        assert replayed(archive, d, 2003) == [script.message(s) for s in range(script.count)]
