"""A live publisher in a process of its own, for replay-merge tests and tools/bench: it starts a driver
(embedded) in ``aeron_dir``, publishes 32-byte messages numbered from 0 (int64 little endian, then zeros) on
``channel``/``stream_id`` at ``rate`` messages per second (paced per millisecond, so the rate is continuous),
prints ``READY <session id>`` once the publication is connected and ``BURST <count> <position>`` after the first
``count`` messages, then goes on at ``tail_rate`` (default 0: stop) until its stdin closes.

Each millisecond's messages go into the term as one block of ready-made frames (``offer_block``, as a replay
writes them: docs/archive.md section 15), the frames built with numpy: one Python ``offer`` per message costs
about 4 us, which alone would take half a shared core at 100 k messages/s; subscribers see ordinary
unfragmented DATA frames. Its driver paces multi-destination publications by the slowest receiver (min flow
control): with the default max, a consumer that falls more than the publisher's term buffer behind the fastest
receiver (the archive) loses data for good, which no merge can mend.

    python -m harness.live_publisher AERON_DIR CHANNEL STREAM_ID RATE COUNT [TERM_LENGTH [TAIL_RATE]] [NAME=INT ...]

``NAME=INT`` arguments are integer settings of its driver (DriverContext field names, e.g.
``retransmit_unicast_linger_ns=2000000``).
"""

from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path

import numpy as np

from driver.client import Aeron, ExclusivePublication
from driver.protocol.frames import CURRENT_VERSION, HDR_TYPE_DATA, HEADER_LENGTH, UNFRAGMENTED
from driver.util.bit_util import to_int32
from harness.embedded import EmbeddedDriver

MESSAGE_LENGTH = 32
FRAME_LENGTH = HEADER_LENGTH + MESSAGE_LENGTH  # 64: every 64th byte of a term is a frame start
FRAME = np.dtype(
    [
        ("frame_length", "<i4"),
        ("version", "u1"),
        ("flags", "u1"),
        ("type", "<u2"),
        ("term_offset", "<i4"),
        ("session_id", "<i4"),
        ("stream_id", "<i4"),
        ("term_id", "<i4"),
        ("reserved_value", "<i8"),
        ("sequence", "<i8"),
        ("zeros", "V24"),
    ]
)
assert FRAME.itemsize == FRAME_LENGTH


class BlockPublisher:
    """Numbered messages into an exclusive publication, a run of frames per call."""

    def __init__(self, publication: ExclusivePublication) -> None:
        if publication.position % FRAME_LENGTH or publication.term_length % FRAME_LENGTH:
            raise ValueError("the publication must stand at a frame boundary of 64-byte frames")
        self.publication = publication
        self.frames_per_term = publication.term_length // FRAME_LENGTH
        term = np.zeros(self.frames_per_term, FRAME)
        term["frame_length"] = FRAME_LENGTH
        term["version"] = CURRENT_VERSION
        term["flags"] = UNFRAGMENTED
        term["type"] = HDR_TYPE_DATA
        term["term_offset"] = np.arange(self.frames_per_term, dtype=np.int32) * FRAME_LENGTH
        term["session_id"] = publication.session_id
        term["stream_id"] = publication.stream_id
        self._term = term
        self._initial_term_id = publication.initial_term_id
        self._shift = publication.term_length.bit_length() - 1

    def offer(self, first: int, count: int) -> int:
        """Messages ``first`` .. at most ``first + count - 1``, up to the term's end and the publication
        limit; how many went in (0 under back pressure)."""
        publication = self.publication
        position = publication.position
        if position < 0:
            return 0
        index = (position & (publication.term_length - 1)) // FRAME_LENGTH
        count = min(count, self.frames_per_term - index)
        frames = self._term[index : index + count]
        frames["term_id"] = to_int32(self._initial_term_id + (position >> self._shift))
        frames["sequence"] = np.arange(first, first + count, dtype=np.int64)
        block = bytearray(frames.tobytes())
        result = publication.offer_block(block, len(block), len(block))
        if result < position:  # a code: back pressure, rotation (ADMIN_ACTION) or closed
            return 0
        return (result - position) // FRAME_LENGTH


def publish(publisher: BlockPublisher, first: int, count: int, rate: int, stop: threading.Event) -> int:
    """Messages ``first`` .. ``first + count - 1`` at ``rate`` per second; the next number to send."""
    per_s, total = float(rate), first + count
    sent, start = first, time.monotonic()
    while sent < total and not stop.is_set():
        due = min(total, first + int((time.monotonic() - start) * per_s) + 1)
        while sent < due and not stop.is_set():
            taken = publisher.offer(sent, due - sent)
            sent += taken
            if not taken:
                time.sleep(0.0001)
        time.sleep(0.001)
    return sent


_SETTING = re.compile(r"([a-z_]+)=(-?\d+)")


def main(argv: list[str]) -> int:
    settings = {m[1]: int(m[2]) for arg in argv if (m := _SETTING.fullmatch(arg))}
    argv = [arg for arg in argv if not _SETTING.fullmatch(arg)]
    aeron_dir, channel, stream_id, rate, count = argv[:5]
    term_length = int(argv[5]) if len(argv) > 5 else 64 * 1024
    tail_rate = int(argv[6]) if len(argv) > 6 else 0
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    driver = EmbeddedDriver(
        Path(aeron_dir),
        dir_delete_on_start=True,
        term_buffer_length=term_length,
        multicast_flow_control="min",
        **settings,
    )
    try:
        with Aeron.connect(aeron_dir) as aeron:
            publication = aeron.add_exclusive_publication(channel, int(stream_id))
            while not publication.is_connected and not stop.is_set():
                time.sleep(0.001)
            print(f"READY {publication.session_id}", flush=True)
            publisher = BlockPublisher(publication)
            sent = publish(publisher, 0, int(count), int(rate), stop)
            print(f"BURST {sent} {publication.position}", flush=True)
            if tail_rate:
                publish(publisher, sent, 1 << 62, tail_rate, stop)
            stop.wait()
    finally:
        driver.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
