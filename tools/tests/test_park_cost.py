"""tools/bench/park_cost.py: the park timer's price on this host, as one JSON line a reader can trust."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_park_cost_prices_arming_and_parks_and_each_park_lasts_at_least_its_length() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tools.bench.park_cost", "--arms", "200", "--parks", "50"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    [line] = result.stdout.splitlines()
    report = json.loads(line)
    assert report["bench"] == "park_cost"
    assert list(report["arm_us"]) == ["1us", "16us", "50us", "200us", "1000us", "1000000us"]
    assert all(cost > 0 for cost in report["arm_us"].values())
    for length_us, park in (("16us", 16), ("50us", 50)):
        figures = report["park"][length_us]
        assert figures["wall_us"] >= park  # a park never ends before its timer
        assert figures["late_us_p50"] >= 0 and figures["late_us_p90"] >= figures["late_us_p50"]
        assert figures["cpu_us"] > 0 and figures["arm_us"] > 0
