"""A real Spark standalone cluster on loopback: a master and workers started with the pyspark package's own
``bin/spark-class`` (its Master and Worker classes), waited for through the master's JSON status page, and
stopped (with their executors) on exit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.ports import free_port

START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class SparkCluster:
    master_url: str
    status_url: str
    workers: int


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _alive_workers(status_url: str) -> int:
    try:
        with urllib.request.urlopen(status_url, timeout=2) as response:
            return int(json.load(response).get("aliveworkers", 0))
    except (OSError, ValueError):  # not up yet, or not the master's page: wait (the start times out)
        return 0


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the daemon's process group (the JVM and, for a worker, its executors), then SIGKILL."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(STOP_TIMEOUT_S)


@contextmanager
def spark_cluster(tmp_path: Path, workers: int = 2, cores_per_worker: int = 1) -> Iterator[SparkCluster]:
    home = spark_home()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "AERON_"))}
    env.update(
        SPARK_HOME=str(home),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(tmp_path / "logs"),
        SPARK_WORKER_DIR=str(tmp_path / "work"),
    )
    spark_class = str(home / "bin" / "spark-class")
    # Every port picked before any daemon starts, and each once: the OS may hand a just-released port out again,
    # and a worker's web UI on the master's UI port would answer the status polls with its HTML page.
    ports: list[int] = []
    while len(ports) < 2 + workers:
        if (candidate := free_port("tcp")) not in ports:
            ports.append(candidate)
    port, ui_port, *worker_ui_ports = ports
    master_url = f"spark://127.0.0.1:{port}"
    status_url = f"http://127.0.0.1:{ui_port}/json/"
    processes: list[subprocess.Popen[bytes]] = []
    logs = tmp_path / "logs"
    logs.mkdir(parents=True, exist_ok=True)

    def start(name: str, *args: str) -> None:
        with open(logs / f"{name}.log", "wb") as log:
            processes.append(
                subprocess.Popen(
                    [spark_class, *args],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )

    try:
        start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
              "--webui-port", str(ui_port))  # fmt: skip
        for i in range(workers):
            start(f"worker-{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                  "--cores", str(cores_per_worker), "--memory", "1g", "--webui-port", str(worker_ui_ports[i]),
                  "--work-dir", str(tmp_path / f"work-{i}"), master_url)  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT_S
        while _alive_workers(status_url) < workers:
            if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
                log_text = "\n".join(
                    f"--- {p.name}\n{p.read_text()[-2000:]}" for p in sorted(logs.glob("*.log"))
                )
                raise RuntimeError(f"the Spark cluster did not start ({workers} workers wanted):\n{log_text}")
            time.sleep(0.5)
        yield SparkCluster(master_url, status_url, workers)
    finally:
        for process in reversed(processes):
            _stop(process)


def stop_session(session: Any) -> None:
    """Stops a SparkSession and pyspark's gateway JVM, which ``stop()`` leaves running (1.2 GB resident) until the
    process exits: the rest of the suite should not share the machine with it. It exits when its stdin closes."""
    from pyspark import SparkContext

    session.stop()
    gateway = SparkContext._gateway
    if gateway is not None:
        gateway.shutdown()
        gateway.proc.stdin.close()
        gateway.proc.wait(timeout=60)
        SparkContext._gateway = SparkContext._jvm = None
