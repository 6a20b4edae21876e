"""The Dockerfile cannot be built here (no Docker daemon); what can be checked is that it does the build the other
tests run (harness/dist.py, then only wheels in the slim stage) and that its build context has every file the sdist
needs: nothing the sdist holds is left out by .dockerignore."""

from __future__ import annotations

import fnmatch
import re
import tarfile
from pathlib import Path

from harness.dist import Dist

ROOT = Path(__file__).resolve().parents[2]


def stages(dockerfile: str) -> list[str]:
    return re.split(r"^FROM ", dockerfile, flags=re.M)[1:]


def test_the_builder_stage_runs_make_dists_build_and_the_slim_stage_installs_only_wheels() -> None:
    builder, final = stages((ROOT / "Dockerfile").read_text())
    assert "python harness/dist.py" in builder
    assert final.startswith("python:3.11-slim\n")
    assert "--only-binary :all:" in final and "--no-index" in final
    assert "gcc" not in final


def ignored(path: str, patterns: list[str]) -> bool:
    for pattern in patterns:
        bare = pattern.removeprefix("**/")
        if fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(Path(path).name, bare):
            return True
        if path == pattern or path.startswith(pattern.rstrip("/") + "/"):
            return True
    return False


def test_the_docker_context_holds_everything_the_sdist_does(dist: Dist) -> None:
    patterns = [
        line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines() if line.strip()
        and not line.startswith("#")
    ]  # fmt: skip
    with tarfile.open(dist.sdist) as sdist:
        files = [m.name.split("/", 1)[1] for m in sdist.getmembers() if m.isfile()]
    needed = [f for f in files if not f.endswith(("PKG-INFO", "SOURCES.txt", "setup.cfg")) and ".egg-info/" not in f]
    assert "native/build_ffi.py" in needed and "driver/py.typed" in needed
    assert [f for f in [*needed, "harness/dist.py"] if ignored(f, patterns)] == []
