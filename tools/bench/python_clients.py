#!/usr/bin/env python3
"""Python publisher process -> Python subscriber process through OUR driver: our client against pyaeron's
(the Aeron 1.53 C client's CPython bindings), over ``aeron:ipc`` and UDP loopback, 32 B and 1 KiB.

Both clients run against the same driver in the same run, on the same interpreter: the Python 3.12 venv that
harness/install.py makes for pyaeron (or ``--python``). Our client runs there from this checkout: the first
run installs the project's runtime dependencies into that venv and builds the C fast path for that Python next to
the checkout's own (``ours_on``); the JSON line says which fast path each side ran with. When pyaeron cannot be
had the comparisons are skipped, the reason printed, and ours runs on this interpreter.
Each side samples (time, messages so far, its own CPU seconds) every 0.1 s (tools/bench/python_clients_peer.py);
the first 2 s after the first message are dropped and the rest cut into 1 s spans: a run's figure is the median
of its per-second rates, and the benchmark's the median over ``--runs`` runs. CPU is each process's CPU time
over the same window, in % of one core.

Modes of our client besides ``message`` (offer / poll(handler)): ``batch`` (``Publication.offer_many`` ->
``Subscription.poll_batch``), ``asyncio`` (``offer_async`` -> ``async for ... in subscription.messages()``, one
await per message) and ``asyncio-batch`` (``aio.offer_many`` -> ``async for ... in
subscription.fragment_batches()``, one await per batch); the asyncio modes run on uvloop (``aio.run``).

Each setting runs ``--runs`` times (default 5), the settings interleaved and every other round in reverse order.
The JSON line gives per setting the medians (subscriber and publisher rates, each process's CPU) and the spread
of the subscriber's rate over the runs (min, max, and (max - min) / median); per ratio its value from the medians
and the range of the per-round ratios (round i of one setting over round i of the other).

Goals: per message >= 1.2x pyaeron over IPC and >= 1.0x over UDP; batch (subscriber and publisher rates) >= 3x
pyaeron's per-message figure; asyncio >= 0.8x our per-message (blocking) figure and asyncio-batch >= 0.9x our
batch figure. Prints progress and a summary to stderr and one JSON line to stdout; exits 0 when every goal is
met, 1 when one is missed, 2 when pyaeron was unavailable.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from pathlib import Path
from typing import Any

from harness import install
from harness.children import Proc
from tools.bench.harness import ROOT, Harness, free_udp_port
from tools.bench.report import BenchError, emit, host_info, progress

PEER = ("-m", "tools.bench.python_clients_peer")  # run from the repository root, in either venv
DROP_S = 2.0
STREAM_IDS = itertools.count(2001)


def pyaeron_python() -> tuple[str | None, str | None]:
    """(the pyaeron venv's python, None) or (None, why it cannot be had)."""
    try:
        return str(install.install_pyaeron()), None
    except RuntimeError as exc:
        return None, str(exc)


OURS_PROBE = (
    "import sys; sys.path.insert(0, sys.argv[1]); import driver.client; "
    "from driver.concurrent.logbuffer import fastpath; print(fastpath.status())"
)
FAST_PATH = "fast path loaded"


def _run(cmd: list[str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def _fast_path_status(python: str) -> str:
    probe = _run([python, "-c", OURS_PROBE, str(ROOT)], 120)
    return probe.stdout.strip() if probe.returncode == 0 else f"not importable: {probe.stderr.strip()[-300:]}"


def _stale_natives(python: str) -> bool:
    """True when the checkout has no extension for ``python`` or one older than the C sources."""
    suffix = _run([python, "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"], 60)
    built = list((ROOT / "driver").rglob(f"*{suffix.stdout.strip()}")) if suffix.returncode == 0 else []
    sources = [p.stat().st_mtime for p in (ROOT / "native").rglob("*") if p.suffix in (".c", ".h")]
    return not built or (bool(sources) and min(p.stat().st_mtime for p in built) < max(sources))


def ours_on(python: str) -> str:
    """Make this checkout's client run on ``python`` with its C fast path; returns the fast path's status.

    Installs the project's runtime dependencies into that interpreter's environment (pip) and, when the checkout
    has no extension built for that Python (or one older than native/), builds the project's wheel with it and
    puts the wheel's extension modules for that Python next to the checkout's own (as an editable build
    would): the peer imports ``driver`` from the checkout on either interpreter."""
    status = _fast_path_status(python)
    if python == sys.executable or (status == FAST_PATH and not _stale_natives(python)):
        return status  # this interpreter's build is the Makefile's business
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    progress(f"installing our client's dependencies and building its C fast path for {python}")
    steps = [[python, "-m", "pip", "--disable-pip-version-check", "-q", "install", *dependencies]]
    with tempfile.TemporaryDirectory(prefix="python-clients-wheel-") as wheels:
        steps.append(
            [
                python,
                "-m",
                "pip",
                "--disable-pip-version-check",
                "-q",
                "wheel",
                "--no-deps",
                "-w",
                wheels,
                str(ROOT),
            ]
        )
        for step in steps:
            result = _run(step)
            if result.returncode != 0:
                raise BenchError(
                    f"{' '.join(step)} exited {result.returncode}: {result.stderr.strip()[-1000:]}"
                )
        suffix = _run([python, "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"], 60)
        for wheel in Path(wheels).glob("*.whl"):
            with zipfile.ZipFile(wheel) as archive:
                for name in archive.namelist():
                    if name.startswith("driver/") and (
                        name.endswith(suffix.stdout.strip())
                        or (name.endswith(".so") and not (ROOT / name).exists())
                    ):
                        (ROOT / name).write_bytes(archive.read(name))
    return _fast_path_status(python)


def window(samples: list[list[float]]) -> tuple[float | None, float | None]:
    """(median per-second rate, CPU % of a core) after the first DROP_S seconds."""
    t_start = samples[0][0]
    start = next((i for i, s in enumerate(samples) if s[0] >= t_start + DROP_S), None)
    if start is None:
        return None, None
    rates = []
    a = samples[start]
    for b in samples[start + 1 :]:
        if b[0] - a[0] >= 1.0:
            rates.append((b[1] - a[1]) / (b[0] - a[0]))
            a = b
    if not rates:
        return None, None
    first, last = samples[start], a
    cpu = 100.0 * (last[2] - first[2]) / (last[0] - first[0])
    return statistics.median(rates), cpu


def result_of(proc: Proc) -> dict[str, Any] | None:
    match = proc.find(r"^RESULT (\{.*\})$")
    return json.loads(match.group(1)) if match else None


def wait_result(proc: Proc, timeout: float) -> None:
    """Until ``proc`` printed its RESULT line (read what it printed before deciding it died without one)."""
    deadline = time.monotonic() + timeout
    while proc.find("^RESULT") is None:
        if not proc.alive:
            proc.join_output()
            if proc.find("^RESULT") is None:
                raise BenchError(f"{proc.name} exited ({proc.returncode}) without a result: {proc.tail()}")
            return
        if time.monotonic() > deadline:
            raise BenchError(f"{proc.name}: no result after {timeout:g} s: {proc.tail()}")
        time.sleep(0.05)


def one_run(
    harness: Harness,
    aeron_dir: Path,
    python: str,
    client: str,
    mode: str,
    transport: str,
    length: int,
    seconds: float,
    idle: str,
) -> dict[str, Any]:
    channel = "aeron:ipc" if transport == "ipc" else f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}"
    stream_id = next(STREAM_IDS)
    common = [client, mode, idle, str(aeron_dir), channel, str(stream_id), str(seconds)]
    sub = harness.spawn(f"{client}-sub", [python, *PEER, "sub", *common])
    pub = None
    try:
        harness.wait_for(lambda: sub.find("^READY") is not None, 30, "subscriber ready", watch=[sub])
        pub = harness.spawn(f"{client}-pub", [python, *PEER, "pub", *common, str(length)])
        wait_result(pub, seconds + 40)
        wait_result(sub, 20)
        sub_rate, sub_cpu = window(result_of(sub)["samples"])
        pub_rate, pub_cpu = window(result_of(pub)["samples"])
    finally:
        for proc in (sub, pub):
            if proc is not None and proc.alive:
                proc.signal(15)
                try:
                    proc.popen.wait(5)
                except Exception:
                    proc.signal(9)
    return {"sub_rate": sub_rate, "pub_rate": pub_rate, "sub_cpu": sub_cpu, "pub_cpu": pub_cpu}


def _config(key: str) -> tuple[str, str, str, int]:
    client, mode, transport, length = key.split("/")
    return client, mode, transport, int(length)


def median_of(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transports", default="ipc,udp")
    parser.add_argument("--lengths", default="32,1024")
    parser.add_argument("--modes", default="message,batch,asyncio,asyncio-batch", help="our client's modes")
    parser.add_argument(
        "--seconds", type=float, default=6.0, help="sampled seconds per run (first 2 dropped)"
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--idle",
        choices=("busy-spin", "backoff"),
        default="busy-spin",
        help="the message and batch loops of both clients: spin, or each client's backoff idle strategy",
    )
    parser.add_argument("--no-pyaeron", action="store_true")
    parser.add_argument(
        "--python",
        help="the interpreter both clients run on (it needs pyaeron); default: the pyaeron venv harness/install.py makes",
    )
    args = parser.parse_args()

    info = host_info()
    if args.no_pyaeron:
        pyaeron, why = None, "--no-pyaeron"
    elif args.python is not None:
        probe = _run([args.python, "-c", "import pyaeron"], 120)
        pyaeron, why = (args.python, None) if probe.returncode == 0 else (None, f"{args.python}: no pyaeron")
    else:
        pyaeron, why = pyaeron_python()
    if pyaeron is None:
        progress(f"pyaeron skipped: {why}")
    ours_python = pyaeron or args.python or sys.executable
    try:
        ours_fast_path = ours_on(ours_python)
    except (BenchError, OSError, subprocess.TimeoutExpired) as exc:
        progress(f"our client cannot run on {ours_python}: {exc}")
        return 2
    progress(f"ours on {ours_python}: {ours_fast_path}")
    pythons = {"ours": ours_python, "pyaeron": pyaeron}
    versions = {
        client: _run([python, "-c", "import sys; print(sys.version.split()[0])"], 60).stdout.strip()
        for client, python in pythons.items()
        if python is not None
    }
    configs: list[tuple[str, str, str, int]] = []
    for transport in args.transports.split(","):
        for length in (int(x) for x in args.lengths.split(",")):
            for mode in args.modes.split(","):
                configs.append(("ours", mode, transport, length))
            if pyaeron is not None:
                configs.append(("pyaeron", "message", transport, length))

    runs: dict[tuple[str, str, str, int], list[dict[str, Any]]] = {c: [] for c in configs}
    with Harness() as harness:
        driver = harness.start_driver("ours")
        for run in range(args.runs):
            order = configs if run % 2 == 0 else list(reversed(configs))
            for config in order:
                client, mode, transport, length = config
                python = pythons[client]
                try:
                    figures = one_run(
                        harness,
                        driver.aeron_dir,
                        python,
                        client,
                        mode,
                        transport,
                        length,
                        args.seconds,
                        args.idle,
                    )
                except BenchError as exc:
                    progress(f"{config}: failed: {exc}")
                    figures = {"error": str(exc)}
                progress(f"run {run + 1} {client:7} {mode:8} {transport} {length:5} B: {figures}")
                runs[config].append(figures)

    results: dict[str, Any] = {}
    for config, config_runs in runs.items():
        client, mode, transport, length = config
        figures: dict[str, Any] = {
            key: (round(v) if key.endswith("rate") else round(v, 1))
            if (v := median_of(config_runs, key)) is not None
            else None
            for key in ("sub_rate", "pub_rate", "sub_cpu", "pub_cpu")
        }
        rates = [r["sub_rate"] for r in config_runs if r.get("sub_rate") is not None]
        if rates and figures["sub_rate"]:
            figures["sub_rate_min"], figures["sub_rate_max"] = round(min(rates)), round(max(rates))
            figures["sub_rate_spread"] = round((max(rates) - min(rates)) / statistics.median(rates), 3)
        figures["runs_measured"] = len(rates)
        results[f"{client}/{mode}/{transport}/{length}"] = figures

    ratios: dict[str, Any] = {}
    goals: dict[str, bool] = {}

    def ratio(name: str, num: tuple[str, str], den: tuple[str, str], goal: float) -> None:
        """``num`` over ``den`` (each a results key and a figure): from the medians, and per round."""
        top, bottom = results.get(num[0]), results.get(den[0])
        if top is None or bottom is None:
            return
        a, b = top.get(num[1]), bottom.get(den[1])
        value = round(a / b, 3) if a and b else None
        per_round = [
            x[num[1]] / y[den[1]]
            for x, y in zip(runs[_config(num[0])], runs[_config(den[0])], strict=False)
            if x.get(num[1]) and y.get(den[1])
        ]
        ratios[name] = {
            "ratio": value,
            "goal": goal,
            "met": value is not None and value >= goal,
            "round_min": round(min(per_round), 3) if per_round else None,
            "round_max": round(max(per_round), 3) if per_round else None,
        }
        goals[name] = value is not None and value >= goal

    for transport in args.transports.split(","):
        per_message_goal = 1.2 if transport == "ipc" else 1.0
        for length in (int(x) for x in args.lengths.split(",")):
            ours, theirs = f"ours/message/{transport}/{length}", f"pyaeron/message/{transport}/{length}"
            batch = f"ours/batch/{transport}/{length}"
            ratio(
                f"message/{transport}/{length} vs pyaeron",
                (ours, "sub_rate"),
                (theirs, "sub_rate"),
                per_message_goal,
            )
            ratio(
                f"batch poll/{transport}/{length} vs pyaeron", (batch, "sub_rate"), (theirs, "sub_rate"), 3.0
            )
            ratio(
                f"vectored offer/{transport}/{length} vs pyaeron",
                (batch, "pub_rate"),
                (theirs, "pub_rate"),
                3.0,
            )
            ratio(
                f"asyncio/{transport}/{length} vs ours blocking",
                (f"ours/asyncio/{transport}/{length}", "sub_rate"),
                (ours, "sub_rate"),
                0.8,
            )
            ratio(
                f"asyncio-batch/{transport}/{length} vs ours batch",
                (f"ours/asyncio-batch/{transport}/{length}", "sub_rate"),
                (batch, "sub_rate"),
                0.9,
            )

    progress("medians of the subscriber's rate over the runs (min - max, spread), each process's CPU:")
    for name, figures in results.items():
        if figures.get("sub_rate"):
            progress(
                f"  {name:28} {figures['sub_rate'] / 1e6:7.2f} M msgs/s "
                f"({figures['sub_rate_min'] / 1e6:.2f} - {figures['sub_rate_max'] / 1e6:.2f}, "
                f"{100 * figures['sub_rate_spread']:.0f} %), CPU sub {figures['sub_cpu']} % "
                f"pub {figures['pub_cpu']} %, {figures['runs_measured']} runs"
            )
    for name, r in ratios.items():
        progress(
            f"  {name:40} {r['ratio']}x (rounds {r['round_min']} - {r['round_max']}), goal >= {r['goal']}: "
            f"{'met' if r['met'] else 'MISSED'}"
        )

    emit(
        {
            "bench": "python_clients",
            **info,
            "load_end": round(__import__("os").getloadavg()[0], 2),
            "runs": args.runs,
            "seconds": args.seconds,
            "idle": args.idle,
            "pyaeron": why or "yes",
            "python": versions,
            "ours_fast_path": ours_fast_path,
            "results": results,
            "ratios": ratios,
        }
    )
    if pyaeron is None:
        return 2
    return 0 if all(goals.values()) else 1


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    progress(f"done in {time.monotonic() - started:.0f} s")
    sys.exit(code)
