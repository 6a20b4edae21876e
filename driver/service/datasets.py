"""Data set manifests on disk: ``<archive dir>/datasets/<id>.json``, each written whole to a temporary file and
renamed into place, so a reader never sees half a manifest and a crash leaves none (docs/service.md section 3).

Every file the service writes takes the archive's own file mode (its catalog's: 0600 unless the archive was set
to share its dir with a group), whatever the umask, as the archive's files do."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
from pathlib import Path
from typing import BinaryIO

from driver.archive.catalog import CATALOG_FILE_NAME
from driver.service.models import DataSet
from driver.util.files import DEFAULT_DIR_MODE, DEFAULT_FILE_MODE

DATASETS_DIR = "datasets"
_ID = re.compile(r"^[0-9a-f]{12}$")


def new_dataset_id() -> str:
    return secrets.token_hex(6)


def archive_modes(archive_dir: Path) -> tuple[int, int]:
    """(dir mode, file mode) of the archive: its dir's and its catalog's, the defaults where they are absent."""
    try:
        dir_mode = stat.S_IMODE(archive_dir.stat().st_mode)
    except OSError:
        dir_mode = DEFAULT_DIR_MODE
    try:
        file_mode = stat.S_IMODE((archive_dir / CATALOG_FILE_NAME).stat().st_mode)
    except OSError:
        file_mode = DEFAULT_FILE_MODE
    return dir_mode, file_mode


def create_file(path: Path, mode: int, exclusive: bool = False) -> BinaryIO:
    """``path`` opened for writing with exactly ``mode`` (the umask does not apply)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (os.O_EXCL if exclusive else 0) | os.O_NOFOLLOW
    fd = os.open(path, flags, mode)
    try:
        os.fchmod(fd, mode)
        return os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise


class DataSetStore:
    def __init__(self, archive_dir: str | os.PathLike[str]) -> None:
        self.dir = Path(archive_dir) / DATASETS_DIR
        self.dir_mode, self.file_mode = archive_modes(Path(archive_dir))
        self.dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(PermissionError):  # made by another member of the archive's group
            os.chmod(self.dir, self.dir_mode)

    def create(self, path: Path, exclusive: bool = False) -> BinaryIO:
        """A file the service writes (a manifest, an import's parts, an index), with the archive's file mode."""
        return create_file(path, self.file_mode, exclusive)

    def _path(self, dataset_id: str) -> Path | None:
        return self.dir / f"{dataset_id}.json" if _ID.match(dataset_id) else None

    def new_id(self) -> str:
        while True:
            dataset_id = new_dataset_id()
            path = self._path(dataset_id)
            assert path is not None
            if not path.exists():
                return dataset_id

    def save(self, dataset: DataSet) -> None:
        path = self._path(dataset.id)
        assert path is not None
        tmp = path.with_suffix(".json.tmp")
        with self.create(tmp) as out:
            out.write(dataset.model_dump_json(indent=2).encode())
        os.replace(tmp, path)

    def get(self, dataset_id: str) -> DataSet | None:
        path = self._path(dataset_id)
        if path is None or not path.is_file():
            return None
        return DataSet.model_validate_json(path.read_text())

    def list(self) -> list[DataSet]:
        found = []
        for path in self.dir.glob("*.json"):
            try:
                found.append(DataSet.model_validate_json(path.read_text()))
            except (OSError, ValueError):
                continue  # a manifest edited by hand into something else is not a data set
        return sorted(found, key=lambda d: (d.created, d.id))

    def by_name(self, name: str) -> list[DataSet]:
        return [d for d in self.list() if d.name == name]

    def remove(self, dataset_id: str) -> bool:
        path = self._path(dataset_id)
        if path is None or not path.exists():
            return False
        path.unlink()
        return True
