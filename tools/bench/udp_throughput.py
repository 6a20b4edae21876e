#!/usr/bin/env python3
"""UDP throughput at steady state: Java StreamingPublisher -> RateSubscriber over aeron:udp on loopback.

Method (tools/bench/steady.py): per-second rates over ``--seconds`` (default 10) after dropping ``--warmup``
(default 2) whole seconds, which are reported apart as the cold start; medians of ``--runs`` (default 3) per
setup and start order, the setups rotated from run to run; both start orders (the subscriber first, or both
clients at once); driver CPU over the window, also per million messages. A free UDP port per measurement.

Setups: ``ours``, the Java driver in SHARED (``java``, the reference) and in DEDICATED (``java-dedicated``);
with ``--setups ours>java,java>ours,java>java`` (or ``--peer``) two drivers, one per client, to compare ours
against a Java peer with two Java drivers. Goals: ours >= 1.5x Java SHARED; ours with a Java peer >= 1.0x two
Java drivers.

    .venv/bin/python -m tools.bench.udp_throughput                      # 32 B, ~5 min
    .venv/bin/python -m tools.bench.udp_throughput --length 1024
    .venv/bin/python -m tools.bench.udp_throughput --peer --orders together
    .venv/bin/python -m tools.bench.udp_throughput --runs 1 --seconds 5 --orders together   # quick look

Exit code: 0 goals met, 1 a goal missed, 2 no ratio (a driver failed or no peer).
"""

from __future__ import annotations

import sys

from tools.bench.harness import free_udp_port
from tools.bench.report import run_main
from tools.bench.steady import PEER_SETUPS, SINGLE_SETUPS, steady_main


def main() -> int:
    peer = "--peer" in sys.argv
    if peer:
        sys.argv.remove("--peer")
        sys.argv += ["--setups", ",".join(s for s in PEER_SETUPS if s != "ours>ours")]
    goals = {"ours>java": 1.0, "java>ours": 1.0} if peer else {"ours": 1.5}
    return steady_main(
        "udp_throughput",
        __doc__.splitlines()[0],
        lambda: f"aeron:udp?endpoint=localhost:{free_udp_port()}",
        "aeron:udp?endpoint=localhost:<free port>",
        SINGLE_SETUPS,
        goals,
    )


if __name__ == "__main__":
    run_main(main)
