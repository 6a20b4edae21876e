"""Client tests that run against both the fast path (driver/concurrent/logbuffer/fastpath.py) and the cffi
path take the ``client_path`` fixture: publications and images made during the test use that path. ``aeron``
is a client of an embedded driver on either path."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from driver.client import Aeron
from driver.concurrent.logbuffer import fastpath


@pytest.fixture(params=["fast", "cffi"])
def client_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "fast" and not fastpath.AVAILABLE:
        pytest.skip("the fast path extension is not built (make native)")
    monkeypatch.setattr(fastpath, "ENABLED", request.param == "fast")
    return request.param


@pytest.fixture
def aeron(embedded_driver, client_path: str) -> Iterator[Aeron]:
    driver = embedded_driver()
    with Aeron.connect(aeron_dir=driver.aeron_dir) as client:
        yield client
