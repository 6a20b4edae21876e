"""Same-run comparison: each driver kind measured in turn in every run, the order rotating, and medians taken;
the -D properties both drivers get, and the options every comparison takes."""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tools.bench.harness import KINDS
from tools.bench.report import BenchError, progress
from tools.bench.samples import unsupported_or

STREAM_TUNING = {
    "aeron.socket.so_sndbuf": "2m",
    "aeron.socket.so_rcvbuf": "2m",
    "aeron.rcv.initial.window.length": "2m",
}
"""Both drivers get these, as Aeron's own performance-testing instructions set them for the Java driver, so that
the two are compared with the same socket buffers and receiver window: Java's defaults are 128 KiB (4.0 M msgs/s
at 32 B over UDP here, 5.0-5.2 M with these), ours a 1 MiB window in 2 MiB buffers."""
JAVA_DEFAULT_PROPS = {"aeron.threading.mode": "SHARED", **STREAM_TUNING}


def parse_props(pairs: Sequence[str] | None) -> dict[str, str]:
    """``["aeron.x=y", "-Daeron.z=w"]`` -> ``{"aeron.x": "y", "aeron.z": "w"}``."""
    props = {}
    for pair in pairs or []:
        key, sep, value = pair.removeprefix("-D").partition("=")
        if not sep or not key:
            raise SystemExit(f"bad property {pair!r}: expected name=value")
        props[key] = value
    return props


def add_compare_args(parser: argparse.ArgumentParser, timeout: float) -> None:
    """--runs, --order, --timeout, --ours-prop, --java-prop: the options every same-run comparison takes."""
    parser.add_argument(
        "--runs", type=int, default=3, help="runs per driver; medians are reported (default 3)"
    )
    parser.add_argument(
        "--order",
        choices=("alternate", "ours-first", "java-first"),
        default="alternate",
        help="driver order within each run (default alternate: ours first on odd runs)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=timeout,
        help=f"seconds one run may take before it is recorded as failed (default {timeout:g})",
    )
    add_prop_args(parser)


def add_prop_args(parser: argparse.ArgumentParser) -> None:
    """--ours-prop, --java-prop (repeatable -D properties, read with ``driver_props``)."""
    parser.add_argument(
        "--ours-prop", action="append", metavar="NAME=VALUE", help="-D property for our driver"
    )
    parser.add_argument(
        "--java-prop",
        action="append",
        metavar="NAME=VALUE",
        help="-D property for the Java driver (default aeron.threading.mode=SHARED)",
    )


def driver_props(args: argparse.Namespace) -> dict[str, dict[str, str]]:
    """Per kind, the -D properties from --ours-prop / --java-prop over ``STREAM_TUNING`` (Java: also SHARED
    threading unless overridden)."""
    return {
        "ours": {**STREAM_TUNING, **parse_props(args.ours_prop)},
        "java": {**JAVA_DEFAULT_PROPS, **parse_props(args.java_prop)},
    }


def run_order(runs: int, order: str) -> list[tuple[str, ...]]:
    """The driver order for each run: ``alternate`` (ours first on odd runs), ``ours-first`` or ``java-first``."""
    sequences = []
    for i in range(runs):
        if order == "java-first" or (order == "alternate" and i % 2 == 1):
            sequences.append(("java", "ours"))
        else:
            sequences.append(("ours", "java"))
    return sequences


def compare(
    measure: Callable[[str], dict[str, Any]],
    runs: int,
    order: str,
    kinds: Sequence[str] = KINDS,
    label: str = "bench",
) -> dict[str, list[dict[str, Any]]]:
    """Run ``measure(kind)`` for every kind in every run; a failed run records ``{"error": ...}``. A kind that
    answered "unsupported" is not tried again."""
    results: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    for i, sequence in enumerate(run_order(runs, order)):
        for kind in sequence:
            if kind not in results:
                continue
            if any(str(r.get("error", "")).startswith("unsupported") for r in results[kind]):
                continue
            progress(f"{label}: run {i + 1}/{runs}, {kind} driver")
            try:
                result = measure(kind)
            except BenchError as exc:
                result = {"error": unsupported_or(str(exc))}
                progress(f"{label}: {kind} run {i + 1} failed: {result['error']}")
            else:
                progress(f"{label}: {kind} run {i + 1}: {json.dumps(rounded_floats(result), default=str)}")
            results[kind].append(result)
    return results


def rounded_floats(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, dict):
        return {k: rounded_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded_floats(v) for v in value]
    return value


def median_of(results: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = [r[key] for r in results if "error" not in r and r.get(key) is not None]
    return statistics.median(values) if values else None


def first_error(results: Sequence[Mapping[str, Any]]) -> str | None:
    return next((str(r["error"]) for r in results if "error" in r), None)


def ratio(ours: float | None, java: float | None, digits: int = 3) -> float | None:
    return None if ours is None or not java else round(ours / java, digits)


def rounded(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)
