"""What the Aeron sample clients and our Java clients print, read: RateSubscriber/StreamingPublisher rate lines,
Ping's HdrHistogram table, the Sequenced* clients' health, and a driver refusing a channel."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.children import Proc, describe_failure
from tools.bench.report import BenchError

# RateSubscriber: "8.9e+06 msgs/sec, 2.8e+08 payload bytes/sec, totals 11154950 messages 340 MB" (StreamingPublisher
# prints the same without "payload"). The rates have two significant digits, so only the exact totals are used.
RATE_LINE = re.compile(r"^(\S+) msgs/sec, (\S+) (?:payload )?bytes/sec, totals (\d+) messages (\d+) MB")


def rate_samples(proc: Proc) -> list[tuple[float, int]]:
    """(arrival time, total messages so far) for each per-second rate line."""
    samples = []
    for t, line in list(proc.lines):
        match = RATE_LINE.match(line)
        if match:
            samples.append((t, int(match.group(3))))
    return samples


def last_total(proc: Proc) -> int:
    samples = rate_samples(proc)
    return samples[-1][1] if samples else 0


@dataclass
class Throughput:
    msgs_per_s: float
    t0: float
    t1: float
    messages: int
    steady: bool  # False: the run was too short for a window without partial seconds


def steady_throughput(samples: Sequence[tuple[float, int]]) -> Throughput:
    """Messages per second over the whole seconds of a stream.

    RateSubscriber prints its running total once a second. The first line with a nonzero total closes a partial
    second (the stream started inside it) and the last line whose total grew closes a partial second (the stream
    ended inside it), so the window runs from the first nonzero line to the line before the last increase:
    rate = (total[end] - total[first]) / (t[end] - t[first]), times being when the lines reached the harness.
    With fewer than two whole seconds it falls back to total / (t[last increase] - t[line before first nonzero]),
    which undercounts (it includes partial seconds) and is marked not steady.
    """
    first = next((i for i, (_, total) in enumerate(samples) if total > 0), None)
    if first is None:
        raise BenchError("the subscriber received no messages")
    last_increase = max(
        i for i in range(first, len(samples)) if i == first or samples[i][1] > samples[i - 1][1]
    )
    end = last_increase - 1
    if end > first and samples[end][0] > samples[first][0]:
        (t0, n0), (t1, n1) = samples[first], samples[end]
        return Throughput((n1 - n0) / (t1 - t0), t0, t1, n1 - n0, steady=True)
    t0 = samples[first - 1][0] if first > 0 else samples[first][0] - 1.0
    t1, n1 = samples[last_increase]
    return Throughput(n1 / (t1 - t0), t0, t1, n1, steady=False)


# Ping: HdrHistogram outputPercentileDistribution(System.out, 1000.0): "Value Percentile TotalCount 1/(1-P)" rows in
# microseconds, then "#[Mean = x, StdDeviation = y]", "#[Max = x, Total count = n]".
HISTOGRAM_ROW = re.compile(r"^\s*([\d.]+)\s+([\d.]+)\s+(\d+)(?:\s+[\d.]+|\s+inf(?:inity)?)?\s*$", re.I)
HISTOGRAM_MEAN = re.compile(r"#\[Mean\s*=\s*([\d.]+),\s*StdDeviation\s*=\s*([\d.]+)\]")
HISTOGRAM_MAX = re.compile(r"#\[Max\s*=\s*([\d.]+),\s*Total count\s*=\s*(\d+)\]")


def parse_histogram(text: str) -> dict[str, Any]:
    """p25/p50/p75/p90/p99/p99.9 (first row whose cumulative count reaches the fraction), mean and max, in
    microseconds."""
    start = text.find("Histogram of RTT latencies")
    body = text[start:] if start >= 0 else text
    rows = []
    for line in body.splitlines():
        match = HISTOGRAM_ROW.match(line)
        if match:
            rows.append((float(match.group(1)), int(match.group(3))))
    mean, maxi = HISTOGRAM_MEAN.search(body), HISTOGRAM_MAX.search(body)
    if not rows or maxi is None:
        raise BenchError("no RTT histogram in Ping's output")
    count = int(maxi.group(2))

    def at(fraction: float) -> float:
        need = fraction * count
        return next((value for value, cumulative in rows if cumulative >= need), rows[-1][0])

    result = {
        "p25_us": at(0.25),
        "p50_us": at(0.50),
        "p75_us": at(0.75),
        "p90_us": at(0.90),
        "p99_us": at(0.99),
        "p999_us": at(0.999),
    }
    result["max_us"] = float(maxi.group(1))
    result["mean_us"] = float(mean.group(1)) if mean else None
    result["count"] = count
    return result


def check_sequenced(*procs: Proc) -> None:
    """SequencedPublisher/SequencedSubscriber still running and neither reported an ERROR or TIMEOUT line."""
    for proc in procs:
        bad = proc.find(r"^(ERROR|TIMEOUT).*")
        if bad is not None:
            raise BenchError(f"{proc.name}: {bad.group(0)}")
        if not proc.alive:
            raise BenchError(describe_failure(proc))


def unsupported_or(error: str) -> str:
    """Prefix "unsupported: " when the driver refused a channel it does not implement yet."""
    return f"unsupported: {error}" if re.search(r"not (yet )?supported|unsupported", error, re.I) else error
