#!/usr/bin/env python3
"""Receive path micro-benchmark: ``ReceiveBatch`` (one recvmmsg per up to N datagrams, native) against a
``socket.recvfrom_into`` loop, draining the same loopback socket.

Method: each round a sender fills the receiver's socket with ``--burst`` datagrams of ``--length`` bytes
(SO_RCVBUF 64 MiB so none is dropped), then the timed part drains it until it would block. Only the drain is
timed. Variants: ``recvfrom_into`` (one syscall and one exception-free call per datagram, the exception at
the end), ``batch`` (recvmmsg into slots, no per-datagram Python work), ``batch+data`` (also makes the
zero-copy ``data(i)`` view of each datagram, what a receiver does). Prints progress to stderr and one JSON
line (medians over ``--rounds`` x ``--repeats``) to stdout; exit 0 when ``batch+data`` beats the Python
loop, 1 otherwise. Design rule 10: keep a benchmark that shows the gain of moving code to C.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import time

from driver.media.udp_batch import ReceiveBatch


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=160, help="datagram length in bytes (default 160)")
    parser.add_argument("--burst", type=int, default=2000, help="datagrams queued per round")
    parser.add_argument("--rounds", type=int, default=50, help="rounds per measurement")
    parser.add_argument("--repeats", type=int, default=5, help="measurements per variant (median taken)")
    parser.add_argument("--batch", type=int, default=64, help="ReceiveBatch max_messages")
    args = parser.parse_args()

    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
    receiver.bind(("127.0.0.1", 0))
    receiver.setblocking(False)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.connect(receiver.getsockname())
    payload = bytes(args.length)
    fd = receiver.fileno()
    batch = ReceiveBatch(args.batch, max(2048, (args.length + 31) // 32 * 32))
    scratch = memoryview(bytearray(65536))

    def fill() -> None:
        for _ in range(args.burst):
            sender.send(payload)

    def python_loop() -> int:
        count = 0
        while True:
            try:
                receiver.recvfrom_into(scratch)
            except BlockingIOError:
                return count
            count += 1

    def batch_only() -> int:
        count = 0
        while n := batch.receive(fd):
            count += n
        return count

    def batch_data() -> int:
        count = 0
        while n := batch.receive(fd):
            for i in range(n):
                batch.data(i)
            count += n
        return count

    variants = {"recvfrom_into": python_loop, "batch": batch_only, "batch+data": batch_data}
    rates: dict[str, list[float]] = {name: [] for name in variants}
    for repeat in range(args.repeats):
        for name, drain in variants.items():
            received = 0
            elapsed = 0.0
            for _ in range(args.rounds):
                fill()
                start = time.perf_counter()
                received += drain()
                elapsed += time.perf_counter() - start
            rates[name].append(received / elapsed)
            print(f"repeat {repeat} {name}: {received / elapsed / 1e6:.3f} M datagrams/s", file=sys.stderr)
    batch.close()
    receiver.close()
    sender.close()

    medians = {name: statistics.median(values) for name, values in rates.items()}
    result = {
        "benchmark": "udp_recv_batch",
        "length": args.length,
        "batch": args.batch,
        "datagrams_per_s": {name: round(value) for name, value in medians.items()},
        "gain_batch": round(medians["batch"] / medians["recvfrom_into"], 2),
        "gain_batch_data": round(medians["batch+data"] / medians["recvfrom_into"], 2),
    }
    print(json.dumps(result))
    return 0 if result["gain_batch_data"] > 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
