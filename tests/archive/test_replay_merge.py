"""ReplayMerge over UDP (docs/archive.md section 16): a live publisher in its own process (driver A) at 100 k
messages/s on a dynamic MDC channel, recorded by our archive (driver B), merged by a consumer (driver C) that
starts three terms behind: every message once, in order, ending merged on live, also with 5 % of the DATA that
reaches the consumer's driver dropped (the replay's and, once joined, the live's: the loss generator is a
per-driver receive-side setting, so it sits on the consumer's driver, the only one the replay path ends in).
The replay is stopped only once the image provably holds live data (docs/archive.md section 16); the publisher's
driver paces by its slowest receiver, so a consumer that falls behind is slowed rather than left a gap."""

from __future__ import annotations

import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from driver.archive.archive_context import ArchiveContext
from driver.archive.client import AeronArchive
from driver.archive.client.replay_merge import ReplayMerge, State
from driver.archive.codecs import SourceLocation
from driver.archive_launcher import connect_embedded
from driver.client import Aeron
from tests.support import EmbeddedDriver, free_port, new_aeron_dir, wait_for

TERM_LENGTH = 64 * 1024
FRAME = 64  # the publisher's 32-byte messages
STREAM_ID = 1001
RATE = 100_000
COUNT = 200_000  # a 2 s burst at RATE (as far as this machine keeps up), then TAIL_RATE
TAIL_RATE = 2_000


def start_publisher(aeron_dir: Path, channel: str) -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.live_publisher",
            str(aeron_dir),
            channel,
            str(STREAM_ID),
            str(RATE),
            str(COUNT),
            str(TERM_LENGTH),
            str(TAIL_RATE),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("READY"), line
    return process, int(line.split()[1])


@pytest.mark.parametrize("loss_rate", [0.0, 0.05])
def test_consumer_three_terms_behind_merges_with_live_exactly_once(tmp_path: Path, loss_rate: float) -> None:
    control = free_port("udp")
    live_channel = f"aeron:udp?control=127.0.0.1:{control}"
    record_channel = f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}|control=127.0.0.1:{control}"
    archive_ctx = ArchiveContext(
        archive_dir=str(tmp_path / "archive"),
        control_channel=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        recording_events_channel=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        threading_mode="SHARED",
    )
    archive_driver = EmbeddedDriver(
        new_aeron_dir(tmp_path, "b"),
        on_created=lambda d: connect_embedded(d, archive_ctx),
        term_buffer_length=TERM_LENGTH,
    )
    consumer_driver = EmbeddedDriver(
        new_aeron_dir(tmp_path, "c"),
        receive_data_loss_rate=loss_rate,
        receive_data_loss_seed=7,
        term_buffer_length=TERM_LENGTH,
    )
    publisher = None
    aeron = Aeron.connect(consumer_driver.aeron_dir)
    archive = None
    merge = None
    try:
        archive = AeronArchive.connect(
            aeron,
            control_request_channel=archive_ctx.control_channel,
            control_response_channel=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        )
        archive.start_recording(record_channel, STREAM_ID, SourceLocation.REMOTE)
        publisher, session_id = start_publisher(new_aeron_dir(tmp_path, "a"), live_channel)
        wait_for(lambda: archive.list_recordings(0, 10), 10, "the recording")
        (descriptor,) = archive.list_recordings(0, 10)
        assert descriptor.session_id == session_id
        recording_id = descriptor.recording_id
        wait_for(
            lambda: archive.get_recording_position(recording_id) > 4 * TERM_LENGTH, 10, "4 terms recorded"
        )
        start = (archive.get_recording_position(recording_id) - 3 * TERM_LENGTH) // FRAME * FRAME
        merge = ReplayMerge.open(
            archive,
            recording_id,
            live_destination=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}|control=127.0.0.1:{control}",
            start_position=start,
        )
        received: list[int] = []

        def on_fragment(buffer, offset, length, header) -> None:
            received.append(struct.unpack_from("<q", buffer.get_bytes(offset, 8))[0])

        merge.run_until_merged(on_fragment, timeout_s=25)
        live = merge.take_subscription()
        target = len(received) + 2_000
        deadline = time.monotonic() + 10
        while len(received) < target and time.monotonic() < deadline:
            if live.poll(on_fragment, 256) == 0:
                time.sleep(0.0001)
        first = start // FRAME
        assert received[0] == first
        assert received == list(range(first, first + len(received))), "a gap, a duplicate or a reordering"
        assert len(received) >= target
        states = [e.state for e in merge.trace if e.action == "enter"]
        assert states == [
            State.RESOLVE_REPLAY_PORT,
            State.GET_RECORDING_POSITION,
            State.REPLAY,
            State.CATCHUP,
            State.ATTEMPT_LIVE_JOIN,
            State.STOP_REPLAY,
            State.MERGED,
        ]
        (added,) = [e for e in merge.trace if e.action == "add_live"]
        # The answer is older than the image position beside it: the replay may have moved past it since.
        assert added.live_position - added.image_position <= TERM_LENGTH // 4, added
        (proven,) = [e for e in merge.trace if e.action == "live_proven"]
        assert merge.live_join_position > proven.live_position, proven
        assert merge.counter is not None and merge.counter.get() == State.MERGED
        print(
            f"merged: {len(received)} messages, live added at {added}, proven at {proven} ({merge.live_join_position})"
        )
        live.close()
    finally:
        if merge is not None:
            merge.close()
        if publisher is not None:
            publisher.stdin.close()  # type: ignore[union-attr]
            publisher.wait(10)
            publisher.stdout.close()  # type: ignore[union-attr]
        if archive is not None:
            archive.close()
        aeron.close()
        consumer_driver.close()
        archive_driver.close()
        archive_driver.attached.close()
