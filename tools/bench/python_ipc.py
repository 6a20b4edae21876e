#!/usr/bin/env python3
"""Python publisher -> Python subscriber over ``aeron:ipc`` through our driver, against pyzmq PUB/SUB over
``ipc://`` in the same run (goal: at least as fast as pyzmq).

Each side runs in its own process. The subscriber times from its first to its last message, so process
start-up and connection set-up are left out; throughput = messages / that time. pyzmq runs with unlimited
high-water marks (no message is dropped), so both sides deliver every message. Prints one JSON line per
message size with both rates and ours/pyzmq.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.children import terminate

ROOT = Path(__file__).resolve().parents[2]

CHANNEL = "aeron:ipc"
STREAM_ID = 1001


def _aeron_subscriber(aeron_dir: str, count: int, ready, result) -> None:
    from driver.client import Aeron

    with Aeron.connect(aeron_dir=aeron_dir) as aeron:
        subscription = aeron.add_subscription(CHANNEL, STREAM_ID)
        ready.set()

        def on_fragment(buffer, offset, length, header) -> None:
            pass

        received = 0
        poll = subscription.poll
        while received == 0:
            received += poll(on_fragment, 256)
        start = time.perf_counter()
        while received < count:
            received += poll(on_fragment, 256)
        result.put(("aeron", received, time.perf_counter() - start))


def _aeron_publisher(aeron_dir: str, count: int, length: int) -> None:
    from driver.client import Aeron

    payload = bytes(length)
    with Aeron.connect(aeron_dir=aeron_dir) as aeron:
        publication = aeron.add_publication(CHANNEL, STREAM_ID)
        while not publication.is_connected:
            time.sleep(0.001)
        offer = publication.offer
        sent = 0
        while sent < count:
            if offer(payload) > 0:
                sent += 1
        time.sleep(0.5)  # keep the publication until the subscriber has read it all


def _zmq_subscriber(endpoint: str, count: int, ready, result) -> None:
    import zmq

    context = zmq.Context()
    socket = context.socket(zmq.SUB)
    socket.setsockopt(zmq.RCVHWM, 0)
    socket.setsockopt(zmq.SUBSCRIBE, b"")
    socket.connect(endpoint)
    ready.set()
    recv = socket.recv
    recv()
    start = time.perf_counter()
    for _ in range(count - 1):
        recv()
    result.put(("zmq", count, time.perf_counter() - start))
    socket.close(0)
    context.term()


def _zmq_publisher(endpoint: str, count: int, length: int, go) -> None:
    import zmq

    context = zmq.Context()
    socket = context.socket(zmq.PUB)
    socket.setsockopt(zmq.SNDHWM, 0)
    socket.bind(endpoint)
    go.wait()
    time.sleep(0.5)  # PUB/SUB "slow joiner": let the subscription reach the publisher
    payload = bytes(length)
    send = socket.send
    for _ in range(count):
        send(payload)
    socket.close(linger=-1)
    context.term()


def _run(target_pub, pub_args, target_sub, sub_args, timeout_s: float) -> float:
    ctx = mp.get_context("spawn")
    ready, result = ctx.Event(), ctx.Queue()
    subscriber = ctx.Process(target=target_sub, args=(*sub_args, ready, result))
    subscriber.start()
    if not ready.wait(30):
        subscriber.kill()
        raise RuntimeError("subscriber did not start")
    extra = (ready,) if target_pub is _zmq_publisher else ()
    publisher = ctx.Process(target=target_pub, args=(*pub_args, *extra))
    publisher.start()
    try:
        _, received, elapsed = result.get(timeout=timeout_s)
        return received / elapsed
    finally:
        for process in (publisher, subscriber):
            process.join(5)
            if process.is_alive():
                process.kill()
                process.join()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="32,1024", help="message lengths (comma list)")
    parser.add_argument("--messages", type=int, default=1_000_000, help="messages per run (32 B)")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()

    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    work = Path(tempfile.mkdtemp(prefix="aeron-bench-python-", dir=base))
    aeron_dir = work / "aeron"
    driver = subprocess.Popen(
        [sys.executable, "-m", "driver", "run", "--dir", str(aeron_dir)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not (aeron_dir / "cnc.dat").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)
        for length in (int(s) for s in args.sizes.split(",")):
            count = args.messages if length <= 64 else max(args.messages // 4, 1000)
            ours = _run(
                _aeron_publisher,
                (str(aeron_dir), count, length),
                _aeron_subscriber,
                (str(aeron_dir), count),
                args.timeout,
            )
            endpoint = f"ipc://{work}/zmq-{length}"
            zmq_rate = _run(
                _zmq_publisher, (endpoint, count, length), _zmq_subscriber, (endpoint, count), args.timeout
            )
            print(
                json.dumps(
                    {
                        "bench": "python_ipc",
                        "length": length,
                        "messages": count,
                        "ours_msgs_per_s": round(ours),
                        "pyzmq_msgs_per_s": round(zmq_rate),
                        "ratio": round(ours / zmq_rate, 3),
                        "goal": ">= 1.0",
                    }
                ),
                flush=True,
            )
    finally:
        terminate(driver, 10)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
