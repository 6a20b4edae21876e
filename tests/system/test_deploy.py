"""docs/deploy.md, checked where one machine can: the systemd unit parses (``systemd-analyze verify``) and its
settings fit the driver, its command starts the driver on a tmpfs mount and its kill signal stops it cleanly; the
container files parse and share one memory-backed volume at the clients' AERON_DIR; and the volume's setup itself
(a tmpfs with the documented options) serves a driver and a client of one non-root user."""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from driver.context import PROFILES, DriverContext
from driver.stop_signals import STOP_SIGNALS
from harness import children
from harness.cnc import cnc_ready, read_cnc_header
from tests.support.tmpfs import mounted_tmpfs
from tests.support.users import REPO, another_user, as_user, run_as, user_env

DOC = REPO / "docs" / "deploy.md"
DOCUMENTED_PROGRAM = "/opt/aio-media-driver/bin/mediadriver"
MEDIADRIVER = Path(sys.executable).with_name("mediadriver")


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", DOC.read_text(), re.MULTILINE | re.DOTALL)


def unit_text() -> str:
    (text,) = blocks("ini")
    return text


def unit_settings() -> dict[str, str]:
    """Key -> value of the unit's lines (each key appears once in it)."""
    settings = {}
    for line in unit_text().splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            assert key not in settings, key
            settings[key] = value
    return settings


def wait_ready(directory: Path, proc: subprocess.Popen[str]) -> None:
    """cnc.dat ready and written by ``proc`` (setpriv execs the driver: same pid), not a driver before it."""

    def ready() -> bool:
        header = read_cnc_header(directory)
        return header is not None and header.pid == proc.pid and cnc_ready(directory)

    try:
        children.wait_ready(proc, ready, 30)
    except (children.ChildExited, children.NotReady) as e:
        proc.kill()
        raise AssertionError(f"the driver did not start: {e}: {proc.communicate()}") from None


def test_the_unit_file_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    unit = tmp_path / "aio-media-driver.service"
    unit.write_text(unit_text().replace(DOCUMENTED_PROGRAM, str(MEDIADRIVER)))
    result = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert unit.name not in result.stderr + result.stdout  # no warning about the unit (unknown keys, bad values)


def test_the_units_settings_fit_the_driver() -> None:
    settings = unit_settings()
    assert settings["ExecStart"].startswith(f"{DOCUMENTED_PROGRAM} run --profile low-latency")
    assert settings["Environment"] == "AERON_DIR=/dev/shm/aeron"
    assert getattr(signal, settings["KillSignal"]) in STOP_SIGNALS
    # A restart after a crash comes after the driver timeout, so it takes the dir over at once.
    assert int(settings["RestartSec"]) * 1000 > DriverContext().driver_timeout_ms
    assert int(settings["LimitRTPRIO"]) >= int(PROFILES["low-latency"]["aeron.driver.realtime.priority"])
    assert int(settings["TimeoutStopSec"]) >= 10


def test_the_units_command_runs_on_a_tmpfs_and_stops_on_its_kill_signal(tmp_path: Path) -> None:
    settings = unit_settings()
    with mounted_tmpfs(tmp_path / "aeron", "64m") as mount:
        argv = shlex.split(settings["ExecStart"].replace(DOCUMENTED_PROGRAM, str(MEDIADRIVER)))
        name, value = settings["Environment"].split("=", 1)
        assert name == "AERON_DIR" and value == "/dev/shm/aeron"
        proc = subprocess.Popen(
            argv, env={**os.environ, name: str(mount)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            wait_ready(mount, proc)
            # The documented check, as the driver's own user.
            stat = subprocess.run(
                [str(MEDIADRIVER), "stat", "--dir", str(mount), "--once"], capture_output=True, text=True, timeout=30
            )
            assert stat.returncode == 0, stat.stderr
            assert "Client liveness timeouts" in stat.stdout
            proc.send_signal(getattr(signal, settings["KillSignal"]))
            _out, err = proc.communicate(timeout=int(settings["TimeoutStopSec"]))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == 0, err
        assert "Traceback" not in err


def test_the_container_files_share_one_memory_backed_volume_at_aeron_dir() -> None:
    compose, pod = (yaml.safe_load(text) for text in blocks("yaml"))
    services = compose["services"]
    assert services["driver"]["image"] == "aio-media-driver"
    assert getattr(signal, services["driver"]["stop_signal"]) in STOP_SIGNALS
    (volume,) = compose["volumes"]
    assert compose["volumes"][volume]["driver_opts"]["type"] == "tmpfs"
    for service in services.values():
        directory = service["environment"]["AERON_DIR"]
        assert f"{volume}:{directory}" in service["volumes"]
        assert service["user"] == services["driver"]["user"]  # the files are private to the driver's user
    uid, gid = services["driver"]["user"].split(":")
    assert f"uid={uid},gid={gid}" in compose["volumes"][volume]["driver_opts"]["o"]

    spec = pod["spec"]
    (memory,) = [v for v in spec["volumes"] if v.get("emptyDir", {}).get("medium") == "Memory"]
    for container in spec["containers"]:
        (directory,) = [e["value"] for e in container["env"] if e["name"] == "AERON_DIR"]
        assert {"name": memory["name"], "mountPath": directory} in container["volumeMounts"]
    assert spec["terminationGracePeriodSeconds"] >= 10


def test_a_tmpfs_volume_as_documented_serves_a_driver_and_a_client_of_one_user() -> None:
    compose = yaml.safe_load(blocks("yaml")[0])
    (volume,) = compose["volumes"].values()
    with another_user() as (user, _group):
        entry = pwd.getpwnam(user)
        options = volume["driver_opts"]["o"].replace("uid=10001", f"uid={entry.pw_uid}")
        options = options.replace("gid=10001", f"gid={entry.pw_gid}").replace("size=1g,", "")
        base = Path(tempfile.mkdtemp(prefix="aeron-volume-", dir="/tmp"))  # a path the user can reach
        os.chmod(base, 0o755)
        with contextlib.ExitStack() as cleanup:
            cleanup.callback(shutil.rmtree, base, True)
            mount = cleanup.enter_context(mounted_tmpfs(base / "aeron", "64m", options))
            for _restart in range(2):
                driver = subprocess.Popen(
                    as_user(user, sys.executable, "-m", "driver", "run"),
                    env={**user_env(), "AERON_DIR": str(mount)},
                    cwd=REPO,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                try:
                    wait_ready(mount, driver)
                    client = run_as(
                        user,
                        f"""
                        from driver.client import Aeron
                        with Aeron.connect(aeron_dir={str(mount)!r}, timeout_s=10) as aeron:
                            sub = aeron.add_subscription("aeron:ipc", 9)
                            pub = aeron.add_publication("aeron:ipc?term-length=64k", 9)
                            while pub.offer(b"hello") < 0:
                                pass
                            got = []
                            while not got:
                                sub.poll(lambda buffer, offset, length, header: got.append(length), 1)
                            print("ok", got)
                        """,
                    )
                    assert client.returncode == 0, client.stderr
                    assert client.stdout.strip() == "ok [5]"
                    driver.send_signal(signal.SIGTERM)
                    _out, err = driver.communicate(timeout=15)
                finally:
                    if driver.poll() is None:
                        driver.kill()
                        driver.communicate()
                assert driver.returncode == 0, err
                assert os.stat(mount).st_uid == entry.pw_uid
