"""Steady-state stream throughput: the method behind ``udp_throughput.py`` and ``ipc_throughput.py``.

A stream runs for hours, so what counts is its rate once warm, not the time of a fixed count from the first
message. One measurement (:func:`measure_steady`):

- starts the driver(s) of a *setup* (below), then the Java ``RateSubscriber`` and ``StreamingPublisher``
  (endless: ``aeron.sample.messages`` is huge), either the subscriber first (``sub-first``: the publisher starts
  once the subscriber prints its first line, i.e. it is subscribed) or both at once (``together``);
- reads the subscriber's per-second running totals (each line timestamped on arrival). The first line with a
  nonzero total ends a partial second; the next ``--warmup`` whole seconds are the *cold* part (reported apart:
  their per-second rates and their mean), the ``--seconds`` after that the *steady* window;
- steady msgs/s = (total at the window's end - total at its start) / (time between those lines); the median
  of the window's per-second rates is reported too;
- driver CPU (utime+stime of each driver's process tree, sampled from /proc) over the same window, as % of one
  core and as CPU seconds per million messages.

Setups (``--setups``): ``ours`` and ``java`` (SHARED) / ``java-dedicated`` are one driver that both clients
use; ``ours-plain`` is ours with the UDP offloads off (docs/wire.md section 10). ``ours>java``, ``java>ours`` and ``java>java`` are two drivers (UDP only): the publisher's driver, then
the subscriber's (Java always SHARED unless ``--java-prop`` says otherwise); their CPU is the sum of both.
``c`` is the Aeron 1.53 C driver ``aeronmd`` (SHARED, ``--c-prop``; harness/c_driver.py) with our C sample
clients (``streaming_publisher``, ``rate_subscriber``) in place of the Java ones; choosing it adds ``ours-c``, our
driver with the same C clients, and ``ours-c``'s ratio is to ``c``, held to the goal of ``ours``.

Runs alternate: run i takes the setups in order rotated by i, so each setup goes first as often as any
other. Medians over ``--runs`` per setup and start order; ratios are ours / the same-run reference setup.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import statistics
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

from harness.java import Peers
from tools.bench.compare import (
    JAVA_DEFAULT_PROPS,
    STREAM_TUNING,
    add_prop_args,
    parse_props,
    rounded,
    rounded_floats,
)
from tools.bench.harness import C_KIND, ROOT, STARTUP_TIMEOUT_S, Harness, require_peers
from tools.bench.report import BenchError, emit, host_info, no_comparison, progress
from tools.bench.samples import rate_samples, unsupported_or

STREAM_ID = 10
ENDLESS = 1 << 62
ORDERS = ("sub-first", "together")
SINGLE_SETUPS = ("ours", "java", "java-dedicated")
OTHER_SETUPS = ("ours-plain",)  # ours with the UDP offloads off (docs/wire.md section 10): what they bring
PEER_SETUPS = ("ours>ours", "ours>java", "java>ours", "java>java")
C_SETUPS = ("ours-c", "c")  # our driver and aeronmd, both with the C sample clients


def setup_drivers(setup: str) -> tuple[str, str | None]:
    """(publisher's driver, subscriber's driver or None for the same one) of a setup name."""
    pub, arrow, sub = setup.partition(">")
    return (pub, sub) if arrow else (pub, None)


def driver_kind_props(name: str, props: dict[str, dict[str, str]]) -> tuple[str, dict[str, str]]:
    if name == "ours":
        return "ours", dict(props["ours"])
    if name == "ours-plain":
        return "ours", {**props["ours"], "aeron.socket.gso": "false", "aeron.socket.gro": "false"}
    if name == "java":
        return "java", dict(props["java"])
    if name == "java-dedicated":
        return "java", {**props["java"], "aeron.threading.mode": "DEDICATED"}
    if name == "ours-c":
        return "ours", dict(props["ours"])
    if name == C_KIND:
        return C_KIND, dict(props[C_KIND])
    raise BenchError(f"unknown driver {name!r} (ours, ours-plain, java, java-dedicated, ours-c, c)")


def steady_rates(samples: Sequence[tuple[float, int]], warmup: int, seconds: int) -> dict[str, Any] | None:
    """The cold and steady figures from RateSubscriber's (arrival time, running total) lines, or None when
    the window is not complete yet."""
    first = next((i for i, (_, total) in enumerate(samples) if total > 0), None)
    if first is None:
        return None
    start, end = first + warmup, first + warmup + seconds
    if end >= len(samples):
        return None
    (t0, n0), (t1, n1) = samples[start], samples[end]
    window = samples[start : end + 1]
    per_second = [(b - a) / (tb - ta) for (ta, a), (tb, b) in itertools.pairwise(window) if tb > ta]
    cold_start = samples[first - 1][0] if first > 0 else samples[first][0] - 1.0
    cold = samples[first : start + 1]
    return {
        "msgs_per_s": (n1 - n0) / (t1 - t0),
        "median_per_second": statistics.median(per_second),
        "t0": t0,
        "t1": t1,
        "messages": n1 - n0,
        "cold_msgs_per_s": n0 / (t0 - cold_start),
        "cold_per_second": [round((b - a) / (tb - ta)) for (ta, a), (tb, b) in itertools.pairwise(cold)],
    }


def measure_steady(
    setup: str,
    channel: str,
    length: int,
    order: str,
    warmup: int,
    seconds: int,
    timeout: float,
    props: dict[str, dict[str, str]],
    peers: Peers | None,
) -> dict[str, Any]:
    """One measurement of ``setup`` (see the module doc); raises BenchError on a failure or after ``timeout``
    seconds."""
    pub_name, sub_name = setup_drivers(setup)
    with Harness(peers) as h:
        pub_kind, pub_props = driver_kind_props(pub_name, props)
        pub_driver = h.start_driver(pub_kind, pub_props)
        drivers = [pub_driver]
        if sub_name is not None:
            sub_kind, sub_props = driver_kind_props(sub_name, props)
            drivers.append(h.start_driver(sub_kind, sub_props))
        sub_driver = drivers[-1]
        for driver in drivers:
            driver.cpu.start()

        def client_props(driver: Any) -> dict[str, Any]:
            return {
                "aeron.dir": driver.aeron_dir,
                "aeron.sample.channel": channel,
                "aeron.sample.streamId": STREAM_ID,
                "aeron.sample.messages": ENDLESS,
                "aeron.sample.messageLength": length,
            }

        watch = [d.proc for d in drivers]
        if setup in C_SETUPS:
            sub = h.c_client("rate_subscriber", client_props(sub_driver))
        else:
            sub = h.java("io.aeron.samples.RateSubscriber", client_props(sub_driver))
        if order == "sub-first":
            h.wait_for(
                lambda: bool(rate_samples(sub)),
                STARTUP_TIMEOUT_S,
                "RateSubscriber to subscribe",
                watch=[sub, *watch],
                fail_on_exception=[sub],
            )
        if setup in C_SETUPS:
            pub = h.c_client("streaming_publisher", client_props(pub_driver))
        else:
            pub = h.java("io.aeron.samples.StreamingPublisher", client_props(pub_driver), stdin=b"n\n")
        result: dict[str, Any] = {}

        def done() -> bool:
            figures = steady_rates(rate_samples(sub), warmup, seconds)
            if figures is not None:
                result.update(figures)
            return figures is not None

        try:
            h.wait_for(
                done, timeout, f"{warmup} + {seconds} s of data", watch=[sub, pub, *watch],
                fail_on_exception=[sub, pub],
            )  # fmt: skip
        except BenchError as exc:
            samples = rate_samples(sub)
            got = samples[-1][1] if samples else 0
            raise BenchError(f"{exc} (subscriber received {got:,})") from None
        cpu_pct = 0.0
        for driver in drivers:
            pct = driver.cpu.pct(result["t0"], result["t1"])
            driver.cpu.stop()
            if pct is None:
                raise BenchError("no CPU samples in the window")
            cpu_pct += pct
        window = result["t1"] - result["t0"]
        result["driver_cpu_pct"] = cpu_pct
        result["cpu_s_per_m_msgs"] = cpu_pct / 100 * window / (result["messages"] / 1e6)
        result["window_s"] = window
        return result


def run_sequences(runs: int, setups: Sequence[str], orders: Sequence[str]) -> list[list[tuple[str, str]]]:
    """Per run, (setup, order) pairs: the setups rotated by the run's index, each in every start order."""
    sequences = []
    for i in range(runs):
        k = i % len(setups)
        rotated = [*setups[k:], *setups[:k]]
        sequences.append([(setup, order) for order in orders for setup in rotated])
    return sequences


def add_steady_args(parser: argparse.ArgumentParser, setups: Sequence[str], timeout: float) -> None:
    parser.add_argument("--length", type=int, default=32, help="message length in bytes (default 32)")
    parser.add_argument("--seconds", type=int, default=10, help="steady window in seconds (default 10)")
    parser.add_argument(
        "--warmup",
        type=int,
        default=2,
        help="whole seconds of data dropped first, reported as cold (default 2)",
    )
    parser.add_argument("--runs", type=int, default=3, help="runs per setup and order; medians (default 3)")
    parser.add_argument(
        "--orders",
        default=",".join(ORDERS),
        help=f"start orders, comma separated (default {','.join(ORDERS)})",
    )
    parser.add_argument(
        "--setups", default=",".join(setups), help=f"setups, comma separated (default {','.join(setups)})"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=timeout,
        help=f"seconds one measurement may take (default {timeout:g})",
    )
    parser.add_argument(
        "--no-shell-check",
        action="store_true",
        help="skip the plain shell launch (shell_launch.sh) of ours, java, c and ours-c that each run checks itself "
        "against",
    )
    add_prop_args(parser)
    parser.add_argument(
        "--c-prop",
        action="append",
        metavar="NAME=VALUE",
        help="-D property for aeronmd (default SHARED threading)",
    )


def _split(text: str, allowed: Sequence[str] | None = None) -> list[str]:
    items = [item.strip() for item in text.split(",") if item.strip()]
    if allowed is not None:
        for item in items:
            if item not in allowed:
                raise SystemExit(f"{item!r}: expected one of {', '.join(allowed)}")
    return items


SHELL_LAUNCH = ROOT / "tools" / "bench" / "shell_launch.sh"
SHELL_CHECK_TOLERANCE = 0.15
_SHELL_RESULT = re.compile(r"msgs_per_s=([0-9.]+) .*driver_cpu_pct=([0-9.]+)")


def shell_launch(kind: str, channel: str, length: int, warmup: int, seconds: int) -> dict[str, Any]:
    """One measurement by ``shell_launch.sh``: the driver and the samples started from bash, output in files."""
    cmd = ["bash", str(SHELL_LAUNCH), kind, "-l", str(length), "-c", channel, "-w", str(warmup)]
    cmd += ["-s", str(seconds)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=warmup + seconds + 90)
    match = _SHELL_RESULT.search(done.stdout)
    if done.returncode != 0 or match is None:
        raise BenchError(f"shell_launch.sh {kind} failed: {(done.stderr or done.stdout).strip()[-300:]}")
    return {"msgs_per_s": float(match.group(1)), "driver_cpu_pct": float(match.group(2))}


def shell_check(
    results: dict[tuple[str, str], list[dict[str, Any]]], shell: dict[str, list[dict[str, Any]]]
) -> dict[str, Any]:
    """Per driver, the harness's median (start order ``together``, as the script starts its clients) against
    the shell launch's median of the same run; ``agree`` when within ``SHELL_CHECK_TOLERANCE``."""
    check: dict[str, Any] = {}
    for kind, launches in shell.items():
        rates = [r["msgs_per_s"] for r in launches if "error" not in r]
        harness = [r["msgs_per_s"] for r in results.get((kind, "together"), []) if "error" not in r]
        if not rates or not harness:
            check[kind] = {"error": next((r["error"] for r in launches if "error" in r), "no result")}
            continue
        ours, theirs = statistics.median(harness), statistics.median(rates)
        agree = abs(ours - theirs) <= SHELL_CHECK_TOLERANCE * theirs
        check[kind] = {
            "harness_msgs_per_s": round(ours),
            "shell_msgs_per_s": round(theirs),
            "shell_driver_cpu_pct": statistics.median(r["driver_cpu_pct"] for r in launches if "error" not in r),
            "agree": agree,
        }
        if not agree:
            progress(
                f"shell check: the harness measured {kind} at {ours:,.0f} msgs/s, a plain shell launch at "
                f"{theirs:,.0f} msgs/s: they differ by more than {SHELL_CHECK_TOLERANCE:.0%}"
            )
    return check


REFERENCES = {
    "ours": "java",
    "ours-plain": "java",
    "ours>java": "java>java",
    "java>ours": "java>java",
    "ours>ours": "java>java",
    "ours-c": "c",
}


def steady_main(
    bench: str,
    description: str,
    channel_for: Callable[[], str],
    channel_label: str,
    setups: Sequence[str],
    goals: dict[str, float],
    timeout: float = 90.0,
) -> int:
    """The whole benchmark: arguments, the runs, medians, ratios and the JSON line. ``goals`` maps a setup to
    the ratio it must reach against its reference (``REFERENCES``) in every start order."""
    if "ours" in goals:  # ours with the C clients against aeronmd: held to ours' goal against Java
        goals = {**goals, "ours-c": goals["ours"]}
    parser = argparse.ArgumentParser(description=description)
    add_steady_args(parser, setups, timeout)
    args = parser.parse_args()
    if args.seconds < 1 or args.warmup < 0:
        raise SystemExit("--seconds must be >= 1 and --warmup >= 0")
    chosen = _split(args.setups, (*SINGLE_SETUPS, *OTHER_SETUPS, *PEER_SETUPS, *C_SETUPS))
    if C_KIND in chosen and "ours-c" not in chosen:  # ours measured with the same C clients as aeronmd
        chosen.insert(chosen.index(C_KIND), "ours-c")
    orders = _split(args.orders, ORDERS)
    props = {
        "ours": {**STREAM_TUNING, **parse_props(args.ours_prop)},
        "java": {**JAVA_DEFAULT_PROPS, **parse_props(args.java_prop)},
        C_KIND: {**JAVA_DEFAULT_PROPS, **parse_props(args.c_prop)},
    }
    try:
        peers = require_peers()
    except BenchError as exc:
        return no_comparison({"bench": bench}, exc)

    host = host_info()
    results: dict[tuple[str, str], list[dict[str, Any]]] = {(s, o): [] for s in chosen for o in orders}
    # The shell launch uses the same settings (Java and C: SHARED; all: STREAM_TUNING), both clients at once.
    checked = [
        kind
        for kind in ("ours", "java", *C_SETUPS)
        if kind in chosen and "together" in orders and not (args.ours_prop or args.java_prop or args.c_prop)
    ]
    shell: dict[str, list[dict[str, Any]]] = {kind: [] for kind in ([] if args.no_shell_check else checked)}
    for i, sequence in enumerate(run_sequences(args.runs, chosen, orders)):
        for kind in shell:
            progress(f"{bench}: run {i + 1}/{args.runs}, {kind} launched from a shell")
            try:
                launch = shell_launch(kind, channel_for(), args.length, args.warmup, args.seconds)
            except (BenchError, subprocess.TimeoutExpired) as exc:
                launch = {"error": str(exc)}
            progress(f"{bench}: {kind} from a shell, run {i + 1}: {launch}")
            shell[kind].append(launch)
        for setup, order in sequence:
            progress(f"{bench}: run {i + 1}/{args.runs}, {setup}, {order}")
            try:
                result = measure_steady(
                    setup,
                    channel_for(),
                    args.length,
                    order,
                    args.warmup,
                    args.seconds,
                    args.timeout,
                    props,
                    peers,
                )
            except BenchError as exc:
                result = {"error": unsupported_or(str(exc))}
                progress(f"{bench}: {setup} {order} run {i + 1} failed: {result['error']}")
            else:
                shown = {k: v for k, v in result.items() if k not in ("t0", "t1")}
                progress(f"{bench}: {setup} {order} run {i + 1}: {rounded_floats(shown)}")
            results[(setup, order)].append(result)

    def median(setup: str, order: str, key: str) -> float | None:
        values = [r[key] for r in results.get((setup, order), []) if "error" not in r]
        return statistics.median(values) if values else None

    table: dict[str, Any] = {}
    for order in orders:
        for setup in chosen:
            runs = results[(setup, order)]
            entry: dict[str, Any] = {
                "msgs_per_s": rounded(median(setup, order, "msgs_per_s"), 0),
                "median_per_second": rounded(median(setup, order, "median_per_second"), 0),
                "cold_msgs_per_s": rounded(median(setup, order, "cold_msgs_per_s"), 0),
                "driver_cpu_pct": rounded(median(setup, order, "driver_cpu_pct")),
                "cpu_s_per_m_msgs": rounded(median(setup, order, "cpu_s_per_m_msgs"), 3),
                "runs": [
                    {"error": r["error"]}
                    if "error" in r
                    else {
                        "msgs_per_s": round(r["msgs_per_s"]),
                        "cold_per_second": r["cold_per_second"],
                        "driver_cpu_pct": rounded(r["driver_cpu_pct"]),
                    }
                    for r in runs
                ],
            }
            reference = REFERENCES.get(setup)
            if reference in chosen:
                ours, ref = entry["msgs_per_s"], median(reference, order, "msgs_per_s")
                entry["ratio"] = None if ours is None or not ref else round(ours / ref, 3)
                entry["vs"] = reference
                ours_cold, ref_cold = entry["cold_msgs_per_s"], median(reference, order, "cold_msgs_per_s")
                entry["cold_ratio"] = (
                    None if ours_cold is None or not ref_cold else round(ours_cold / ref_cold, 3)
                )
            if setup == "ours" and "java-dedicated" in chosen:
                ref = median("java-dedicated", order, "msgs_per_s")
                entry["ratio_vs_dedicated"] = (
                    None if entry["msgs_per_s"] is None or not ref else round(entry["msgs_per_s"] / ref, 3)
                )
            table[f"{setup} {order}"] = entry

    verdicts = []
    for setup, goal in goals.items():
        for order in orders:
            entry = table.get(f"{setup} {order}")
            if entry is not None and "ratio" in entry:
                verdicts.append(entry["ratio"] is not None and entry["ratio"] >= goal)
    summary = {key: entry.get("ratio") for key, entry in table.items() if "ratio" in entry}
    emit(
        {
            "bench": bench,
            "channel": channel_label,
            "length": args.length,
            "warmup_s": args.warmup,
            "seconds": args.seconds,
            "runs": args.runs,
            "ratios": summary,
            "goals": {setup: f">= {goal}" for setup, goal in goals.items()},
            **host,
            "load_1m_end": round(os.getloadavg()[0], 2),
            "results": table,
            **({"shell_check": shell_check(results, shell)} if shell else {}),
        }
    )
    if not verdicts or any(
        entry.get("ratio") is None for key, entry in table.items() if key.split(" ")[0] in goals
    ):
        return 2
    return 0 if all(verdicts) else 1
