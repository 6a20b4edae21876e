"""The docs build as a site (mkdocs.yml, the Material theme) with no warning: a broken link, a missing anchor, a
page outside the nav fails here, as ``mkdocs build --strict`` fails. The README, outside the site, is the front
door: short, the two set-up commands first, and every link in it leads somewhere."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
README_MAX_LINES = 150
LINK = re.compile(r"\]\(([^)\s]+)\)")


def heading_anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings, as GitHub and mkdocs' toc make them."""
    anchors = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and (m := re.match(r"#{1,6} (.*)", line)):
            anchors.add(re.sub(r"\s+", "-", re.sub(r"[^\w\s-]", "", m.group(1).strip().lower())))
    return anchors


def test_the_docs_build_strict_without_a_warning(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.fail("mkdocs-material is not installed: pip install -e '.[docs]' (make install does)")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env=env,
    )  # fmt: skip
    warnings = [line for line in result.stderr.splitlines() if "WARNING" in line]
    assert result.returncode == 0 and not warnings, "\n".join(warnings) or result.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "performance" / "index.html").is_file()


def test_the_readme_is_short_and_starts_with_the_two_set_up_commands() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines (at most {README_MAX_LINES})"
    commands = [line.split("#")[0].strip() for line in lines[:6] if line.startswith("make ")]
    assert commands == ["make run", "make test"]


def test_every_link_in_the_readme_leads_to_a_file_and_heading_that_exist() -> None:
    broken = []
    for target in LINK.findall(README.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # no links off the repository are expected; a URL is not checked here
        path, _, anchor = target.partition("#")
        file = ROOT / path
        if not file.exists() or (anchor and anchor not in heading_anchors(file)):
            broken.append(target)
    assert not broken, f"README.md links to what is not there: {', '.join(broken)}"
