"""Export and import (docs/service.md section 6): round trips in each compression replay byte-identically with the
recorded timing; bad uploads are refused and leave nothing behind."""

from __future__ import annotations

import gzip
import io
import stat
import time
import zipfile

import pytest

from driver.archive.recording_index import read_index
from tests.support.service_env import API, Publisher, ServiceEnv, replay_payloads, wait_for_state


def record_dataset(env: ServiceEnv) -> dict:
    env.client.post(
        f"{API}/record",
        json={
            "streams": [
                {"channel": "aeron:ipc", "stream_id": 1001},
                {"channel": "aeron:ipc", "stream_id": 1002},
            ],
            "max_messages": 400,
            "name": "round trip",
        },
    )
    time.sleep(0.05)
    publishers = [Publisher(env, "aeron:ipc", sid, 0.0005) for sid in (1001, 1002)]
    big = Publisher(env, "aeron:ipc", 1001, 0.001, count=20, tag="big" + "x" * 5000)  # fragmented messages
    for p in (*publishers, big):
        p.start()
    status = wait_for_state(env, "record")
    for p in (*publishers, big):
        p.stop()
    return env.client.get(f"{API}/datasets/{status['dataset_id']}").json()


def replayed(env: ServiceEnv, dataset_id: str) -> dict[bytes, list[bytes]]:
    """The replayed messages of each publisher (their tag), in order: the streams interleave as timing has it."""
    received, _ = replay_payloads(
        env, {"dataset_id": dataset_id, "rate": 100, "stream_id": 2001}, "aeron:ipc", 2001
    )
    by_tag: dict[bytes, list[bytes]] = {}
    for _, payload in received:
        by_tag.setdefault(payload.split(b":")[0], []).append(payload)
    return by_tag


@pytest.mark.parametrize("compression", ["NONE", "ZIP", "GZIP"])
def test_export_then_import_replays_byte_identically(service_env: ServiceEnv, compression: str) -> None:
    env = service_env
    dataset = record_dataset(env)
    assert dataset["messages"] == 400
    response = env.client.get(f"{API}/datasets/{dataset['id']}/export", params={"compression": compression})
    assert response.status_code == 200, response.text
    exported = response.content
    if compression == "ZIP":
        assert zipfile.ZipFile(io.BytesIO(exported)).namelist()[0] == "manifest.json"
    elif compression == "GZIP":
        assert gzip.decompress(exported)[:100].startswith(b"manifest.json")
    # The file name tells the compression here; Content-Encoding would too (the GZIP case below uses it).
    filename = {"NONE": "x.tar", "ZIP": "x.zip", "GZIP": "x.bin"}[compression]
    headers = {"Content-Encoding": "gzip"} if compression == "GZIP" else {}
    imported = env.client.post(
        f"{API}/datasets/import", params={"filename": filename}, content=exported, headers=headers
    )
    assert imported.status_code == 201, imported.text
    copy = imported.json()
    assert (
        copy["id"] != dataset["id"]
        and copy["name"] == dataset["name"]
        and copy["imported_from"] == dataset["id"]
    )
    assert copy["messages"] == dataset["messages"]
    for a, b in zip(dataset["recordings"], copy["recordings"], strict=True):
        assert a["recording_id"] != b["recording_id"]
        assert (
            read_index(env.archive_dir, a["recording_id"]) == read_index(env.archive_dir, b["recording_id"])
        ).all()
    assert replayed(env, copy["id"]) == replayed(env, dataset["id"])
    names = [d["name"] for d in env.client.get(f"{API}/datasets").json()["datasets"]]
    assert names.count("round trip") == 2
    # Every file in the archive dir, the service's (manifests, imported indexes, its token) included, is 0600.
    modes = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in env.archive_dir.rglob("*") if p.is_file()}
    assert set(modes.values()) == {"0o600"}, modes


def test_import_replace_deletes_the_data_set_of_the_same_name(service_env: ServiceEnv) -> None:
    env = service_env
    dataset = record_dataset(env)
    exported = env.client.get(f"{API}/datasets/{dataset['id']}/export").content
    copy = env.client.post(
        f"{API}/datasets/import", params={"on_conflict": "replace"}, content=exported
    ).json()
    ids = [d["id"] for d in env.client.get(f"{API}/datasets").json()["datasets"]]
    assert ids == [copy["id"]]
    assert env.client.get(f"{API}/datasets/{dataset['id']}").status_code == 404


def _nothing_left(env: ServiceEnv, before: list[dict]) -> None:
    assert env.client.get(f"{API}/datasets").json()["datasets"] == before
    assert [p.name for p in (env.archive_dir / "datasets").iterdir() if not p.name.endswith(".json")] == []


def test_bad_uploads_are_refused_and_leave_nothing_behind(service_env: ServiceEnv) -> None:
    env = service_env
    dataset = record_dataset(env)
    before = env.client.get(f"{API}/datasets").json()["datasets"]
    exported = env.client.get(
        f"{API}/datasets/{dataset['id']}/export", params={"compression": "GZIP"}
    ).content

    # A truncated gzip.
    response = env.client.post(
        f"{API}/datasets/import", params={"filename": "a.tar.gz"}, content=exported[: len(exported) // 2]
    )
    assert response.status_code == 400 and "corrupt or truncated" in response.json()["error"]
    _nothing_left(env, before)

    # A zip whose entry points outside.
    evil = io.BytesIO()
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("manifest.json", "{}")
        zf.writestr("../../escape.txt", "x")
    response = env.client.post(
        f"{API}/datasets/import", params={"filename": "a.zip"}, content=evil.getvalue()
    )
    assert response.status_code == 400 and "'../../escape.txt' points outside" in response.json()["error"]
    assert not (env.archive_dir.parent / "escape.txt").exists()
    _nothing_left(env, before)

    # A frames file cut short inside a well-formed tar: the manifest's sizes catch it.
    raw = gzip.decompress(exported)
    response = env.client.post(f"{API}/datasets/import", content=raw[:-4096])
    assert response.status_code == 400, response.text
    _nothing_left(env, before)

    # Not an archive at all, and an empty body.
    for body in (b"hello" * 100, b""):
        response = env.client.post(f"{API}/datasets/import", content=body)
        assert response.status_code == 400, response.text
    _nothing_left(env, before)


def test_export_of_an_unknown_data_set_or_compression(service_env: ServiceEnv) -> None:
    env = service_env
    response = env.client.get(f"{API}/datasets/000000000000/export")
    assert response.status_code == 404 and "unknown data set" in response.json()["error"]
    dataset = record_dataset(env)
    response = env.client.get(f"{API}/datasets/{dataset['id']}/export", params={"compression": "RAR"})
    assert response.status_code == 422 and "compression" in response.json()["error"]
