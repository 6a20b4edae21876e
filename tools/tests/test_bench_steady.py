"""tools/bench/steady.py: how the steady-state throughput benchmarks read RateSubscriber's per-second totals,
and the order in which they alternate the setups."""

from __future__ import annotations

from types import ModuleType

import pytest

from tools.bench import steady as steady_module


@pytest.fixture(scope="module")
def steady() -> ModuleType:
    return steady_module


def test_cold_seconds_are_dropped_and_reported_apart(steady) -> None:
    # t, total: two empty lines, a partial first second, then 100/s for 2 cold seconds and 1000/s after.
    samples = [
        (0.0, 0),
        (1.0, 0),
        (2.0, 50),
        (3.0, 150),
        (4.0, 250),
        *((5.0 + i, 1250 + 1000 * i) for i in range(5)),
    ]
    assert steady.steady_rates(samples, warmup=2, seconds=6) is None  # the window's last line not there yet
    figures = steady.steady_rates(samples, warmup=2, seconds=4)
    assert figures["msgs_per_s"] == pytest.approx(1000.0)  # lines 4..8: (4250 - 250) / 4 s
    assert figures["median_per_second"] == pytest.approx(1000.0)
    assert figures["messages"] == 4000
    assert figures["cold_per_second"] == [100, 100]
    assert figures["cold_msgs_per_s"] == pytest.approx(250 / 3.0)  # from the last empty line to the window
    assert steady.steady_rates([(0.0, 0), (1.0, 0)], 2, 10) is None


def test_runs_rotate_the_setups_in_every_start_order(steady) -> None:
    runs = steady.run_sequences(3, ["ours", "java", "java-dedicated"], ["sub-first", "together"])
    assert [[s for s, o in run if o == "together"] for run in runs] == [
        ["ours", "java", "java-dedicated"],
        ["java", "java-dedicated", "ours"],
        ["java-dedicated", "ours", "java"],
    ]
    assert all(len(run) == 6 for run in runs)
    assert steady.setup_drivers("ours>java") == ("ours", "java")
    assert steady.setup_drivers("java-dedicated") == ("java-dedicated", None)
