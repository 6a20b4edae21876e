"""``mediadriver record``, ``replay`` and ``datasets`` as a user runs them: subprocesses against a real service
(docs/service.md section 7)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.wait import wait_for
from tests.support.service_env import Publisher, Receiver, ServiceEnv, start_service_env, stop_service_env


def mediadriver(
    *args: str, env: dict[str, str] | None = None, timeout_s: float = 60
) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "MEDIADRIVER_HTTP_TOKEN"}
    return subprocess.run(
        [sys.executable, "-m", "driver", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**environ, **(env or {})},
    )


@pytest.mark.slow  # eight CLI processes
def test_record_replay_export_import_from_the_command_line(service_env: ServiceEnv, tmp_path: Path) -> None:
    env = service_env
    url = ["--url", env.url, "--archive-dir", str(env.archive_dir)]
    publisher = Publisher(env, "aeron:ipc", 1001, 0.0005)
    publisher.start()
    try:
        done = mediadriver(
            "record",
            "start",
            "--stream",
            "aeron:ipc",
            "1001",
            "--count",
            "300",
            "--name",
            "cli",
            "--wait",
            *url,
        )
    finally:
        publisher.stop()
    assert done.returncode == 0, done.stderr
    # Progress lines, then the final one: the whole count, done.
    last = done.stdout.strip().splitlines()[-1]
    assert " done: 300/300 messages" in last, done.stdout
    dataset_id = last.split()[1]

    listing = mediadriver("datasets", "list", *url)
    assert listing.returncode == 0, listing.stderr
    header, row = listing.stdout.strip().splitlines()
    assert header.split()[:4] == ["ID", "NAME", "MESSAGES", "SIZE"]
    assert row.split()[:3] == [dataset_id, "cli", "300"]

    receiver = Receiver(env, "aeron:ipc", 2001)
    try:
        replay = mediadriver(
            "replay", "start", dataset_id, "--rate", "20", "--stream-id", "2001", "--wait", *url
        )
        assert replay.returncode == 0, replay.stderr
        assert "done: 300 messages" in replay.stdout and "round 1/1 done" in replay.stdout
        wait_for(lambda: len(receiver.received) >= 300, 5, "the replayed messages")
        assert receiver.payloads == publisher.sent[publisher.sent.index(receiver.payloads[0]) :][:300]
    finally:
        receiver.close()

    exported = mediadriver(
        "datasets", "export", dataset_id, "--compression", "ZIP", "-o", str(tmp_path), *url
    )
    assert exported.returncode == 0, exported.stderr
    path = Path(exported.stdout.strip())
    assert path.parent == tmp_path and path.name.endswith(".zip") and path.read_bytes()[:2] == b"PK"
    assert "exported" in exported.stderr and not list(tmp_path.glob("*.part"))

    imported = mediadriver("datasets", *url, "import", str(path), "--replace")
    assert imported.returncode == 0, imported.stderr
    assert "imported" in imported.stderr and ": 300 messages" in imported.stdout
    # --replace: the original of the same name is gone, the import took its place.
    datasets = env.client.get("/api/v1/datasets").json()["datasets"]
    assert [(d["name"], d["imported_from"]) for d in datasets] == [("cli", dataset_id)]

    shown = mediadriver("datasets", "show", datasets[0]["id"], *url)
    assert shown.returncode == 0 and f'"imported_from": "{dataset_id}"' in shown.stdout
    deleted = mediadriver("datasets", "delete", datasets[0]["id"], *url)
    assert deleted.returncode == 0 and deleted.stdout.startswith(f"deleted {datasets[0]['id']}")
    assert env.client.get("/api/v1/datasets").json() == {"datasets": []}


def test_errors_print_the_api_message_and_exit_non_zero(service_env: ServiceEnv) -> None:
    url = ["--url", service_env.url, "--archive-dir", str(service_env.archive_dir)]
    unknown = mediadriver("replay", "start", "nope", *url)
    assert unknown.returncode == 1
    assert unknown.stderr.strip() == "mediadriver: 404 Not Found: unknown data set 'nope'"

    bad_count = mediadriver("record", "start", "--stream", "aeron:ipc", "1", "--count", "-1", *url)
    assert bad_count.returncode == 1 and "422" in bad_count.stderr and "max_messages" in bad_count.stderr

    nothing = mediadriver("record", "stop", *url)
    assert nothing.returncode == 1 and "404 Not Found: no recording is running" in nothing.stderr

    unreachable = mediadriver("datasets", "list", "--url", "http://127.0.0.1:9")
    assert (
        unreachable.returncode == 1 and "cannot reach the service at http://127.0.0.1:9" in unreachable.stderr
    )

    # Not the service's archive dir: no token, and the error says where the CLI looked.
    elsewhere = mediadriver(
        "datasets", "--url", service_env.url, "--archive-dir", str(service_env.archive_dir.parent)
    )
    assert elsewhere.returncode == 1 and "401 Unauthorized" in elsewhere.stderr
    assert f"no token in {service_env.archive_dir.parent / 'http-token'}" in elsewhere.stderr


@pytest.mark.slow  # a service of its own
def test_the_token_comes_from_the_environment_or_a_file(tmp_path: Path) -> None:
    env, archive = start_service_env(tmp_path, token="s3cret")
    try:
        refused = mediadriver("datasets", "list", "--url", env.url)
        assert refused.returncode == 1 and "401 Unauthorized: missing or wrong bearer token" in refused.stderr
        from_env = mediadriver("record", "status", "--url", env.url, env={"MEDIADRIVER_HTTP_TOKEN": "s3cret"})
        assert from_env.returncode == 0 and from_env.stdout.startswith("recording - idle")
        token_file = tmp_path / "token"
        token_file.write_text("s3cret\n")
        from_file = mediadriver("datasets", "--url", env.url, "--token-file", str(token_file))
        assert from_file.returncode == 0 and from_file.stdout.startswith("ID")
    finally:
        stop_service_env(env, archive)


def test_a_rolling_capture_from_the_command_line(service_env: ServiceEnv) -> None:
    env = service_env
    url = ["--url", env.url, "--archive-dir", str(env.archive_dir)]
    bad = mediadriver("record", "start", "--stream", "aeron:ipc", "1001", "--rotate-every", "0.1", *url)
    assert bad.returncode == 1 and "422" in bad.stderr and "rotate.every_s" in bad.stderr, bad.stderr
    publisher = Publisher(env, "aeron:ipc", 1001, 0.0005)
    publisher.start()
    try:
        started = mediadriver(
            "record",
            "start",
            "--stream",
            "aeron:ipc",
            "1001",
            "--rotate-bytes",
            "65536",
            "--name",
            "ring",
            *url,
        )
        assert started.returncode == 0, started.stderr
        assert "data set 1 (" in started.stdout and "0 cut, 0 dropped" in started.stdout, started.stdout

        def cuts() -> int:
            found = re.search(r"(\d+) cut, \d+ dropped", mediadriver("record", "status", *url).stdout)
            return int(found.group(1)) if found else 0

        wait_for(lambda: cuts() >= 2, 60, "two cuts in the status line", interval=0.2)
        stopped = mediadriver("record", "stop", *url)
    finally:
        publisher.stop()
    assert stopped.returncode == 0 and " cancelled: " in stopped.stdout, stopped.stdout
