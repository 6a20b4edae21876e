"""The archive's files follow the driver's file-permission policy (docs/archive.md section 15, docs/getting-started.md "Sharing
the aeron dir"): the archive dir it creates 0700 and archive.catalog, archive-mark.dat and segment files 0600
whatever the umask, a group's 0770/0660 with ``aeron.dir.group``; embedded, it takes the driver's policy unless
its own settings say otherwise."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from driver.archive.archive_context import ArchiveConfigurationError, ArchiveContext
from driver.archive.archive_mark_file import FILENAME as MARK_FILE
from driver.archive.catalog import CATALOG_FILE_NAME
from driver.archive.segment_file import segment_path
from driver.context import DriverContext
from driver.util.files import FilePermissions
from tests.archive.test_archive_server import record
from tests.support.archive_env import archive_env

GID = os.getegid()
"""A group every test run may give its files to: the user's own (a chown to another needs root)."""


@pytest.fixture
def open_umask() -> Iterator[None]:
    """umask 000: what the archive creates must not depend on the umask."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def modes(archive_dir: Path, recording_id: int) -> dict[str, tuple[int, int]]:
    """(mode, gid) of the archive dir and of each file the archive created in it."""
    paths = {
        "dir": archive_dir,
        "catalog": archive_dir / CATALOG_FILE_NAME,
        "mark": archive_dir / MARK_FILE,
        "segment": segment_path(archive_dir, recording_id, 0),
    }
    return {name: (stat.S_IMODE(p.stat().st_mode), p.stat().st_gid) for name, p in paths.items()}


def test_archive_files_are_private_by_default_whatever_the_umask(tmp_path: Path, open_umask: None) -> None:
    archive_dir = tmp_path / "new" / "archive"
    with archive_env(tmp_path, archive_dir) as env:
        recording_id, _ = record(env, "aeron:ipc", 7001, 10, 200)
        found = modes(archive_dir, recording_id)
    gid = found["dir"][1]
    assert found == {
        "dir": (0o700, gid),
        "catalog": (0o600, gid),
        "mark": (0o600, gid),
        "segment": (0o600, gid),
    }


def test_a_group_setting_shares_the_archive_with_that_group(tmp_path: Path, open_umask: None) -> None:
    ctx = ArchiveContext.from_sources({}, {"aeron.dir.group": str(GID)}, {})
    assert ctx.file_permissions == FilePermissions(0o770, 0o660, GID)
    archive_dir = tmp_path / "archive"
    with archive_env(tmp_path, archive_dir, dir_group=ctx.dir_group) as env:
        recording_id, _ = record(env, "aeron:ipc", 7002, 10, 200)
        found = modes(archive_dir, recording_id)
    assert found == {
        "dir": (0o770, GID),
        "catalog": (0o660, GID),
        "mark": (0o660, GID),
        "segment": (0o660, GID),
    }


def test_the_archive_reads_the_drivers_properties_as_the_driver_does() -> None:
    for properties in (
        {},
        {"aeron.dir.group": str(GID)},
        {"aeron.dir.group": str(GID), "aeron.file.mode": "0640"},
        {"aeron.dir.mode": "750", "aeron.file.mode": "0640"},
    ):
        archive = ArchiveContext.from_sources({}, properties, {}).file_permissions
        assert archive == DriverContext.from_sources({}, properties, {}).file_permissions, properties
    environ = {"AERON_DIR_GROUP": str(GID), "AERON_DIR_MODE": "0750"}
    assert ArchiveContext.from_sources({}, {}, environ).file_permissions == FilePermissions(0o750, 0o660, GID)
    with pytest.raises(ArchiveConfigurationError, match=r"aeron\.file\.mode"):
        ArchiveContext.from_sources({}, {"aeron.file.mode": "rw-"}, {})
    with pytest.raises(ArchiveConfigurationError, match=r"aeron\.dir\.group"):
        ArchiveContext.from_sources({}, {"aeron.dir.group": "no-such-group-here"}, {})


def test_embedded_the_archive_takes_the_drivers_policy(tmp_path: Path, open_umask: None) -> None:
    archive_dir = tmp_path / "archive"
    driver_settings = {"dir_group": GID, "dir_mode": 0o750, "file_mode": 0o640}
    with archive_env(tmp_path, archive_dir, driver_settings=driver_settings) as env:
        assert env.archive.ctx.file_permissions == env.driver.driver.permissions
        recording_id, _ = record(env, "aeron:ipc", 7003, 10, 200)
        found = modes(archive_dir, recording_id)
    assert found == {
        "dir": (0o750, GID),
        "catalog": (0o640, GID),
        "mark": (0o640, GID),
        "segment": (0o640, GID),
    }


def test_embedded_the_archives_own_settings_win(tmp_path: Path, open_umask: None) -> None:
    archive_dir = tmp_path / "archive"
    driver_settings = {"dir_group": GID, "file_mode": 0o660}
    with archive_env(tmp_path, archive_dir, driver_settings=driver_settings, file_mode=0o600) as env:
        assert env.archive.ctx.file_permissions == FilePermissions(0o770, 0o600, GID)
        recording_id, _ = record(env, "aeron:ipc", 7004, 10, 200)
        found = modes(archive_dir, recording_id)
    assert found == {
        "dir": (0o770, GID),
        "catalog": (0o600, GID),
        "mark": (0o600, GID),
        "segment": (0o600, GID),
    }


def test_an_existing_archive_dir_keeps_the_mode_its_owner_gave_it(tmp_path: Path, open_umask: None) -> None:
    archive_dir = tmp_path / "archive"
    archive_dir.mkdir(mode=0o755)
    with archive_env(tmp_path, archive_dir) as env:
        recording_id, _ = record(env, "aeron:ipc", 7005, 10, 200)
        found = modes(archive_dir, recording_id)
    assert found["dir"][0] == 0o755
    assert {found[name][0] for name in ("catalog", "mark", "segment")} == {0o600}
