"""ReplayMerge over UDP (docs/archive.md section 16) under continuous live publishing: a publisher in its own
process (driver A) sends 130 k numbered messages/s, without pause, on a dynamic MDC channel (256 KiB terms);
our archive records it on its own driver (B, ``mediadriver run --archive``, a process of its own as deployed);
a consumer (driver C, in this process) starts three terms behind and must receive every message once, in order,
and end merged on live, the live destination added only within a quarter term of the live position, while live
ran at 100 k msgs/s or more. Then again with 5 % of the DATA that reaches the consumer's driver dropped (the
replay's and, once joined, the live's: the loss generator is a per-driver receive-side setting, and C is the
only driver the replay path ends in), with the unicast NAK retry and retransmit linger at 2 ms instead of
1.15.1's fixed 60 ms (settings on C and B): with 60 ms every lost retransmission stalls the replay's window for
60 ms and a 5 %-lossy replay carried about 2 MB/s, a quarter of the live stream's 8 MB/s, so it could never
catch up (docs/archive.md section 16). The replay is stopped once the consumer's driver provably received live
data; the publisher's driver paces by its slowest receiver, so a consumer that falls behind slows it rather than
losing data for good."""

from __future__ import annotations

import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from driver.archive.client import AeronArchive
from driver.archive.client.replay_merge import ReplayMerge, State
from driver.archive.codecs import SourceLocation
from driver.client import Aeron
from tests.support import EmbeddedDriver, free_port, new_aeron_dir, wait_for

TERM_LENGTH = 256 * 1024  # windows of 128 KiB (term/2 and the default receiver window): see the docstring
FRAME = 64  # the publisher's 32-byte messages
STREAM_ID = 1001
RATE = 130_000
MIN_RATE = 100_000
MERGE_TIMEOUT_S = 10
AFTER_MERGE = 20_000  # messages taken from live after the merge
FAST_LOSS_TIMERS = "2ms"


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
            str(1 << 62),  # never stops until stdin closes
            str(TERM_LENGTH),
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


def stop_publisher(process: subprocess.Popen[str]) -> None:
    process.stdin.close()  # type: ignore[union-attr]
    try:
        process.wait(10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()  # type: ignore[union-attr]


@pytest.mark.slow
@pytest.mark.parametrize("loss_rate", [0.0, 0.05])
def test_consumer_three_terms_behind_merges_with_continuous_live_exactly_once(
    tmp_path: Path, driver_process: Callable[..., object], loss_rate: float
) -> None:
    control = free_port("udp")
    live_channel = f"aeron:udp?control=127.0.0.1:{control}"
    record_channel = f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}|control=127.0.0.1:{control}"
    control_channel = f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}"
    timers = (
        {"nak_unicast_delay_ns": 2_000_000, "retransmit_unicast_linger_ns": 2_000_000} if loss_rate else {}
    )
    driver_process(
        "--archive",
        "--archive-dir",
        str(tmp_path / "archive"),
        f"-Daeron.archive.control.channel={control_channel}",
        f"-Daeron.archive.recording.events.channel=aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        "-Daeron.archive.threading.mode=SHARED",  # one runner: its agents share one interpreter anyway
        *([f"-Daeron.retransmit.unicast.linger={FAST_LOSS_TIMERS}"] if loss_rate else []),
        directory=new_aeron_dir(tmp_path, "b"),
    )
    consumer_driver = EmbeddedDriver(
        new_aeron_dir(tmp_path, "c"),
        receive_data_loss_rate=loss_rate,
        receive_data_loss_seed=7,
        term_buffer_length=TERM_LENGTH,
        **timers,
    )
    publisher = None
    aeron = Aeron.connect(consumer_driver.aeron_dir)
    archive = None
    merge = None
    try:
        archive = AeronArchive.connect(
            aeron,
            control_request_channel=control_channel,
            control_response_channel=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        )
        archive.start_recording(record_channel, STREAM_ID, SourceLocation.REMOTE)
        publisher, session_id = start_publisher(new_aeron_dir(tmp_path, "a"), live_channel)
        wait_for(lambda: archive.list_recordings(0, 10), 10, "the recording")
        (descriptor,) = archive.list_recordings(0, 10)
        assert descriptor.session_id == session_id
        recording_id = descriptor.recording_id
        wait_for(  # past the publisher's start
            lambda: archive.get_recording_position(recording_id) > 16 * TERM_LENGTH, 10, "16 terms recorded"
        )
        began, live_before = time.monotonic(), archive.get_recording_position(recording_id)
        start = (live_before - 3 * TERM_LENGTH) // FRAME * FRAME
        merge = ReplayMerge.open(
            archive,
            recording_id,
            live_destination=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}|control=127.0.0.1:{control}",
            start_position=start,
        )
        received: list[int] = []

        def on_fragment(buffer, offset, length, header) -> None:
            received.append(struct.unpack_from("<q", buffer.get_bytes(offset, 8))[0])

        try:
            merge.run_until_merged(on_fragment, timeout_s=MERGE_TIMEOUT_S, fragment_limit=256)
        except TimeoutError as e:
            rate = (merge.live_position - live_before) / FRAME / (time.monotonic() - began)
            replay_rate = (merge.image_position - start) / FRAME / (time.monotonic() - began)
            raise AssertionError(f"{merge}: live {rate:,.0f} msgs/s, replay {replay_rate:,.0f} msgs/s") from e
        merged_after = time.monotonic() - began
        # The live rate while the merge caught up: the recording follows the publisher within its window.
        live_rate = (archive.get_recording_position(recording_id) - live_before) / FRAME / merged_after
        live = merge.take_subscription()
        target = len(received) + AFTER_MERGE
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
            f"merged after {merged_after:.2f} s at {live_rate:,.0f} msgs/s live: {len(received)} messages, "
            f"live added at {added}, proven at {proven}"
        )
        assert live_rate >= MIN_RATE, f"the publisher sent {live_rate:,.0f} msgs/s while the merge caught up"
        live.close()
    finally:
        if merge is not None:
            merge.close()
        if publisher is not None:
            stop_publisher(publisher)
        if archive is not None:
            archive.close()
        aeron.close()
        consumer_driver.close()
