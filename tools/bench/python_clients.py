#!/usr/bin/env python3
"""Python publisher process -> Python subscriber process through OUR driver: our client against pyaeron's
(the Aeron 1.53 C client's CPython bindings), over ``aeron:ipc`` and UDP loopback, 32 B and 1 KiB.

Both clients run against the same driver in the same run (pyaeron in the Python 3.12 venv that
tools/peers/install.py makes; when it cannot be made the comparisons are skipped and the reason printed).
Each side samples (time, messages so far, its own CPU seconds) every 0.1 s (tools/bench/python_clients_peer.py);
the first 2 s after the first message are dropped and the rest cut into 1 s spans: a run's figure is the median
of its per-second rates, and the benchmark's the median over ``--runs`` runs. CPU is each process's CPU time
over the same window, in % of one core.

Modes of our client besides ``message`` (offer / poll(handler)): ``batch`` (``Publication.offer_many`` ->
``Subscription.poll_batch``) and ``asyncio`` (``offer_async`` -> ``async for ... in subscription.messages()``).

Goals: per-message IPC and UDP >= 1.0x pyaeron; batch (subscriber and publisher rates) >= 3x pyaeron's
per-message figure; asyncio >= 0.5x our per-message (blocking) figure. Prints progress to stderr and one JSON
line to stdout; exits 0 when every goal is met, 1 when one is missed, 2 when pyaeron was unavailable.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from tools.bench.harness import Harness, free_udp_port
from tools.bench.report import BenchError, emit, host_info, progress
from tools.peers import install
from tools.peers.children import Proc

PEER = ("-m", "tools.bench.python_clients_peer")  # run from the repository root, in either venv
DROP_S = 2.0
STREAM_IDS = itertools.count(2001)


def pyaeron_python() -> tuple[str | None, str | None]:
    """(the pyaeron venv's python, None) or (None, why it cannot be had)."""
    try:
        return str(install.install_pyaeron()), None
    except RuntimeError as exc:
        return None, str(exc)


def window(samples: list[list[float]]) -> tuple[float | None, float | None]:
    """(median per-second rate, CPU % of a core) after the first DROP_S seconds."""
    t_start = samples[0][0]
    start = next((i for i, s in enumerate(samples) if s[0] >= t_start + DROP_S), None)
    if start is None:
        return None, None
    rates = []
    a = samples[start]
    for b in samples[start + 1 :]:
        if b[0] - a[0] >= 1.0:
            rates.append((b[1] - a[1]) / (b[0] - a[0]))
            a = b
    if not rates:
        return None, None
    first, last = samples[start], a
    cpu = 100.0 * (last[2] - first[2]) / (last[0] - first[0])
    return statistics.median(rates), cpu


def result_of(proc: Proc) -> dict[str, Any] | None:
    match = proc.find(r"^RESULT (\{.*\})$")
    return json.loads(match.group(1)) if match else None


def wait_result(proc: Proc, timeout: float) -> None:
    """Until ``proc`` printed its RESULT line (read what it printed before deciding it died without one)."""
    deadline = time.monotonic() + timeout
    while proc.find("^RESULT") is None:
        if not proc.alive:
            proc.join_output()
            if proc.find("^RESULT") is None:
                raise BenchError(f"{proc.name} exited ({proc.returncode}) without a result: {proc.tail()}")
            return
        if time.monotonic() > deadline:
            raise BenchError(f"{proc.name}: no result after {timeout:g} s: {proc.tail()}")
        time.sleep(0.05)


def one_run(
    harness: Harness,
    aeron_dir: Path,
    python: str,
    client: str,
    mode: str,
    transport: str,
    length: int,
    seconds: float,
    idle: str,
) -> dict[str, Any]:
    channel = "aeron:ipc" if transport == "ipc" else f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}"
    stream_id = next(STREAM_IDS)
    common = [client, mode, idle, str(aeron_dir), channel, str(stream_id), str(seconds)]
    sub = harness.spawn(f"{client}-sub", [python, *PEER, "sub", *common])
    pub = None
    try:
        harness.wait_for(lambda: sub.find("^READY") is not None, 30, "subscriber ready", watch=[sub])
        pub = harness.spawn(f"{client}-pub", [python, *PEER, "pub", *common, str(length)])
        wait_result(pub, seconds + 40)
        wait_result(sub, 20)
        sub_rate, sub_cpu = window(result_of(sub)["samples"])
        pub_rate, pub_cpu = window(result_of(pub)["samples"])
    finally:
        for proc in (sub, pub):
            if proc is not None and proc.alive:
                proc.signal(15)
                try:
                    proc.popen.wait(5)
                except Exception:
                    proc.signal(9)
    return {"sub_rate": sub_rate, "pub_rate": pub_rate, "sub_cpu": sub_cpu, "pub_cpu": pub_cpu}


def median_of(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transports", default="ipc,udp")
    parser.add_argument("--lengths", default="32,1024")
    parser.add_argument("--modes", default="message,batch,asyncio", help="our client's modes")
    parser.add_argument(
        "--seconds", type=float, default=6.0, help="sampled seconds per run (first 2 dropped)"
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--idle",
        choices=("busy-spin", "backoff"),
        default="busy-spin",
        help="the message and batch loops of both clients: spin, or each client's backoff idle strategy",
    )
    parser.add_argument("--no-pyaeron", action="store_true")
    args = parser.parse_args()

    info = host_info()
    pyaeron, why = (None, "--no-pyaeron") if args.no_pyaeron else pyaeron_python()
    if pyaeron is None:
        progress(f"pyaeron skipped: {why}")
    configs: list[tuple[str, str, str, int]] = []
    for transport in args.transports.split(","):
        for length in (int(x) for x in args.lengths.split(",")):
            for mode in args.modes.split(","):
                configs.append(("ours", mode, transport, length))
            if pyaeron is not None:
                configs.append(("pyaeron", "message", transport, length))

    runs: dict[tuple[str, str, str, int], list[dict[str, Any]]] = {c: [] for c in configs}
    with Harness() as harness:
        driver = harness.start_driver("ours")
        for run in range(args.runs):
            order = configs if run % 2 == 0 else list(reversed(configs))
            for config in order:
                client, mode, transport, length = config
                python = sys.executable if client == "ours" else pyaeron
                try:
                    figures = one_run(
                        harness,
                        driver.aeron_dir,
                        python,
                        client,
                        mode,
                        transport,
                        length,
                        args.seconds,
                        args.idle,
                    )
                except BenchError as exc:
                    progress(f"{config}: failed: {exc}")
                    figures = {"error": str(exc)}
                progress(f"run {run + 1} {client:7} {mode:8} {transport} {length:5} B: {figures}")
                runs[config].append(figures)

    results: dict[str, Any] = {}
    for config, config_runs in runs.items():
        client, mode, transport, length = config
        results[f"{client}/{mode}/{transport}/{length}"] = {
            key: (round(v) if key.endswith("rate") else round(v, 1))
            if (v := median_of(config_runs, key)) is not None
            else None
            for key in ("sub_rate", "pub_rate", "sub_cpu", "pub_cpu")
        }

    ratios: dict[str, float | None] = {}
    goals: dict[str, bool] = {}

    def ratio(name: str, num: float | None, den: float | None, goal: float) -> None:
        value = round(num / den, 3) if num and den else None
        ratios[name] = value
        goals[name] = value is not None and value >= goal

    for transport in args.transports.split(","):
        for length in (int(x) for x in args.lengths.split(",")):
            ours = results.get(f"ours/message/{transport}/{length}", {})
            theirs = results.get(f"pyaeron/message/{transport}/{length}")
            batch = results.get(f"ours/batch/{transport}/{length}")
            aio = results.get(f"ours/asyncio/{transport}/{length}")
            if theirs is not None:
                ratio(
                    f"message/{transport}/{length} vs pyaeron (>=1.0)",
                    ours.get("sub_rate"),
                    theirs["sub_rate"],
                    1.0,
                )
                if batch is not None:
                    ratio(
                        f"batch poll/{transport}/{length} vs pyaeron (>=3.0)",
                        batch["sub_rate"],
                        theirs["sub_rate"],
                        3.0,
                    )
                    ratio(
                        f"vectored offer/{transport}/{length} vs pyaeron (>=3.0)",
                        batch["pub_rate"],
                        theirs["pub_rate"],
                        3.0,
                    )
            if aio is not None:
                ratio(
                    f"asyncio/{transport}/{length} vs ours blocking (>=0.5)",
                    aio["sub_rate"],
                    ours.get("sub_rate"),
                    0.5,
                )

    emit(
        {
            "bench": "python_clients",
            **info,
            "load_end": round(__import__("os").getloadavg()[0], 2),
            "runs": args.runs,
            "seconds": args.seconds,
            "idle": args.idle,
            "pyaeron": why or "yes",
            "results": results,
            "ratios": ratios,
        }
    )
    if pyaeron is None:
        return 2
    return 0 if all(goals.values()) else 1


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    progress(f"done in {time.monotonic() - started:.0f} s")
    sys.exit(code)
