#!/usr/bin/env python3
"""UDP throughput: Java StreamingPublisher -> RateSubscriber over aeron:udp on loopback, ours vs the Java driver.

32-byte messages, or 1 KiB ones with ``--length 1024``. Same harness, clients and method as
``ipc_throughput.py`` -- one driver per run (ours, or the Aeron 1.15.1 Java MediaDriver in SHARED threading mode),
RateSubscriber then StreamingPublisher on ``aeron:udp?endpoint=localhost:<port>`` with a free UDP port picked
per run, throughput over the whole seconds between the subscriber's first nonzero and last increasing rate
lines, driver CPU from /proc over the same window, medians over ``--runs``, ratio = ours / java (goal >= 1.0).
Here the driver carries every byte: its sender and receiver agents move the frames through the socket.

While our driver does not implement UDP its clients get a RegistrationException ("... not supported ...");
the run is then recorded as ``"ours_error": "unsupported: ..."`` (ratio null, exit code 2) and the Java side is
still measured.

Exit code: 0 goal met, 1 goal missed, 2 no ratio (a driver failed or does not support UDP, or no peer).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    BenchError,
    compare,
    driver_props,
    emit,
    free_udp_port,
    host_info,
    measure_stream,
    progress,
    require_peers,
    run_main,
)
from ipc_throughput import parse_stream_args, throughput_result

DEFAULT_MESSAGES = 5_000_000  # ~25 s through the Java driver on a busy 2-core box (~200 k msgs/s)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args = parse_stream_args(parser, DEFAULT_MESSAGES, timeout=300.0)
    props = driver_props(args)
    try:
        peers = require_peers()
    except BenchError as exc:
        progress(str(exc))
        emit({"bench": "udp_throughput", "error": str(exc)})
        return 2

    def measure(kind: str) -> dict[str, Any]:
        channel = f"aeron:udp?endpoint=localhost:{free_udp_port()}"
        return measure_stream(kind, channel, args.messages, args.length, args.timeout, props[kind], peers)

    host = host_info()
    results = compare(measure, args.runs, args.order, label="udp_throughput")
    result, code = throughput_result(
        "udp_throughput", args, results, {"channel": "aeron:udp?endpoint=localhost:<free port>"}, host
    )
    emit(result)
    return code


if __name__ == "__main__":
    run_main(main)
