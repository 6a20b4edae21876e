"""A live publisher in a process of its own, for replay-merge and catch-up tests and tools/bench: it starts a
driver (embedded) in ``aeron_dir``, publishes 32-byte messages numbered from 0 on ``channel``/``stream_id`` at
``rate`` messages per second (paced per millisecond, so the rate is continuous), prints ``READY <session id>``
once the publication is connected and ``BURST <count> <seconds>`` after the first ``count`` messages, then goes
on at ``tail_rate`` (default 0: stop) until its stdin closes. Its driver paces multi-destination publications
by the slowest receiver (min flow control): with the default max, a consumer that falls more than the
publisher's term buffer behind the fastest receiver (the archive) loses data for good, which no merge can mend.

    python -m tests.support.live_publisher AERON_DIR CHANNEL STREAM_ID RATE COUNT [TERM_LENGTH [TAIL_RATE]]
"""

from __future__ import annotations

import struct
import sys
import threading
import time
from pathlib import Path

from driver.client import Aeron, ExclusivePublication
from tests.support.embedded import EmbeddedDriver

MESSAGE = struct.Struct("<q24x")  # 32 bytes: 64-byte frames, so every 64th byte of a term is a frame start


def publish(
    publication: ExclusivePublication, first: int, count: int, rate: int, stop: threading.Event
) -> int:
    """Messages ``first`` .. ``first + count - 1`` at ``rate`` per second; the next number to send."""
    per_ms, total = rate / 1000.0, first + count
    sent, start = first, time.monotonic()
    while sent < total and not stop.is_set():
        due = min(total, first + int((time.monotonic() - start) * 1000 * per_ms) + 1)
        while sent < due and not stop.is_set():
            if publication.offer(MESSAGE.pack(sent)) > 0:
                sent += 1
        time.sleep(0.0002)
    return sent


def main(argv: list[str]) -> int:
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
    )
    try:
        with Aeron.connect(aeron_dir) as aeron:
            publication = aeron.add_exclusive_publication(channel, int(stream_id))
            while not publication.is_connected and not stop.is_set():
                time.sleep(0.001)
            print(f"READY {publication.session_id}", flush=True)
            sent = publish(publication, 0, int(count), int(rate), stop)
            print(f"BURST {sent} {publication.position}", flush=True)
            if tail_rate:
                publish(publication, sent, 1 << 62, tail_rate, stop)
            stop.wait()
    finally:
        driver.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
