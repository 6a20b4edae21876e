"""Retention (docs/service.md section 3): by age, total bytes and count, oldest first, never a data set in use;
applied by a running service after each recording and on a timer."""

from __future__ import annotations

from pathlib import Path

from driver.service.models import DataSet
from driver.service.retention import Retention, beyond_retention
from harness.wait import wait_for
from tests.support.service_env import API, Publisher, record, start_service_env, stop_service_env

S = 1_000_000_000


def _dataset(n: int, end_s: float, size: int) -> DataSet:
    return DataSet(
        id=f"{n:012x}",
        name=f"d{n}",
        created=f"2026-01-01T00:00:{n:02d}",
        streams=[],
        recordings=[],
        messages=1,
        bytes=size,
        start_time_ns=int((end_s - 1) * S),
        end_time_ns=int(end_s * S),
        span_s=1.0,
    )


def test_the_oldest_go_first_by_age_bytes_and_count_and_in_use_ones_stay() -> None:
    sets = [_dataset(n, 100 + 10 * n, 1000) for n in range(5)]  # ends at 100, 110, ... 140 s
    ids = lambda found: [d.name for d in found]  # noqa: E731
    assert beyond_retention(sets, Retention(), 200 * S) == []
    assert ids(beyond_retention(sets, Retention(max_age_s=75), 200 * S)) == ["d0", "d1", "d2"]
    assert ids(beyond_retention(sets, Retention(max_datasets=2), 200 * S)) == ["d0", "d1", "d2"]
    assert ids(beyond_retention(sets, Retention(max_bytes=2500), 200 * S)) == ["d0", "d1", "d2"]
    assert ids(beyond_retention(sets, Retention(max_bytes=2500, max_datasets=4, max_age_s=95), 200 * S)) == [
        "d0",
        "d1",
        "d2",
    ]
    # In use: kept (and counted), the next oldest goes instead.
    assert ids(beyond_retention(sets, Retention(max_datasets=2), 200 * S, in_use={sets[0].id})) == [
        "d1",
        "d2",
        "d3",
    ]
    assert ids(beyond_retention(list(reversed(sets)), Retention(max_datasets=4), 200 * S)) == ["d0"]


def test_a_running_service_keeps_at_most_max_datasets(tmp_path: Path) -> None:
    env, archive = start_service_env(tmp_path, retention=Retention(max_datasets=2, interval_s=0.2))
    publisher = Publisher(env, "aeron:ipc", 1001, 0.001)
    publisher.start()
    try:
        made = [
            record(env, {"streams": [{"channel": "aeron:ipc", "stream_id": 1001}], "max_messages": 20})
            for _ in range(3)
        ]
        oldest = made[0]
        wait_for(
            lambda: (
                [d["id"] for d in env.client.get(f"{API}/datasets").json()["datasets"]]
                == [made[1]["id"], made[2]["id"]]
            ),
            10,
            "the oldest data set to go",
        )
        recording_id = oldest["recordings"][0]["recording_id"]
        wait_for(
            lambda: not list(env.archive_dir.glob(f"{recording_id}-*.rec")), 10, "its segment files to go"
        )
    finally:
        publisher.stop()
        stop_service_env(env, archive)


def test_the_retention_options_of_serve() -> None:
    from driver.cli import build_parser
    from driver.service.command import http_settings

    args = build_parser("serve").parse_args(
        ["serve", "--retention-max-age", "3600", "--retention-max-datasets", "10", "--http-no-auth"]
    )
    assert http_settings(args).retention == Retention(max_age_s=3600, max_datasets=10)
    bad = build_parser("serve").parse_args(["serve", "--retention-max-bytes", "0"])
    try:
        http_settings(bad)
    except ValueError as e:
        assert "--retention-max-bytes must be above 0" in str(e)
    else:
        raise AssertionError("a zero bound was accepted")
