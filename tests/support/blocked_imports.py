"""Run a command where some installed modules cannot be imported, as on an install without an extra.

``blocked_env`` writes a sitecustomize.py that puts a meta-path finder in front of every other one: importing a
blocked top-level module (or anything under it) raises ModuleNotFoundError exactly as when it is not installed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

SITECUSTOMIZE = '''\
import os
import sys

_BLOCKED = frozenset(os.environ["AMD_TEST_BLOCKED_MODULES"].split(","))


class _Blocker:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.partition(".")[0] in _BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Blocker)
'''


def blocked_env(tmp_path: Path, modules: Iterable[str], root: Path) -> dict[str, str]:
    """Environment for a subprocess in which ``modules`` are not importable; ``root`` stays importable."""
    site = tmp_path / "blocked-site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(root)])
    env["AMD_TEST_BLOCKED_MODULES"] = ",".join(modules)
    return env
