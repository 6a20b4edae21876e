"""The Aeron 1.15.1 peer installed by harness/install.py, a ``javac``, and Java command lines."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import install
from harness.errors import PeerError

# Agrona maps files through sun.nio.ch.FileChannelImpl.map0 by reflection: opening the packages keeps Java 11
# from printing "illegal reflective access" warnings.
ADD_OPENS = (
    "--add-opens",
    "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.nio=ALL-UNNAMED",
)
DRIVER_MAIN = "io.aeron.driver.MediaDriver"
JAVAC_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class Peers:
    jar: Path
    java: Path


def find_peers() -> Peers | None:
    """The jar and Java 11 runtime installed by harness/install.py (``make peers``; ``AERON_JAR`` and
    ``AERON_JAVA`` override them), or None if either is missing."""
    jar = Path(os.environ.get("AERON_JAR", install.JAR))
    java = Path(os.environ.get("AERON_JAVA", install.JAVA))
    return Peers(jar, java) if jar.exists() and java.exists() else None


def find_javac() -> Path | None:
    """``JAVAC`` or the ``javac`` on PATH (any JDK >= 11: programs are compiled with ``--release 11``)."""
    found = os.environ.get("JAVAC") or shutil.which("javac")
    return Path(found) if found else None


def props_args(props: Mapping[str, Any] | None) -> list[str]:
    """``{"aeron.x": "y"}`` -> ``["-Daeron.x=y"]``."""
    return [f"-D{k}={v}" for k, v in (props or {}).items()]


def java_cmd(
    peers: Peers,
    main_class: str,
    props: Mapping[str, Any] | None = None,
    args: Sequence[Any] = (),
    *,
    classes: Iterable[Path] = (),
    jvm_opts: Sequence[str] = ADD_OPENS,
) -> list[str]:
    """``java`` running ``main_class`` from the jar, or from ``classes`` (compiled programs) after it."""
    classpath = os.pathsep.join([str(peers.jar), *map(str, classes)])
    return [str(peers.java), *jvm_opts, "-cp", classpath, *props_args(props), main_class, *map(str, args)]


def compile_java(jar: Path, sources: Iterable[Path], out_dir: Path) -> Path:
    """Java programs compiled against the 1.15.1 jar with ``javac --release 11`` into ``out_dir`` (returned)."""
    javac = find_javac()
    if javac is None:
        raise PeerError("javac not found (any JDK >= 11)")
    cmd = [str(javac), "--release", "11", "-nowarn", "-cp", str(jar), "-d", str(out_dir), *map(str, sources)]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=JAVAC_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise PeerError(f"javac did not finish within {JAVAC_TIMEOUT_S:g} s") from None
    if result.returncode != 0:
        raise PeerError(f"javac failed: {result.stderr.strip()[-2000:]}")
    return out_dir
