"""A 1.15.1 ``AeronArchive`` beside a busy client, on the real 1.15.1 archive (Java driver) and on ours
(docs/archive.md section 12): with a response stream of its own it sees nothing unexpected; sharing the busy
client's response channel and stream it loses answers and times out, on both archives alike.

Each control session answers on an exclusive publication of its own (1.15.1's ArchiveConductor does the same),
so a shared response subscription has one image per session. 1.15.1's ControlResponsePoller returns BREAK after
every fragment but does not stop once it has captured a response, so ``Subscription.controlledPoll`` goes on to
the next image and the next fragment overwrites what was captured: when the client's own image comes first and
another session's image holds an answer too, its own answer is consumed and lost (Aeron 1.16.0 stopped the poll
once a response is captured). The bystander (tests/archive/java/ArchiveBystander.java) sleeps between questions,
so the busy client's answers pile up on their image meanwhile and nearly every question of the shared one meets
them.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from driver.archive.client import AeronArchive, ArchiveClientContext, SourceLocation
from driver.client import Aeron
from tests.support import free_port, wait_for

pytestmark = [pytest.mark.interop, pytest.mark.slow]

STREAM_ID = 9001


def test_a_1_15_1_client_needs_a_response_stream_of_its_own(
    java_or_our_archive: Any, archive_java: Any
) -> None:
    server = java_or_our_archive
    context = ArchiveClientContext.from_sources(properties=server.props, environ={})
    aeron = Aeron.connect(server.aeron_dir)
    busy = AeronArchive.connect(aeron, context=context)
    bystanders = []
    try:
        # Recording 0, which the bystanders ask about.
        publication = aeron.add_exclusive_publication("aeron:ipc", STREAM_ID)
        busy.start_recording("aeron:ipc", STREAM_ID, SourceLocation.LOCAL)
        wait_for(lambda: busy.list_recordings(0, 1), 10, "the recording")
        (recording,) = busy.list_recordings(0, 1)
        assert recording.recording_id == 0
        busy.stop_recording("aeron:ipc", STREAM_ID)
        publication.close()

        common = {
            "aeron.dir": str(server.aeron_dir),
            "aeron.archive.control.channel": context.control_request_channel,
            "aeron.archive.control.response.stream.id": context.control_response_stream_id,
            "aeron.archive.message.timeout": "2s",
            "bystander.duration.ms": 2000,
            "bystander.interval.ms": 50,
        }
        for response_channel in (
            context.control_response_channel,  # the busy client's
            f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        ):
            bystander = archive_java.spawn(
                "ArchiveBystander",
                props={**common, "aeron.archive.control.response.channel": response_channel},
            )
            bystanders.append(bystander)
        for bystander in bystanders:
            bystander.read_until("BYSTANDER CONNECTED", 30)
        # The busy client asks and asks (each answer polled) until both bystanders have exited.
        deadline = time.monotonic() + 30
        while any(b.proc.poll() is None for b in bystanders) and time.monotonic() < deadline:
            busy.get_recording_position(0)
        outcomes = [b.read_until(r"BYSTANDER (OK|FAIL)", 10)[-1] for b in bystanders]
        shared, own = outcomes
        assert own.startswith("BYSTANDER OK"), own
        assert shared.startswith("BYSTANDER FAIL") and "TimeoutException: awaiting response" in shared, shared
    finally:
        for bystander in bystanders:
            bystander.stop()
        busy.close()
        aeron.close()
