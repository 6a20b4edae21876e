"""Bad input gets the right 4xx with JSON naming the field or the reason, and changes nothing (docs/service.md
section 2); the bearer token; data set deletion."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import httpx
import pytest

from tests.support.service_env import (
    API,
    Publisher,
    ServiceEnv,
    record,
    start_service_env,
    stop_service_env,
    wait_for_state,
)

STREAMS = [{"channel": "aeron:ipc", "stream_id": 1001}]


@pytest.mark.parametrize(
    ("path", "body", "status", "names"),
    [
        ("record", b'{"streams": [', 400, "malformed JSON"),
        ("record", b"not json", 400, "malformed JSON"),
        ("record", {"streams": STREAMS, "duration_s": 1, "colour": "red"}, 422, "colour"),
        ("record", {"duration_s": 1}, 422, "streams"),
        ("record", {"streams": STREAMS}, 422, "duration_s or max_messages is required"),
        ("record", {"streams": STREAMS, "max_messages": -5}, 422, "max_messages"),
        ("record", {"streams": STREAMS, "duration_s": -1}, 422, "duration_s"),
        ("record", {"streams": [{"channel": "aeron:ipc"}], "duration_s": 1}, 422, "streams.0.stream_id"),
        (
            "record",
            {"streams": STREAMS, "duration_s": 1, "include": {"stream_id": [1]}},
            422,
            "include.stream_id",
        ),
        (
            "record",
            {"streams": [{"channel": "aeron:bogus", "stream_id": 1}], "duration_s": 1},
            422,
            "streams.0.channel: Value error, not an Aeron channel",
        ),
        ("replay", {"dataset_id": "abc", "channel": "udp://x"}, 422, "channel"),
        ("replay", {"dataset_id": "abc", "rate": 0}, 422, "rate"),
        ("replay", {"dataset_id": "abc", "rate": -2}, 422, "rate"),
        ("replay", {"dataset_id": "abc", "repeat": 0}, 422, "repeat"),
        ("replay", {"rate": 1}, 422, "dataset_id"),
        (
            "replay",
            {"dataset_id": "abc", "time_range": {"start_s": 2, "end_s": 1}},
            422,
            "end_s must be after",
        ),
        ("replay", {"dataset_id": "0123456789ab"}, 404, "unknown data set '0123456789ab'"),
        ("replay", {"dataset_id": "../../etc"}, 404, "unknown data set"),
    ],
)
def test_bad_requests(service_env: ServiceEnv, path: str, body, status: int, names: str) -> None:
    env = service_env
    if isinstance(body, bytes):
        response = env.client.post(
            f"{API}/{path}", content=body, headers={"content-type": "application/json"}
        )
    else:
        response = env.client.post(f"{API}/{path}", json=body)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert names in response.json()["error"]
    # Nothing started, nothing written.
    assert env.client.get(f"{API}/{path}").json()["state"] == "idle"
    assert env.client.get(f"{API}/datasets").json() == {"datasets": []}


def test_unknown_data_sets_and_routes(service_env: ServiceEnv) -> None:
    env = service_env
    for method, path in (
        ("GET", "datasets/0123456789ab"),
        ("DELETE", "datasets/0123456789ab"),
        ("GET", "nothing-here"),
    ):
        response = env.client.request(method, f"{API}/{path}")
        assert response.status_code == 404 and response.json()["error"]
    assert env.client.delete(f"{API}/record").status_code == 404
    assert env.client.delete(f"{API}/replay").json()["error"] == "no replay is running"


def test_an_oversized_body_is_413(service_env: ServiceEnv) -> None:
    response = service_env.client.post(
        f"{API}/record", content=b" " * (2 << 20), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413 and "request body over" in response.json()["error"]
    chunked = service_env.client.post(
        f"{API}/record", content=iter([b'{"streams": []}']), headers={"content-type": "application/json"}
    )
    assert chunked.status_code == 411 and "Content-Length" in chunked.json()["error"]


def test_deleting_a_data_set_removes_it_and_empties_its_recordings(service_env: ServiceEnv) -> None:
    env = service_env
    env.client.post(f"{API}/record", json={"streams": STREAMS, "max_messages": 50})
    publisher = Publisher(env, "aeron:ipc", 1001, 0.0005)
    publisher.start()
    dataset_id = wait_for_state(env, "record")["dataset_id"]
    publisher.stop()
    dataset = env.client.get(f"{API}/datasets/{dataset_id}").json()
    recording_id = dataset["recordings"][0]["recording_id"]
    assert list(env.archive_dir.glob(f"{recording_id}-*.rec"))
    assert env.client.delete(f"{API}/datasets/{dataset_id}").json()["id"] == dataset_id
    assert env.client.get(f"{API}/datasets/{dataset_id}").status_code == 404
    assert not list(env.archive_dir.glob(f"{recording_id}-*.rec"))


def test_a_bearer_token_guards_every_route(tmp_path: Path) -> None:
    env, archive = start_service_env(tmp_path, token="s3cret")
    try:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
            response = env.client.get(f"{API}/datasets", headers=headers)
            assert response.status_code == 401 and "bearer token" in response.json()["error"]
            assert (
                env.client.post(
                    f"{API}/record", json={"streams": STREAMS, "duration_s": 1}, headers=headers
                ).status_code
                == 401
            )
        ok = env.client.get(f"{API}/datasets", headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200
    finally:
        stop_service_env(env, archive)


def test_without_a_token_configured_the_service_makes_one_for_its_owner(tmp_path: Path) -> None:
    env, archive = start_service_env(tmp_path)
    try:
        token_file = env.archive_dir / "http-token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert env.owner_token and token_file.read_text().strip() == env.owner_token
        assert "MEDIADRIVER_HTTP_TOKEN" not in os.environ
        with httpx.Client(base_url=env.url, timeout=10) as stranger:
            for headers in ({}, {"Authorization": "Bearer wrong"}):
                assert stranger.get(f"{API}/status", headers=headers).status_code == 401
                response = stranger.post(
                    f"{API}/record", json={"streams": STREAMS, "duration_s": 1}, headers=headers
                )
                assert response.status_code == 401
            assert stranger.get("/openapi.json").status_code == 200  # the description holds no data
        assert env.client.get(f"{API}/status").status_code == 200
    finally:
        stop_service_env(env, archive)
    assert not token_file.exists()


def test_http_no_auth_opens_the_api_explicitly(tmp_path: Path) -> None:
    env, archive = start_service_env(tmp_path, no_auth=True)
    try:
        assert not (env.archive_dir / "http-token").exists()
        with httpx.Client(base_url=env.url, timeout=10) as anyone:
            assert anyone.get(f"{API}/status").status_code == 200
    finally:
        stop_service_env(env, archive)


def test_requests_are_strictly_typed(service_env: ServiceEnv) -> None:
    env = service_env
    bad = [
        ({"streams": [{"channel": "aeron:ipc", "stream_id": True}], "duration_s": 1}, "streams.0.stream_id"),
        ({"streams": [{"channel": "aeron:ipc", "stream_id": "99"}], "duration_s": 1}, "streams.0.stream_id"),
        ({"streams": STREAMS, "duration_s": "0.1"}, "duration_s"),
        ({"streams": STREAMS, "duration_s": 1, "exclude": {"stream_ids": [False]}}, "exclude.stream_ids.0"),
    ]
    for body, field in bad:
        response = env.client.post(f"{API}/record", json=body)
        assert response.status_code == 422 and response.json()["error"].startswith(field), response.text
    response = env.client.post(f"{API}/replay", json={"dataset_id": "x", "rate": "2"})
    assert response.status_code == 422 and "rate" in response.json()["error"]
    assert env.client.get(f"{API}/record").json()["state"] == "idle"


def test_a_405_says_what_is_allowed(service_env: ServiceEnv) -> None:
    response = service_env.client.put(f"{API}/record", json={})
    assert response.status_code == 405
    assert set(response.headers["allow"].replace(" ", "").split(",")) == {"GET", "POST", "DELETE"}


def test_a_replay_into_the_archives_own_streams_is_refused_naming_the_clash(service_env: ServiceEnv) -> None:
    env = service_env
    publisher = Publisher(env, "aeron:ipc", 1001, 0.001)
    publisher.start()
    try:
        dataset = record(env, {"streams": STREAMS, "max_messages": 20})
    finally:
        publisher.stop()
    local_control = {"channel": "aeron:ipc", "stream_id": 11}
    for target, clash in (
        (local_control, "is the archive's local control requests (aeron:ipc stream 11)"),
        ({"stream_id": 11}, "is the archive's local control requests"),  # the recording's own channel, IPC
        ({"stream_id": 0x7E5E0001}, "the service's own range of IPC streams"),
    ):
        response = env.client.post(f"{API}/replay", json={"dataset_id": dataset["id"], **target})
        assert response.status_code == 409 and clash in response.json()["error"], response.text
    events = env.http.service.reserved[2]
    response = env.client.post(
        f"{API}/replay",
        json={"dataset_id": dataset["id"], "channel": events.channel, "stream_id": events.stream_id},
    )
    assert response.status_code == 409 and "the archive's recording events" in response.json()["error"]
    assert env.client.get(f"{API}/replay").json()["state"] == "idle"
