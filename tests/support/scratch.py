"""Scratch dirs for fixtures that live as long as a module: pytest keeps a ``tmp_path_factory.mktemp`` dir until
the run ends (and its base dir for the next runs), and a module's recordings, segments and corpora take hundreds
of MB each, so together they filled the disk of a CI machine. A test's own ``tmp_path`` needs none of this: the
retention policy in pyproject.toml removes it when the test passes."""

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def scratch_dir(factory: pytest.TempPathFactory, name: str) -> Iterator[Path]:
    """A fresh dir from ``factory``, removed with everything in it when the block ends."""
    path = factory.mktemp(name)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
