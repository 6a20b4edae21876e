"""A pyaeron (Aeron 1.53 C client) publisher or subscriber; runs in the Python 3.12 venv harness/install.py makes.

    pyaeron_peer.py pub AERON_DIR CHANNEL STREAM_ID SECONDS RATE
    pyaeron_peer.py sub AERON_DIR CHANNEL STREAM_ID SECONDS
    pyaeron_peer.py client-id AERON_DIR
    pyaeron_peer.py rsp-server AERON_DIR REQUEST_CHANNEL RESPONSE_CONTROL STREAM_ID COUNT
    pyaeron_peer.py rsp-client AERON_DIR REQUEST_CHANNEL RESPONSE_CONTROL STREAM_ID COUNT

The publisher offers message i (8-byte little-endian i, then 56 bytes of i % 251) at RATE per second for
SECONDS, then a message with i = -1 (the end), and prints ``SENT n``. The subscriber checks every message is
the next one, prints ``RECEIVED n`` at the end and exits 0; any gap, corruption, error or a deadline of
SECONDS + 20 exits 1 with the reason. Both print ``READY`` once connected and keep their client open
throughout, so a driver that times a client out ends the run. ``client-id`` connects, prints
``CLIENT_ID n`` and closes.

The response channel pair (request on STREAM_ID, answers on STREAM_ID + 1): ``rsp-client`` opens a response
subscription (``control-mode=response|control=RESPONSE_CONTROL``), then a request publication naming it by
``response-correlation-id``, and sends COUNT requests one by one, each awaiting its answer; it prints
``ANSWERED n``. ``rsp-server`` subscribes to REQUEST_CHANNEL, prints ``IMAGE <session id>`` when the
client's request stream arrives and reads that image's correlation id from stdin (pyaeron does not expose
it; the test reads it from the driver's rcv-hwm counter), then answers each request over a response
publication (``response-correlation-id=<that id>``) and prints ``ANSWERED n`` after COUNT answers.

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


def request(i: int) -> bytes:
    return b"request %d" % i


def answer(data: bytes) -> bytes:
    return b"answer to " + data


def poll_until(subscription: pyaeron.Subscription, handler: object, done: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError(f"no {what} within {seconds} s")
        if subscription.poll(handler, 10) == 0:
            time.sleep(0.001)


def response_server(aeron: pyaeron.Aeron, channel: str, control: str, stream_id: int, count: int) -> int:
    requests = aeron.add_subscription(channel, stream_id)
    print("READY", flush=True)
    poll_until(requests, lambda b, h: None, lambda: requests.image_count > 0, 30, "request stream")
    image = requests.image_at_index(0)
    print(f"IMAGE {image.session_id}", flush=True)
    image_correlation_id = int(sys.stdin.readline())
    answers = aeron.add_publication(
        f"aeron:udp?control-mode=response|control={control}|response-correlation-id={image_correlation_id}",
        stream_id + 1,
    )
    answers.await_connected(timeout=20)
    answered = [0]

    def on_request(buffer: object, header: object) -> None:
        offer(answers, answer(bytes(buffer)))
        answered[0] += 1

    poll_until(requests, on_request, lambda: answered[0] >= count, 60, f"{count} requests")
    print(f"ANSWERED {answered[0]}", flush=True)
    time.sleep(1.0)  # let the last answer reach the client before the publication goes
    return 0


def response_client(aeron: pyaeron.Aeron, channel: str, control: str, stream_id: int, count: int) -> int:
    # The C client numbers its commands from one counter: the subscription takes the id after this one.
    subscription_id = aeron.next_correlation_id() + 1
    answers = aeron.add_subscription(f"aeron:udp?control-mode=response|control={control}", stream_id + 1)
    requests = aeron.add_publication(f"{channel}|response-correlation-id={subscription_id}", stream_id)
    requests.await_connected(timeout=20)
    print("READY", flush=True)
    received: list[bytes] = []

    def on_answer(buffer: object, header: object) -> None:
        received.append(bytes(buffer))

    for i in range(count):
        offer(requests, request(i))
        poll_until(answers, on_answer, lambda n=i: len(received) > n, 30 if i == 0 else 10, f"answer {i}")
        if received[i] != answer(request(i)):
            print(f"ERROR answer {i} is {received[i]!r}", flush=True)
            return 1
    print(f"ANSWERED {len(received)}", flush=True)
    return 0


def main() -> int:
    if sys.argv[1] == "client-id":
        with pyaeron.Aeron(dir=sys.argv[2]) as aeron:
            print(f"CLIENT_ID {aeron.client_id}", flush=True)
        return 0
    if sys.argv[1] in ("rsp-server", "rsp-client"):
        role, aeron_dir, channel, control, stream_id, count = sys.argv[1:7]
        serve = response_server if role == "rsp-server" else response_client
        with pyaeron.Aeron(dir=aeron_dir) as aeron:
            return serve(aeron, channel, control, int(stream_id), int(count))
    role, aeron_dir, channel, stream_id, seconds = sys.argv[1:6]
    with pyaeron.Aeron(dir=aeron_dir) as aeron:
        if role == "pub":
            return publish(aeron, channel, int(stream_id), float(seconds), int(sys.argv[6]))
        return subscribe(aeron, channel, int(stream_id), float(seconds))


if __name__ == "__main__":
    sys.exit(main())
