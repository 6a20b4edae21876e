"""A real Prometheus server (Debian's ``prometheus``) on loopback scraping one exporter every second, from
tools/prometheus/prometheus.yml; ``query`` asks it PromQL. Used by tests/system/test_prometheus.py and the
record & replay service's metrics test."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from harness.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS_YML = ROOT / "tools" / "prometheus" / "prometheus.yml"
DASHBOARD = ROOT / "tools" / "grafana" / "aeron-media-driver.json"


def http_get(url: str, timeout: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode()


def start_prometheus(tmp: Path, exporter_address: str) -> tuple[subprocess.Popen[bytes], str, Path]:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail(
            "prometheus not found: `make system-deps` installs Debian's prometheus package", pytrace=False
        )
    config = (
        PROMETHEUS_YML.read_text()
        .replace("scrape_interval: 5s", "scrape_interval: 1s")
        .replace("evaluation_interval: 5s", "evaluation_interval: 1s")
        .replace("localhost:9300", exporter_address)
    )
    assert exporter_address in config and "scrape_interval: 1s" in config
    (tmp / "prometheus.yml").write_text(config)
    port = free_port("tcp")
    log = tmp / "prometheus.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                binary,
                f"--config.file={tmp / 'prometheus.yml'}",
                f"--storage.tsdb.path={tmp / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=tmp,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while True:
        try:
            if "Ready" in http_get(f"{url}/-/ready", timeout=1):
                return proc, url, log
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            pytest.fail(f"prometheus did not become ready:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.1)


def stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def query(prometheus_url: str, promql: str) -> list[dict[str, Any]]:
    url = f"{prometheus_url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    try:
        body = json.loads(http_get(url))
    except urllib.error.HTTPError as e:
        pytest.fail(f"{promql}: HTTP {e.code} {e.read().decode(errors='replace')}")
    assert body["status"] == "success", body
    return body["data"]["result"]
