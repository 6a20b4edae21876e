#!/usr/bin/env python3
"""IPC throughput at steady state: Java StreamingPublisher -> RateSubscriber over aeron:ipc.

Same method as ``udp_throughput.py`` (tools/bench/steady.py): per-second rates over ``--seconds`` after
``--warmup`` seconds (reported apart as the cold start), medians of ``--runs`` per setup and start order,
ours vs the Java driver in SHARED (the reference) and DEDICATED, driver CPU per million messages.

On IPC the data never passes through the driver: the publisher writes the mapped log and the subscriber reads
it. The driver's share is the conductor work -- publisher limit from subscriber positions, cleaning -- so a slow
or CPU-hungry conductor shows up as back pressure and as CPU taken from the clients. Goal: ours >= 1.0x.

    .venv/bin/python -m tools.bench.ipc_throughput                      # 32 B, ~5 min
    .venv/bin/python -m tools.bench.ipc_throughput --runs 1 --seconds 5 --orders together   # quick look

Exit code: 0 goal met, 1 goal missed, 2 no ratio (a driver failed every run or the peer is missing).
"""

from __future__ import annotations

from tools.bench.report import run_main
from tools.bench.steady import SINGLE_SETUPS, steady_main


def main() -> int:
    return steady_main(
        "ipc_throughput",
        __doc__.splitlines()[0],
        lambda: "aeron:ipc",
        "aeron:ipc",
        SINGLE_SETUPS,
        {"ours": 1.0},
    )


if __name__ == "__main__":
    run_main(main)
