"""harness/children.py, which the benchmarks and the interop tests share: how children are started and waited
for."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness.children import ChildExited, NotReady, child_env, start, terminate, wait_ready


def _sid_of_child(own_session: bool) -> tuple[int, int]:
    child = start([sys.executable, "-c", "import os; print(os.getsid(0))"], own_session=own_session)
    out, _ = child.communicate(timeout=30)
    return child.pid, int(out)


def test_a_benchmark_child_has_a_session_of_its_own_and_a_test_child_stays_in_ours() -> None:
    pid, sid = _sid_of_child(own_session=True)
    assert sid == pid
    _, sid = _sid_of_child(own_session=False)
    assert sid == os.getsid(0)


def test_children_get_no_aeron_settings_from_the_callers_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AERON_DIR", "/somewhere/else")
    env = child_env()
    assert "AERON_DIR" not in env
    assert env["PYTHONUNBUFFERED"] == "1"


def test_waiting_for_a_child_that_exits_says_so() -> None:
    child = start([sys.executable, "-c", "raise SystemExit(3)"], stdout=subprocess.DEVNULL)
    with pytest.raises(ChildExited, match="code 3"):
        wait_ready(child, lambda: False, timeout=30)


def test_waiting_gives_up_after_the_timeout() -> None:
    child = start([sys.executable, "-c", "import time; time.sleep(30)"], stdout=subprocess.DEVNULL)
    try:
        with pytest.raises(NotReady, match=r"not ready after 0\.2s"):
            wait_ready(child, lambda: False, timeout=0.2)
    finally:
        terminate(child)
