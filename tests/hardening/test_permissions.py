"""The aeron dir is private by default; the documented group setting shares it with that group's users."""

from __future__ import annotations

import grp
import os
from pathlib import Path

import pytest

from driver.client import Aeron
from tests.support.users import another_user, run_as, run_command_as


@pytest.fixture
def other_user():
    """A second user and a group it belongs to (the tests run as root); removed afterwards."""
    with another_user() as user:
        yield user


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



def test_every_command_names_the_cause_and_the_fix_of_a_refused_file(
    embedded_driver, aeron_dir: Path, other_user, tmp_path: Path
) -> None:
    user, _group = other_user
    embedded_driver()
    archive_dir = tmp_path / "archive"
    archive_dir.mkdir(mode=0o700)
    (archive_dir / "archive.catalog").write_bytes(bytes(4096))
    os.chmod(tmp_path, 0o755)
    cnc = aeron_dir / "cnc.dat"
    expected = {
        ("stat", "--dir", str(aeron_dir), "--once"): f"mediadriver: permission denied on {cnc}: ",
        ("streams", "--dir", str(aeron_dir), "--once"): f"mediadriver: permission denied on {cnc}: ",
        ("errors", "--dir", str(aeron_dir)): f"mediadriver: permission denied on {cnc}: ",
        ("terminate", "--dir", str(aeron_dir)): f"mediadriver: permission denied on {cnc}: ",
        ("loss", "--dir", str(aeron_dir)): f"mediadriver: cannot read {aeron_dir / 'loss-report.dat'}: "
        "permission denied on ",
        ("archive", "--dir", str(archive_dir), "list"): "mediadriver archive: permission denied on ",
        ("run", "--dir", str(aeron_dir)): f"mediadriver: permission denied on {aeron_dir}/cnc.dat (it belongs to "
        f"root): the aeron dir {aeron_dir} is another user's, perhaps its driver's; run the driver as that user or "
        "give it a directory of its own with --dir, AERON_DIR or -Daeron.dir",
        ("datasets", "--archive-dir", str(archive_dir), "list"): "mediadriver: cannot read the token file: "
        f"permission denied on {archive_dir / 'http-token'}: ",
    }
    (archive_dir / "http-token").write_text("secret\n")
    for args, start in expected.items():
        result = run_command_as(user, *args)
        assert result.returncode == (2 if args[0] == "datasets" else 1), (args, result.stderr)
        [line] = result.stderr.splitlines()  # one line, no traceback
        assert line.startswith(start), (args, line)
        assert "Errno" not in line
        if args[0] == "run":
            continue
        assert line.endswith(
            "private to the user that runs them; run this as that user, or start them with "
            "-Daeron.dir.group=<a group of this user> (group read-write; docs/getting-started.md, 'Sharing the aeron dir')"
        ), (args, line)
        assert "Errno" not in line
