"""A pyaeron (Aeron 1.53 C client) publisher or subscriber; runs in the Python 3.12 venv of tools/peers.

    pyaeron_peer.py pub AERON_DIR CHANNEL STREAM_ID SECONDS RATE
    pyaeron_peer.py sub AERON_DIR CHANNEL STREAM_ID SECONDS
    pyaeron_peer.py client-id AERON_DIR

The publisher offers message i (8-byte little-endian i, then 56 bytes of i % 251) at RATE per second for
SECONDS, then a message with i = -1 (the end), and prints ``SENT n``. The subscriber checks every message is
the next one, prints ``RECEIVED n`` at the end and exits 0; any gap, corruption, error or a deadline of
SECONDS + 20 exits 1 with the reason. Both print ``READY`` once connected and keep their client open
throughout, so a driver that times a client out ends the run. ``client-id`` connects, prints
``CLIENT_ID n`` and closes.

No import from this repository: this file is the only thing the venv runs.
"""

from __future__ import annotations

import struct
import sys
import time

import pyaeron

MESSAGE_LENGTH = 64
END = -1


def message(i: int) -> bytes:
    return struct.pack("<q", i) + bytes([i % 251]) * (MESSAGE_LENGTH - 8)


def publish(aeron: pyaeron.Aeron, channel: str, stream_id: int, seconds: float, rate: int) -> int:
    publication = aeron.add_publication(channel, stream_id)
    publication.await_connected(timeout=20)
    print("READY", flush=True)
    start = time.monotonic()
    sent = 0
    while (elapsed := time.monotonic() - start) < seconds:
        if sent < elapsed * rate:
            offer(publication, message(sent))
            sent += 1
        else:
            time.sleep(0.001)
    offer(publication, message(END))
    print(f"SENT {sent}", flush=True)
    time.sleep(1.0)  # let the end reach the subscriber before the publication goes
    publication.close()
    return 0


def offer(publication: pyaeron.Publication, payload: bytes) -> None:
    deadline = time.monotonic() + 10
    while publication.offer(payload) is not True:
        if time.monotonic() > deadline:
            raise RuntimeError("offer back-pressured or not connected for 10 s")
        time.sleep(0.0005)


def subscribe(aeron: pyaeron.Aeron, channel: str, stream_id: int, seconds: float) -> int:
    subscription = aeron.add_subscription(channel, stream_id)
    print("READY", flush=True)
    state = {"next": 0, "ended": False, "error": None}

    def on_fragment(buffer: object, header: object) -> None:
        data = bytes(buffer)
        (i,) = struct.unpack_from("<q", data)
        if i == END:
            state["ended"] = True
        elif i != state["next"] or data != message(i):
            state["error"] = (
                state["error"] or f"expected message {state['next']}, got {i} ({len(data)} bytes)"
            )
        else:
            state["next"] = i + 1

    deadline = time.monotonic() + seconds + 20
    while not state["ended"] and state["error"] is None:
        if time.monotonic() > deadline:
            state["error"] = f"no end after {seconds + 20} s; received {state['next']}"
            break
        if subscription.poll(on_fragment, 100) == 0:
            time.sleep(0.001)
    print(f"RECEIVED {state['next']}", flush=True)
    if state["error"] is not None:
        print(f"ERROR {state['error']}", flush=True)
        return 1
    return 0


def main() -> int:
    if sys.argv[1] == "client-id":
        with pyaeron.Aeron(dir=sys.argv[2]) as aeron:
            print(f"CLIENT_ID {aeron.client_id}", flush=True)
        return 0
    role, aeron_dir, channel, stream_id, seconds = sys.argv[1:6]
    with pyaeron.Aeron(dir=aeron_dir) as aeron:
        if role == "pub":
            return publish(aeron, channel, int(stream_id), float(seconds), int(sys.argv[6]))
        return subscribe(aeron, channel, int(stream_id), float(seconds))


if __name__ == "__main__":
    sys.exit(main())
