"""Hostile imports (docs/service.md section 6): a manifest that names a file outside the upload, links, and
compressed bombs are refused with a 400 naming what is wrong, before any byte of them reaches the archive or an
export, and a bomb before more than a few megabytes are written."""

from __future__ import annotations

import gzip
import io
import json
import os
import tarfile
import zlib
from pathlib import Path

import pytest

from tests.service.test_transfer import record_dataset
from tests.support.service_env import API, ServiceEnv

SECRET = b"TOP-SECRET-c0ffee-" * 8
BOMB_BYTES = 1 << 30


def _members(exported: bytes) -> list[tuple[tarfile.TarInfo, bytes]]:
    with tarfile.open(fileobj=io.BytesIO(exported)) as tar:
        return [(info, tar.extractfile(info).read()) for info in tar]  # type: ignore[union-attr]


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return out.getvalue()


def _with_manifest(exported: bytes, edit) -> bytes:
    members = _members(exported)
    manifest = json.loads(members[0][1])
    edit(manifest["recordings"][0])
    return _tar([(members[0][0], json.dumps(manifest).encode()), *members[1:]])


def _wrote_bytes() -> int:
    """Bytes this process (the service runs in it) has written with write(2) so far."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/self/io")


def _no_secret_anywhere(env: ServiceEnv) -> None:
    for path in env.archive_dir.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_bytes(), path
    for dataset in env.client.get(f"{API}/datasets").json()["datasets"]:
        exported = env.client.get(f"{API}/datasets/{dataset['id']}/export").content
        assert SECRET not in exported


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret"
    path.write_bytes(SECRET)
    return path


def test_a_manifest_naming_a_file_outside_the_upload_is_refused(
    service_env: ServiceEnv, secret: Path
) -> None:
    env = service_env
    dataset = record_dataset(env)
    exported = env.client.get(f"{API}/datasets/{dataset['id']}/export").content
    relative = os.path.relpath(secret, env.archive_dir / "datasets" / ".import-x" / "unpacked")
    cases = {
        str(secret): ("index", str(secret)),
        relative: ("index", relative),
        "frames " + relative: ("frames", relative),
        "recordings/../../x.idx": ("index", "recordings/../../x.idx"),
    }
    for label, (field, path) in cases.items():
        body = _with_manifest(exported, lambda entry, f=field, p=path: entry.__setitem__(f, p))
        response = env.client.post(f"{API}/datasets/import", content=body)
        assert response.status_code == 400, (label, response.text)
        assert repr(path) in response.json()["error"] and "not a plain name" in response.json()["error"]
    _no_secret_anywhere(env)
    assert len(env.client.get(f"{API}/datasets").json()["datasets"]) == 1


def test_links_in_the_upload_are_refused(service_env: ServiceEnv, secret: Path) -> None:
    env = service_env
    dataset = record_dataset(env)
    members = _members(env.client.get(f"{API}/datasets/{dataset['id']}/export").content)
    index = next(i for i, (info, _) in enumerate(members) if info.name.endswith(".idx"))
    for kind, target in ((tarfile.SYMTYPE, str(secret)), (tarfile.LNKTYPE, "manifest.json")):
        link = tarfile.TarInfo(members[index][0].name)
        link.type, link.linkname = kind, target
        body = _tar([*members[:index], (link, None), *members[index + 1 :]])
        response = env.client.post(f"{API}/datasets/import", content=body)
        assert response.status_code == 400, response.text
        assert f"{link.name!r} is not a regular file" in response.json()["error"]
    # A zip entry stored with a symlink's mode.
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for info, data in members:
            entry = zipfile.ZipInfo(info.name)
            if info.name.endswith(".idx"):
                entry.external_attr = 0o120777 << 16
                data = str(secret).encode()
            zf.writestr(entry, data)
    response = env.client.post(f"{API}/datasets/import", params={"filename": "a.zip"}, content=out.getvalue())
    assert response.status_code == 400 and "is not a regular file" in response.json()["error"], response.text
    _no_secret_anywhere(env)


def _gzip_stream(parts) -> bytes:
    """A gzip of the concatenated ``parts`` (bytes, or (count, block) repeated), made without holding it whole."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [b""]
    for part in parts:
        if isinstance(part, bytes):
            out.append(compressor.compress(part))
        else:
            count, block = part
            for _ in range(count):
                out.append(compressor.compress(block))
    out.append(compressor.flush())
    return b"".join(out)


def _header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    return info.tobuf(format=tarfile.PAX_FORMAT)


@pytest.mark.parametrize("bomb", ["no manifest first", "entry larger than declared", "declared and filler"])
def test_a_compressed_bomb_is_refused_before_64_mib_are_written(service_env: ServiceEnv, bomb: str) -> None:
    env = service_env
    dataset = record_dataset(env)
    members = _members(env.client.get(f"{API}/datasets/{dataset['id']}/export").content)
    manifest = json.loads(members[0][1])
    zeros = (BOMB_BYTES >> 20, bytes(1 << 20))
    if bomb == "no manifest first":
        parts = [_header("recordings/0.frames", BOMB_BYTES), zeros]
    else:
        entry = manifest["recordings"][0]
        if bomb == "declared and filler":  # an honest manifest for a gigabyte of zeros
            entry["stop_position"] = entry["start_position"] + BOMB_BYTES
        data = json.dumps(manifest).encode()
        parts = [_header("manifest.json", len(data)), data + bytes(-len(data) % 512)]
        parts += [_header(entry["frames"], BOMB_BYTES), zeros]
    body = _gzip_stream(parts)
    assert len(body) < 1_100_000
    before = _wrote_bytes()
    response = env.client.post(f"{API}/datasets/import", params={"filename": "bomb.tar.gz"}, content=body)
    written = _wrote_bytes() - before
    assert response.status_code == 400, response.text
    assert written < 64 << 20, f"{written} bytes written for a {len(body)}-byte upload"
    expected = {
        "no manifest first": "first entry is 'recordings/0.frames', not manifest.json",
        "entry larger than declared": f"entry 'recordings/0.frames' is {BOMB_BYTES} bytes where manifest.json",
        "declared and filler": "recordings/0.frames holds no frame of term",
    }[bomb]
    assert expected in response.json()["error"]
    assert [p.name for p in (env.archive_dir / "datasets").iterdir() if not p.name.endswith(".json")] == []


def test_a_manifest_declaring_more_than_the_disk_holds_is_refused(service_env: ServiceEnv) -> None:
    env = service_env
    dataset = record_dataset(env)
    exported = env.client.get(f"{API}/datasets/{dataset['id']}/export").content
    huge = 1 << 50

    def edit(entry: dict) -> None:
        entry["stop_position"] = entry["start_position"] + huge

    response = env.client.post(
        f"{API}/datasets/import", content=gzip.compress(_with_manifest(exported, edit))
    )
    assert response.status_code in (413, 507), response.text
    assert "larger than" in response.json()["error"] or "free" in response.json()["error"]
