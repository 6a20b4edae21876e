"""The aeron dir and the archive dir as a mount point (a tmpfs, as a container's memory-backed volume gives
them): the driver and the archive clear what they made in it and use it, and leave the mount and what others
put there alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from driver.archive.archive import owns_entry
from driver.context import DriverContext
from driver.media_driver import AERON_DIR_ENTRIES, MediaDriver
from driver.util.files import is_mount_point
from harness.children import wait_ready
from harness.cnc import cnc_ready, read_cnc_header
from tests.support.archive_env import archive_env
from tests.support.service_env import API, start_service_env, stop_service_env
from tests.support.tmpfs import mounted_tmpfs


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "shm", "64m") as mount_point:
        (mount_point / "not-the-drivers.txt").write_text("the operator's")
        yield mount_point


def _start(directory: Path, *props: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "driver", "run", "--dir", str(directory), *props],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_ready(proc, lambda: _ready(directory, proc.pid), 30)
    return proc


def _ready(directory: Path, pid: int) -> bool:
    """cnc.dat ready and written by the driver of ``pid``, not one before it on the same dir."""
    header = read_cnc_header(directory)
    return header is not None and header.pid == pid and cnc_ready(directory)


def _stop(proc: subprocess.Popen[str], sig: signal.Signals = signal.SIGTERM) -> tuple[int, str]:
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=10)
    return proc.returncode, err


def test_a_driver_on_a_mount_point_starts_restarts_and_stops_leaving_the_mount(mount: Path) -> None:
    first = _start(mount)
    assert set(os.listdir(mount)) >= AERON_DIR_ENTRIES
    assert _stop(first) == (0, "")
    # A restart on what the first one left (Aeron keeps the dir by default): the files are made anew.
    second = _start(mount, "-Daeron.dir.delete.on.shutdown=true")
    code, err = _stop(second)
    assert (code, err) == (0, "")
    assert is_mount_point(mount)
    assert os.listdir(mount) == ["not-the-drivers.txt"]  # its files went with it; the operator's stayed


def test_a_driver_restarts_on_a_mount_point_after_kill_9(mount: Path) -> None:
    first = _start(mount)
    first.kill()
    first.communicate()
    refused = subprocess.run(
        [sys.executable, "-m", "driver", "run", "--dir", str(mount)], capture_output=True, text=True, timeout=20
    )
    assert refused.returncode == 1
    [line] = refused.stderr.splitlines()
    assert line.startswith(f"mediadriver: active driver detected in {mount}: pid {first.pid} is gone")
    assert "-Daeron.dir.delete.on.start=true (safe unless" in line
    second = _start(mount, "-Daeron.dir.delete.on.start=true", "-Daeron.dir.delete.on.shutdown=true")
    assert _stop(second) == (0, "")
    assert os.listdir(mount) == ["not-the-drivers.txt"]


def test_an_embedded_driver_with_delete_on_shutdown_keeps_the_mount(mount: Path) -> None:
    ctx = DriverContext(aeron_dir=str(mount), dir_delete_on_shutdown=True, dir_mode=0o750)
    with MediaDriver(ctx):
        assert (mount / "cnc.dat").is_file()
        assert mount.stat().st_mode & 0o777 == 0o750  # the mount's mode follows the driver's policy
    assert os.listdir(mount) == ["not-the-drivers.txt"]


def test_the_archive_dir_on_a_mount_point_is_cleared_on_start_and_reused(tmp_path: Path, mount: Path) -> None:
    with archive_env(tmp_path, mount) as env:
        env.aeron.add_publication("aeron:ipc", 1)  # a running archive over its files
        made = set(os.listdir(mount))
    assert {"archive.catalog", "archive-mark.dat"} <= made
    # Restarted over its files, kept: the same catalog is opened.
    with archive_env(tmp_path, mount):
        assert {"archive.catalog", "archive-mark.dat"} <= set(os.listdir(mount))
    (mount / "7-0.rec").write_bytes(b"")
    (mount / "7.crc").write_bytes(b"")
    with archive_env(tmp_path, mount, delete_archive_on_start=True):
        assert is_mount_point(mount)
        assert not (mount / "7-0.rec").exists() and not (mount / "7.crc").exists()
        assert (mount / "archive.catalog").is_file()
    assert (mount / "not-the-drivers.txt").read_text() == "the operator's"


def test_the_archive_owns_only_its_files() -> None:
    assert all(map(owns_entry, ["archive.catalog", "archive-mark.dat", "12-0.rec", "12-3.rec", "12.crc", "12.idx"]))
    assert owns_entry("datasets") and owns_entry("http-token")  # the service's, which describe the recordings
    assert not any(map(owns_entry, ["notes.txt", "12.rec.bak", "lost+found", "cnc.dat"]))



def test_the_service_on_a_mounted_archive_dir_serves_and_starts_again_cleared(tmp_path: Path) -> None:
    with mounted_tmpfs(tmp_path / "archive", "64m") as mount:
        env, archive = start_service_env(tmp_path)
        try:
            assert env.client.get(f"{API}/datasets").status_code == 200
            assert {"datasets", "http-token", "archive.catalog"} <= set(os.listdir(mount))
        finally:
            stop_service_env(env, archive)
        env, archive = start_service_env(tmp_path, delete_archive_on_start=True)
        try:
            assert env.client.get(f"{API}/datasets").json()["datasets"] == []
            assert is_mount_point(mount)
        finally:
            stop_service_env(env, archive)


def test_a_bind_mount_on_the_same_file_system_is_kept_too(tmp_path: Path) -> None:
    source, target = tmp_path / "source", tmp_path / "aeron"
    source.mkdir()
    target.mkdir()
    (source / "keep.txt").write_text("x")
    bound = subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True, text=True)
    if bound.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {bound.stderr.strip()}")
    try:
        assert is_mount_point(target)  # on the same file system: os.path.ismount cannot see it
        with MediaDriver(DriverContext(aeron_dir=str(target), dir_delete_on_shutdown=True)):
            assert (source / "cnc.dat").is_file()  # the files are in the mount
        assert os.listdir(target) == ["keep.txt"]
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)
