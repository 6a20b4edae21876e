"""The benchmarks' C reference (harness/c_driver.py): our C sample clients (Aeron 1.53 C client) stream through
our driver over IPC and UDP, and time round trips through it, in the layouts the benchmarks parse; when the C peer
cannot be built, ``python -m harness.c_driver`` and ``make peers`` say why in one line and carry on.

The client tests skip, saying why, when the C peer is not built (``make peers`` builds it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.c_driver import CPeer, find_c_driver
from harness.children import ROOT, child_env, start, terminate
from harness.cnc import wait_for_cnc
from harness.java import find_peers, props_args
from harness.ports import free_port
from tools.bench.samples import RATE_LINE, parse_histogram

MESSAGES = 200_000
CLIENT_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def c_peer() -> CPeer:
    peer = find_c_driver()
    if peer is None:
        pytest.skip("the Aeron C peer is not built: `make peers` (python -m harness.c_driver says why)")
    return peer


@pytest.fixture
def aeron_dir() -> Iterator[Path]:
    """Our driver (``python -m driver run``) in a fresh dir under /dev/shm, stopped and removed afterwards."""
    parent = Path(
        tempfile.mkdtemp(prefix="aeron-c-peer-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    )
    directory = parent / "aeron"
    driver = start(
        [sys.executable, "-m", "driver", "run", "--dir", str(directory)],
        stdout=subprocess.DEVNULL,
        own_session=False,
    )
    try:
        wait_for_cnc(driver, directory, timeout=30)
        yield directory
        terminate(driver)
        assert driver.returncode == 0, f"our driver exited {driver.returncode} on SIGTERM"
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        shutil.rmtree(parent, ignore_errors=True)


def _client(peer: CPeer, name: str, props: dict[str, object]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(peer.client(name)), *props_args(props)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=child_env(),
    )


def _finish(proc: subprocess.Popen[str], what: str) -> str:
    try:
        out, _ = proc.communicate(timeout=CLIENT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate(timeout=10)
        pytest.fail(f"{what} did not finish within {CLIENT_TIMEOUT_S} s: {out[-2000:]}")
    assert proc.returncode == 0, f"{what} exited {proc.returncode}: {out[-2000:]}"
    return out


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["ipc", "udp"])
def test_the_c_publisher_streams_every_message_to_the_c_subscriber_through_our_driver(
    c_peer: CPeer, aeron_dir: Path, transport: str
) -> None:
    channel = "aeron:ipc" if transport == "ipc" else f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    props: dict[str, object] = {
        "aeron.dir": aeron_dir,
        "aeron.sample.channel": channel,
        "aeron.sample.streamId": 10,
        "aeron.sample.messageLength": 32,
        "aeron.sample.messages": MESSAGES,
    }
    sub = _client(c_peer, "rate_subscriber", props)
    pub = _client(c_peer, "streaming_publisher", {**props, "aeron.sample.lingerMs": 200})
    try:
        sent = _finish(pub, "streaming_publisher")
        received = _finish(sub, "rate_subscriber")
    finally:
        for proc in (pub, sub):
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    assert f"Sent {MESSAGES} messages" in sent
    assert f"Received {MESSAGES} messages" in received
    # Its once-a-second lines read as the Java RateSubscriber's do (tools/bench/samples.py).
    totals = [int(m.group(3)) for line in received.splitlines() if (m := RATE_LINE.match(line))]
    assert totals == sorted(totals)
    assert all(total <= MESSAGES for total in totals)


@pytest.mark.slow
def test_c_ping_times_round_trips_through_c_pong_and_prints_the_java_ping_table(
    c_peer: CPeer, aeron_dir: Path
) -> None:
    props: dict[str, object] = {
        "aeron.dir": aeron_dir,
        "aeron.sample.ping.channel": "aeron:ipc",
        "aeron.sample.pong.channel": "aeron:ipc",
        "aeron.sample.ping.streamId": 10,
        "aeron.sample.pong.streamId": 11,
        "aeron.sample.messages": 2000,
        "aeron.sample.messageLength": 32,
        "aeron.sample.warmup.iterations": 1,
        "aeron.sample.warmup.messages": 200,
    }
    pong = _client(c_peer, "pong", props)
    try:
        out = _finish(_client(c_peer, "ping", props), "ping")
    finally:
        pong.terminate()
        pong_out, _ = pong.communicate(timeout=10)
    assert pong.returncode == 0, pong_out
    assert pong_out.startswith("Pong ready")
    table = parse_histogram(out)
    assert table["count"] == 2000
    assert 0 < table["p50_us"] <= table["p99_us"] <= table["max_us"]


def test_a_c_peer_that_cannot_be_built_is_one_line_and_exit_status_0(tmp_path: Path) -> None:
    env = {**child_env(), "CC": "/nonexistent/cc"}
    done = subprocess.run(
        [sys.executable, "-m", "harness.c_driver", "--dir", str(tmp_path / "aeron-c")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "aeron-c: not built (no C compiler: CC=/nonexistent/cc not found (apt-get install gcc g++ make))"
    ]
    assert find_c_driver(tmp_path / "aeron-c") is None


@pytest.mark.slow
def test_make_peers_carries_on_when_the_c_peer_cannot_be_built(tmp_path: Path) -> None:
    if find_peers() is None or shutil.which("make") is None:
        pytest.skip(
            "needs make and the installed Aeron 1.15.1 peer (`make peers`), which this test must not fetch"
        )
    venv_stamp = ROOT / ".venv" / ".installed"
    if not venv_stamp.exists():
        pytest.skip("needs the project's .venv (`make install`)")
    env = {**child_env(), "CC": "/nonexistent/cc", "AERON_C_DIR": str(tmp_path / "aeron-c")}
    env.pop("MAKEFLAGS", None)
    done = subprocess.run(
        ["make", "--no-print-directory", "-o", ".venv/.installed", "peers"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "jar:" in done.stdout
    assert "aeron-c: not built (no C compiler: CC=/nonexistent/cc" in done.stdout
    assert not os.path.exists(tmp_path / "aeron-c" / "bin" / "aeronmd")
