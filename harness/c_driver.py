#!/usr/bin/env python3
"""The Aeron C media driver (``aeronmd``, Aeron 1.53) and our C sample clients: the benchmarks' ``c`` reference.

``python -m harness.c_driver`` (``make peers`` runs it) builds into ``.peers/aeron-c/``:

- ``bin/aeronmd``: the C media driver, built with Aeron's own CMake build from the C client and driver sources
  that the ``pyaeron==0.1.0`` sdist on PyPI vendors (``third_party/aeron``, version 1.53), statically linked;
- ``lib/libaeron_static.a`` and ``include/aeronc.h``: the C client library and its header;
- ``bin/streaming_publisher``, ``bin/rate_subscriber``, ``bin/ping``, ``bin/pong``: our sample clients
  (``harness/c_samples/*.c``) linked against that client library. They take ``-Dname=value`` settings
  with the Java samples' property names.

Aeron's build needs CMake >= 3.30: the one on PATH when new enough, else the ``cmake`` wheel from PyPI installed
into ``.peers/aeron-c/cmake``. It also needs a C and a C++ compiler (``make peers`` installs them from Debian).

Optional, like pyaeron: when it cannot be built, one line says why and the exit status is still 0; the benchmarks
then refuse the ``c`` setups saying so, and the tests that need it skip. Idempotent: the driver is rebuilt only
when the sdist version changes, the samples only when their sources change.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SDIST_REQUIREMENT = "pyaeron==0.1.0"
SAMPLE_SOURCES = Path(__file__).resolve().parent / "c_samples"
SAMPLES = ("streaming_publisher", "rate_subscriber", "ping", "pong")
MIN_CMAKE = (3, 30)
# Aeron's targets: the statically linked driver and the C client library.
TARGETS = ("aeronmd_s", "aeron_static")
CMAKE_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_AERON_DRIVER=ON",
    "-DBUILD_AERON_ARCHIVE_API=OFF",
    "-DAERON_TESTS=OFF",
    "-DAERON_UNIT_TESTS=OFF",
    "-DAERON_SYSTEM_TESTS=OFF",
    "-DAERON_BUILD_SAMPLES=OFF",
    "-DAERON_BUILD_DOCUMENTATION=OFF",
    "-DAERON_INSTALL_TARGETS=OFF",
)
STEP_TIMEOUT_S = 1800


class BuildError(RuntimeError):
    """Why the C driver or the samples could not be built (one line)."""


def default_dir() -> Path:
    """``.peers/aeron-c``, or ``AERON_C_DIR`` when set (the tests build elsewhere with it)."""
    return Path(os.environ.get("AERON_C_DIR") or ROOT / ".peers" / "aeron-c")


@dataclass(frozen=True)
class CPeer:
    """A built C driver and the sample clients beside it."""

    root: Path

    @property
    def aeronmd(self) -> Path:
        return self.root / "bin" / "aeronmd"

    def client(self, name: str) -> Path:
        if name not in SAMPLES:
            raise ValueError(f"unknown C sample {name!r} (expected one of {', '.join(SAMPLES)})")
        return self.root / "bin" / name


def _driver_stamp(root: Path) -> Path:
    return root / ".driver-built"


def _samples_stamp(root: Path) -> Path:
    return root / ".samples-built"


def samples_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted(SAMPLE_SOURCES.glob("*.[ch]")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def find_c_driver(root: Path | None = None) -> CPeer | None:
    """The built C peer when the driver and every sample are present and up to date, else None."""
    peer = CPeer(root or default_dir())
    stamps = _driver_stamp(peer.root), _samples_stamp(peer.root)
    if not all(stamp.exists() for stamp in stamps):
        return None
    if stamps[0].read_text() != SDIST_REQUIREMENT or stamps[1].read_text() != samples_digest():
        return None
    binaries = [peer.aeronmd, *(peer.client(name) for name in SAMPLES)]
    return peer if all(os.access(path, os.X_OK) for path in binaries) else None


def _run(cmd: list[str], what: str, cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildError(f"{what} failed: {exc}") from None
    if done.returncode != 0:
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        last = next((line for line in reversed(lines) if "rror" in line), lines[-1] if lines else "")
        raise BuildError(f"{what} exited {done.returncode}: {last.strip()[:300]}")
    return done.stdout


def _compiler(env_name: str, default: str, language: str) -> str:
    name = os.environ.get(env_name) or default
    found = shutil.which(name)
    if found is None:
        raise BuildError(
            f"no {language} compiler: {env_name}={name} not found (apt-get install gcc g++ make)"
        )
    return found


def _cmake_version(cmake: str) -> tuple[int, ...]:
    match = re.search(r"version (\d+)\.(\d+)", _run([cmake, "--version"], "cmake --version"))
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def find_cmake(root: Path) -> str:
    """A CMake >= 3.30: on PATH, else the PyPI wheel installed (once) under ``root/cmake``."""
    on_path = shutil.which("cmake")
    if on_path and _cmake_version(on_path) >= MIN_CMAKE:
        return on_path
    wheel_dir = root / "cmake"
    cmake = wheel_dir / "cmake" / "data" / "bin" / "cmake"
    if not cmake.exists():
        shutil.rmtree(wheel_dir, ignore_errors=True)
        pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", "install", "--target"]
        _run([*pip, str(wheel_dir), f"cmake>={MIN_CMAKE[0]}.{MIN_CMAKE[1]},<5"], "pip install cmake")
    if not cmake.exists():
        raise BuildError(f"the cmake wheel installed but {cmake} is missing")
    return str(cmake)


def _aeron_sources(work: Path) -> Path:
    """The sdist's vendored Aeron tree, extracted under ``work``. pyaeron requires Python >= 3.12, hence
    ``--python-version`` (with ``--no-deps`` pip allows it whatever runs it); only pyaeron itself comes as
    source, its build requirements as wheels (pip prepares the sdist's metadata with them)."""
    _run(
        [
            sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", "download", "--no-deps",
            "--no-binary", "pyaeron", "--python-version", "3.12", "-d", str(work), SDIST_REQUIREMENT,
        ],
        f"pip download {SDIST_REQUIREMENT}",
    )  # fmt: skip
    sdist = next(work.glob("pyaeron-*.tar.gz"), None)
    if sdist is None:
        raise BuildError(f"pip download {SDIST_REQUIREMENT} left no sdist")
    with tarfile.open(sdist) as tar:
        tar.extractall(work / "src", filter="data")
    tree = next((work / "src").glob("pyaeron-*/third_party/aeron"), None)
    if tree is None or not (tree / "CMakeLists.txt").exists():
        raise BuildError(f"{sdist.name} holds no third_party/aeron/CMakeLists.txt")
    return tree


def build_driver(root: Path) -> None:
    """aeronmd, the client library and its header into ``root`` (bin/, lib/, include/)."""
    cc, cxx = _compiler("CC", "cc", "C"), _compiler("CXX", "c++", "C++")
    cmake = find_cmake(root)
    # Outside any git checkout: Aeron's CMake stamps the version with `git log` of the tree around it.
    with tempfile.TemporaryDirectory(prefix="aeron-c-build-") as tmp:
        work = Path(tmp)
        tree = _aeron_sources(work)
        build = work / "build"
        configure = [cmake, "-S", str(tree), "-B", str(build), *CMAKE_OPTIONS]
        _run([*configure, f"-DCMAKE_C_COMPILER={cc}", f"-DCMAKE_CXX_COMPILER={cxx}"], "cmake configure")
        jobs = str(os.cpu_count() or 1)
        _run([cmake, "--build", str(build), "-j", jobs, "--target", *TARGETS], "cmake --build")
        for sub in ("bin", "lib", "include"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        header = tree / "aeron-client" / "src" / "main" / "c" / "aeronc.h"
        shutil.copy2(header, root / "include" / "aeronc.h")
        shutil.copy2(build / "lib" / "libaeron_static.a", root / "lib" / "libaeron_static.a")
        partial = root / "bin" / "aeronmd.part"
        shutil.copy2(build / "binaries" / "aeronmd_s", partial)
        partial.rename(root / "bin" / "aeronmd")
    _driver_stamp(root).write_text(SDIST_REQUIREMENT)


def build_samples(root: Path) -> None:
    """Our sample clients, linked statically against the C client library."""
    cc = _compiler("CC", "cc", "C")
    for name in SAMPLES:
        out = root / "bin" / name
        _run(
            [
                cc, "-O2", "-std=gnu11", "-Wall", "-Wextra", "-I", str(root / "include"),
                "-o", str(out), str(SAMPLE_SOURCES / f"{name}.c"), str(root / "lib" / "libaeron_static.a"),
                "-lpthread", "-ldl", "-lm",
            ],
            f"cc {name}.c",
        )  # fmt: skip
    _samples_stamp(root).write_text(samples_digest())


def install_c_driver(root: Path | None = None) -> CPeer:
    """Build what is missing or stale; raises BuildError saying why it cannot be built."""
    root = root or default_dir()
    found = find_c_driver(root)
    if found is not None:
        return found
    driver_stamp = _driver_stamp(root)
    if not (driver_stamp.exists() and driver_stamp.read_text() == SDIST_REQUIREMENT):
        driver_stamp.unlink(missing_ok=True)
        _samples_stamp(root).unlink(missing_ok=True)
        build_driver(root)
    build_samples(root)
    peer = find_c_driver(root)
    if peer is None:
        raise BuildError(f"built, but {root} is still incomplete")
    return peer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None, help="where to build (default .peers/aeron-c)")
    args = parser.parse_args()
    try:
        peer = install_c_driver(args.dir)
    except BuildError as exc:
        print(f"aeron-c: not built ({exc})")
        return 0
    print(f"aeron-c: {peer.aeronmd}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
