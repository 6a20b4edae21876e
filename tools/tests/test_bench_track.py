"""tools/bench/track.py: how the tracked suite reads asv's records and names a figure that got worse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.bench import performance_page, track
from tools.bench.tracked import figures

COLUMNS = ["result", "params", "version", "started_at", "duration"]


def write_record(root: Path, commit: str, date: int, values: dict[str, float], started: int = 1) -> None:
    results = {name: [[value], [], "v", started, 1.0] for name, value in values.items()}
    record = {"commit_hash": commit, "date": date, "result_columns": COLUMNS, "results": results}
    (root / f"{commit[:8]}-existing-py_{started}.json").write_text(json.dumps(record))


@pytest.fixture
def records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(track, "RECORDS", tmp_path)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "machine.json").write_text("{}")
    return tmp_path / "m"


UDP = "figures.Udp32.track_msgs_ratio"  # higher is better
READY = "figures.Startup.track_ready_ratio"  # lower is better
LOSS = "figures.Loss5.track_msgs_ratio"


def test_a_figure_worse_by_more_than_a_fifth_is_named_with_its_commit_range(records: Path) -> None:
    write_record(records, "a" * 40, 1, {UDP: 4.5, READY: 0.50, LOSS: 8.0})
    write_record(records, "b" * 40, 2, {UDP: 4.4, READY: 0.52})  # the loss class failed here
    write_record(records, "c" * 40, 3, {UDP: 3.4, READY: 0.66, LOSS: 7.5})
    loaded = track.load_records("m")
    assert [r.commit[0] for r in loaded] == ["a", "b", "c"]
    fallen = track.compare(loaded, 0.20)
    assert fallen == [
        f"{READY}: 0.51 -> 0.66 (29% worse; lower is better) in aaaaaaaa..cccccccc",
        f"{UDP}: 4.45 -> 3.4 (31% worse; higher is better) in aaaaaaaa..cccccccc",
    ]  # against the medians of the earlier records; the loss ratio, 6 % down on its one record, is within

    # One noisy record does not make the baseline: a fourth record back to the usual level is not named.
    write_record(records, "d" * 40, 4, {UDP: 4.3, READY: 0.5, LOSS: 7.9})
    assert track.compare(track.load_records("m"), 0.20) == []


def test_runs_of_one_commit_merge_the_latest_value_of_each_figure(records: Path) -> None:
    write_record(records, "a" * 40, 1, {UDP: 4.5, READY: 0.5}, started=10)
    write_record(records, "a" * 40, 1, {UDP: 2.0}, started=20)
    (only,) = track.load_records("m")
    assert only.values == {UDP: 2.0, READY: 0.5}
    assert track.compare([only], 0.2) == []


def test_every_tracked_figure_says_which_way_is_better() -> None:
    methods = [
        getattr(cls, name)
        for cls in vars(figures).values()
        if isinstance(cls, type) and hasattr(cls, "setup_cache")
        for name in vars(cls)
        if name.startswith("track_")
    ]
    assert len(methods) >= 20
    for method in methods:
        assert figures.direction(f"figures.{method.__qualname__}") in ("higher", "lower")
        assert method.unit


def test_pick_reads_a_path_and_a_prefix() -> None:
    result = {"ratios": {"ours together": 4.2, "java-dedicated together": 1.0}, "p50_ratio": 0.4}
    assert figures.pick(result, "ratios", "ours*") == 4.2
    assert figures.pick(result, "p50_ratio") == 0.4
    clients = {"ratios": {"message/ipc/32 vs pyaeron (>=1.2)": {"ratio": 1.14, "goal": 1.2}}}
    assert figures.pick(clients, "ratios", "message/ipc/32 *", "ratio") == 1.14
    with pytest.raises(ValueError, match="not a number"):
        figures.pick({"x": None}, "x")


def test_the_performance_page_shows_what_the_records_hold() -> None:
    """docs/performance.md's log is generated from tools/bench/records (make bench rewrites it): a record
    committed without the page, or a page edited by hand, fails here."""
    page = performance_page.PAGE.read_text(encoding="utf-8")
    assert performance_page.render(page) == page, "run python -m tools.bench.performance_page"
