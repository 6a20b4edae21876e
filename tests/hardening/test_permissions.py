"""The aeron dir is private by default; the documented group setting shares it with that group's users."""

from __future__ import annotations

import grp
import os
import pwd
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from driver.client import Aeron

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def other_user():
    """A second user and a group it belongs to (the tests run as root); removed afterwards."""
    if os.geteuid() != 0:
        pytest.skip("creating a user needs root")
    name = f"aeront{uuid.uuid4().hex[:8]}"
    group = f"{name}g"
    made = subprocess.run(["groupadd", group], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot add a group: {made.stderr.strip()}")
    made = subprocess.run(["useradd", "-M", "-N", "-G", group, name], capture_output=True, text=True)
    if made.returncode != 0:
        subprocess.run(["groupdel", group], check=False)
        pytest.skip(f"cannot add a user: {made.stderr.strip()}")
    try:
        yield name, group
    finally:
        subprocess.run(["userdel", name], check=False)
        subprocess.run(["groupdel", group], check=False)


def run_as(user: str, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "setpriv",
            f"--reuid={user}",
            f"--regid={pwd.getpwnam(user).pw_gid}",
            "--init-groups",
            sys.executable,
            "-c",
            textwrap.dedent(code),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"},
    )


def test_defaults_keep_other_users_out(embedded_driver, aeron_dir: Path, other_user) -> None:
    user, _group = other_user
    embedded_driver()
    with Aeron.connect(aeron_dir=str(aeron_dir)) as aeron:
        aeron.add_exclusive_publication("aeron:ipc?term-length=64k", 5)
        assert (aeron_dir.stat().st_mode & 0o777) == 0o700
        assert ((aeron_dir / "cnc.dat").stat().st_mode & 0o777) == 0o600
        logs = list((aeron_dir / "publications").iterdir())
        assert logs and all((p.stat().st_mode & 0o777) == 0o600 for p in logs)
        result = run_as(
            user,
            f"""
            import sys
            from driver.client import Aeron, AeronError
            for path in ({str(aeron_dir / "cnc.dat")!r}, {str(logs[0])!r}):
                try:
                    open(path, "rb").read(1)
                except PermissionError:
                    pass
                else:
                    sys.exit("read " + path)
            try:
                Aeron.connect(aeron_dir={str(aeron_dir)!r}, timeout_s=2)
            except AeronError as e:
                print(e)
            else:
                sys.exit("connected")
            """,
        )
    assert result.returncode == 0, result.stderr + result.stdout
    assert "aeron.dir.group" in result.stdout


def test_a_group_member_can_use_a_driver_shared_with_its_group(
    embedded_driver, aeron_dir: Path, other_user
) -> None:
    user, group = other_user
    embedded_driver(dir_group=grp.getgrnam(group).gr_gid)
    assert (aeron_dir.stat().st_mode & 0o777) == 0o770
    result = run_as(
        user,
        f"""
        from driver.client import Aeron
        with Aeron.connect(aeron_dir={str(aeron_dir)!r}, timeout_s=5) as aeron:
            sub = aeron.add_subscription("aeron:ipc", 9)
            pub = aeron.add_publication("aeron:ipc?term-length=64k", 9)
            aeron.add_counter(1001, "from the group").set(7)
            print("ok", pub.session_id)
        """,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok")
