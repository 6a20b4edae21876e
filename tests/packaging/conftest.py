"""``dist``: the sdist and manylinux wheel of this tree, built once per session as `make dist` builds them."""

from __future__ import annotations

import pytest

from harness.dist import Dist, build


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    return build(tmp_path_factory.mktemp("dist"))
