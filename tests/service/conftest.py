"""Fixtures for the record & replay service (tests/support/service_env.py): ``service_env`` is our driver, archive
and HTTP service on one loop, with an httpx client and an Aeron client for the test's streams."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.service_env import ServiceEnv, start_service_env, stop_service_env


@pytest.fixture
def service_env(tmp_path: Path) -> Iterator[ServiceEnv]:
    env, archive = start_service_env(tmp_path)
    try:
        yield env
    finally:
        stop_service_env(env, archive)
