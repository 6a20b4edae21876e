"""The package as users install it: the sdist into fresh venvs of every CPython 3.11-3.13 on the machine, and the
manylinux wheel where no compiler exists. Each install then runs tools/smoke/installed.py outside the source
tree: a driver with its archive, 20,000 IPC messages with the fast path loaded, UDP, a recording replayed.

The venvs (with the dependencies installed) are kept under .cache/packaging/ between runs; the package itself is
reinstalled from the freshly built sdist or wheel every time. The four installs (three sdists, the wheel) run at once
(each is mostly pip waiting on downloads, and one C compile), so the first test pays for all of them.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from harness.dist import Dist

ROOT = Path(__file__).resolve().parents[2]
VENVS = ROOT / ".cache" / "packaging"
SMOKE = ROOT / "tools" / "smoke" / "installed.py"
SUPPORTED = ("3.11", "3.12", "3.13")
INSTALL_TIMEOUT_S = 300
SMOKE_TIMEOUT_S = 180

pytestmark = pytest.mark.slow


def find_python(version: str) -> str | None:
    """The newest CPython ``version`` on this machine: pyenv's, else python3.x on PATH."""
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found = sorted(
        glob.glob(str(pyenv_root / "versions" / f"{version}.*" / "bin" / f"python{version}")),
        key=lambda p: [int(x) for x in Path(p).parts[-3].split(".") if x.isdigit()],
    )
    return found[-1] if found else shutil.which(f"python{version}")


def clean_env(**extra: str) -> dict[str, str]:
    """No PYTHONPATH (the installed package, not this tree) and no AERON_* settings of the caller."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("AERON_")}
    env.update(extra)
    return env


def pip(venv: Path, *args: str, env: dict[str, str] | None = None) -> None:
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", *args],
        capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, env=env or clean_env(), cwd=venv,
    )  # fmt: skip
    assert result.returncode == 0, f"pip install {' '.join(args)} failed:\n{result.stdout}{result.stderr}"


def venv_for(python: str, name: str) -> Path:
    venv = VENVS / name
    if not (venv / "bin" / "python").exists():
        subprocess.run([python, "-m", "venv", "--clear", str(venv)], check=True, timeout=120)
    return venv


def smoke(venv: Path, tmp_path: Path) -> dict[str, object]:
    result = subprocess.run(
        [str(venv / "bin" / "python"), str(SMOKE)],
        capture_output=True, text=True, timeout=SMOKE_TIMEOUT_S, env=clean_env(), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    report: dict[str, object] = json.loads(result.stdout)
    return report


def install_sdist(version: str, sdist: Path) -> Path | None:
    """A venv of CPython ``version`` with ``sdist`` installed as pip installs one (built in isolation, then its
    dependencies); None when the machine has no such Python."""
    python = find_python(version)
    if python is None:
        return None
    venv = venv_for(python, f"sdist-{version}")
    pip(venv, "--force-reinstall", "--no-deps", str(sdist))  # built here, in isolation
    pip(venv, str(sdist))  # its dependencies, when the cached venv lacks them
    return venv


def install_wheel(wheel: Path) -> Path:
    """A venv of the Python ``wheel`` was built for, with it and its dependencies installed from wheels only and
    no compiler to fall back on."""
    wheel_python = wheel.name.split("-")[2]  # cp311: the Python it was built for
    version = f"{wheel_python[2]}.{wheel_python[3:]}"
    python = find_python(version) or sys.executable
    venv = venv_for(python, f"wheel-{version}")
    no_compiler = clean_env(CC="/bin/false", CXX="/bin/false", LDSHARED="/bin/false")
    pip(venv, "--only-binary", ":all:", str(wheel), env=no_compiler)  # dependencies: wheels only
    pip(venv, "--only-binary", ":all:", "--force-reinstall", "--no-deps", str(wheel), env=no_compiler)
    return venv


@pytest.fixture(scope="module")
def installs(dist: Dist) -> Iterator[dict[str, Future[Path | None]]]:
    """Every supported Python's sdist install and the wheel's, started together; each test waits for its own."""
    with ThreadPoolExecutor(max_workers=len(SUPPORTED) + 1) as pool:
        futures: dict[str, Future[Path | None]] = {
            version: pool.submit(install_sdist, version, dist.sdist) for version in SUPPORTED
        }
        futures["wheel"] = pool.submit(install_wheel, dist.wheel)
        yield futures


@pytest.mark.parametrize("version", SUPPORTED)
def test_sdist_installs_and_runs_on_each_python(
    version: str, installs: dict[str, Future[Path | None]], tmp_path: Path
) -> None:
    venv = installs[version].result()
    if venv is None:
        pytest.skip(f"no CPython {version} on this machine (pyenv install {version} adds one)")
    report = smoke(venv, tmp_path)
    assert report["python"].startswith(version + ".")  # type: ignore[union-attr]
    assert str(report["package"]).startswith(str(venv))  # not this source tree
    assert report["fastpath"] == "fast path loaded"
    assert (report["ipc"], report["ipc_cffi"], report["udp"], report["replayed"]) == (20_000, 2_000, 2_000, 500)
    assert report["driver_exit"] == 0


def test_wheel_is_manylinux_with_both_native_modules_and_py_typed(dist: Dist) -> None:
    assert "manylinux" in dist.wheel.name
    names = zipfile.ZipFile(dist.wheel).namelist()
    assert "driver/py.typed" in names
    assert any(n.startswith("driver/_native.") and n.endswith(".so") for n in names)
    assert any(n.startswith("driver/concurrent/logbuffer/_fastpath.") and n.endswith(".so") for n in names)
    assert {"driver/service/web/index.html", "driver/service/web/app.js"} <= set(names)


def test_neither_the_wheel_nor_the_sdist_ships_the_tools_the_harness_or_the_tests(dist: Dist) -> None:
    wheel_names = zipfile.ZipFile(dist.wheel).namelist()
    with tarfile.open(dist.sdist) as sdist:
        sdist_names = [name.split("/", 1)[-1] for name in sdist.getnames()]  # below aio_media_driver-0.1.0/
    for names in (wheel_names, sdist_names):
        assert [n for n in names if n.split("/", 1)[0] in ("tools", "tests", "harness")] == []


def test_wheel_installs_without_a_compiler(installs: dict[str, Future[Path | None]], tmp_path: Path) -> None:
    venv = installs["wheel"].result()
    assert venv is not None
    report = smoke(venv, tmp_path)
    assert report["fastpath"] == "fast path loaded"
    assert (report["ipc"], report["replayed"]) == (20_000, 500)
