"""A client's linger holds its log only while the client lives (a real driver, our client, real time)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from driver.client import Aeron
from harness.ports import free_port
from tests.support import EmbeddedDriver, wait_for

SATURATED = "linger=99999999999999999999s"  # accepted and saturated to the longest duration, as 1.15.1 does


def _channel(kind: str) -> str:
    if kind == "ipc":
        return f"aeron:ipc?term-length=64k|{SATURATED}"
    return f"aeron:udp?endpoint=localhost:{free_port()}|term-length=64k|{SATURATED}"


@pytest.mark.parametrize("kind", ["ipc", "udp"])
def test_a_saturated_linger_frees_the_log_soon_after_its_client_closed(aeron_dir: Path, kind: str) -> None:
    settings = dict(timer_interval_ns=100_000_000, publication_linger_max_ns=500_000_000)
    with EmbeddedDriver(aeron_dir, **settings):
        publications = aeron_dir / "publications"
        aeron = Aeron.connect(aeron_dir=str(aeron_dir))
        try:
            aeron.add_exclusive_publication(_channel(kind), 9).close()
            # Removed, its client still here: the linger it asked for holds the log.
            wait_for(lambda: len(os.listdir(publications)) == 1, 2, "the log made")
            aeron.add_counter(1, "a round trip: the removal has been handled")
            assert len(os.listdir(publications)) == 1
        finally:
            aeron.close()
        # The client gone, the log lingers no longer than aeron.publication.linger.max.
        wait_for(lambda: not os.listdir(publications), 10, "the lingering log freed after its client closed")
