"""Data set manifests on disk: ``<archive dir>/datasets/<id>.json``, each written whole to a temporary file and
renamed into place, so a reader never sees half a manifest and a crash leaves none (docs/service.md section 3)."""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

from driver.service.models import DataSet

DATASETS_DIR = "datasets"
_ID = re.compile(r"^[0-9a-f]{12}$")


def new_dataset_id() -> str:
    return secrets.token_hex(6)


class DataSetStore:
    def __init__(self, archive_dir: str | os.PathLike[str]) -> None:
        self.dir = Path(archive_dir) / DATASETS_DIR
        self.dir.mkdir(parents=True, exist_ok=True)

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
        tmp.write_text(dataset.model_dump_json(indent=2))
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
