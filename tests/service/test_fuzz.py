"""The API fuzzed from its own description (docs/service.md section 10): schemathesis over the served
/openapi.json with every check and every phase, time-bounded, against a real service with its generated token.
No failure but the documented ones (schema-valid requests the service refuses for what the schema cannot say)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.service_env import ServiceEnv

FUZZ_SECONDS = 25
DOCUMENTED = {
    # A channel the schema's pattern admits ("aeron:" and anything) that the URI grammar refuses: 422.
    ("ST202", "POST /api/v1/record"),
    ("ST202", "POST /api/v1/replay"),
    # Bytes that are not an export file: 400 (the schema cannot describe a tar's content).
    ("ST202", "POST /api/v1/datasets/import"),
}


def _schemathesis() -> str:
    found = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("schemathesis is not installed (the test extra)")
    return found


@pytest.mark.slow  # about FUZZ_SECONDS
def test_schemathesis_with_every_check_finds_nothing_undocumented(
    service_env: ServiceEnv, tmp_path: Path
) -> None:
    env = service_env
    config = tmp_path / "schemathesis.toml"  # the token in a file of the owner's, not on a command line
    config.touch(mode=0o600)
    config.write_text(f'headers = {{ Authorization = "Bearer {env.owner_token}" }}\n')
    report = tmp_path / "report.json"
    done = subprocess.run(
        [
            _schemathesis(),
            "--config-file",
            str(config),
            "run",
            f"{env.url}/openapi.json",
            "--checks",
            "all",
            "--workers",
            "1",
            "--max-time",
            str(FUZZ_SECONDS),
            "--seed",
            "20",
            "--no-color",
            "--report",
            "json",
            "--report-json-path",
            str(report),
            "--generation-database",
            "none",
        ],
        capture_output=True,
        text=True,
        timeout=FUZZ_SECONDS + 60,
        cwd=tmp_path,
    )
    assert report.exists(), done.stdout[-5000:] + done.stderr[-2000:]
    result = json.loads(report.read_text())
    assert result["errors"] == [], done.stdout[-20000:]
    found = {(f["code"], op) for f in result["failures"] for op in f["operations"]}
    assert found <= DOCUMENTED, done.stdout[-8000:]
    assert result["operations"]["tested"] == result["operations"]["total"] >= 12
    assert result["test_cases"]["generated"] > 500
    assert env.client.get("/api/v1/status").status_code == 200  # and the service is still there
