"""A second user on the host, as operators have one (tests run as root; elsewhere they skip): ``another_user()``
makes a user and a group it belongs to and removes both after; ``run_as`` runs Python code as that user from the
repository, ``run_command_as`` a ``mediadriver`` command."""

from __future__ import annotations

import contextlib
import os
import pwd
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def another_user() -> Iterator[tuple[str, str]]:
    """(user name, group name); skips the test, saying why, where users cannot be added."""
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


def as_user(user: str, *command: str) -> list[str]:
    """``command`` run as ``user`` (its own group and supplementary groups)."""
    return ["setpriv", f"--reuid={user}", f"--regid={pwd.getpwnam(user).pw_gid}", "--init-groups", *command]


def user_env() -> dict[str, str]:
    return {"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"}


def run_as(user: str, code: str, timeout_s: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        as_user(user, sys.executable, "-c", textwrap.dedent(code)),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        cwd=REPO,
        env=user_env(),
    )


def run_command_as(user: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``mediadriver ARGS`` as ``user``."""
    return run_as(user, f"import sys\nfrom driver.cli import main\nsys.exit(main({list(args)!r}))")
