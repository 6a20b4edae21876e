"""The tracked benchmark suite: ``make bench`` records this commit's figures and names what fell.

1. Runs the quick set (tools/bench/tracked/figures.py: each figure a same-run ratio against its reference,
   computed by this folder's benchmark scripts) with asv in the project's venv, recording the results for HEAD
   under tools/bench/records/<machine>/ (asv's format; commit them).
2. Rewrites the dated log of docs/performance.md from the records (tools/bench/performance_page.py).
3. Compares the newest record with the median of the (up to) three records before it, commit by commit along
   main's history: a figure that got worse by more than ``--threshold`` (20 %: a ratio where higher is better fell below 0.8x of its previous value,
   or one where lower is better rose above 1.25x) is named with the commit range, and the exit code is 1.

    .venv/bin/python -m tools.bench.track                 # run the quick set for HEAD, record, compare
    .venv/bin/python -m tools.bench.track --compare-only  # compare the records already there
    .venv/bin/python -m tools.bench.track --bench Startup # one class of the set (an asv regex)
    .venv/bin/python -m tools.bench.track --history       # every recorded figure, commit by commit

The machine's name is its kind (CPUs, memory, processor model), so records from machines of one kind compare.
Records are of commits: with uncommitted changes to tracked files it refuses to run (``--compare-only`` still
works).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tools.bench.tracked.figures import direction

ROOT = Path(__file__).resolve().parents[2]
BENCH = Path(__file__).resolve().parent
CONFIG = BENCH / "asv.conf.json"
RECORDS = BENCH / "records"
THRESHOLD = 0.20
BASELINE_RECORDS = 3


def machine_name() -> str:
    """``<cpus>cpu-<GiB>g-<processor model>``: the kind of machine, not the host, whose figures compare."""
    model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1]
            break
    mem_kb = int(
        next(
            line.split()[1]
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        )
    )
    slug = re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")
    slug = re.sub(r"-(cpu|processor|with-radeon.*)$", "", slug)[:40]
    return f"{os.cpu_count()}cpu-{round(mem_kb / 1024 / 1024)}g-{slug}"


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def asv(*args: str) -> int:
    cmd = [sys.executable, "-m", "asv", *args, "--config", str(CONFIG)]
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    return subprocess.run(cmd, cwd=ROOT, check=False).returncode


def record(machine: str, bench: str | None) -> int:
    """Run the quick set once for HEAD through asv and keep its results under records/<machine>/."""
    asv(
        "machine",
        "--yes",
        "--machine",
        machine,
        "--os",
        platform.platform(),
        "--num_cpu",
        str(os.cpu_count()),
    )
    head = git("rev-parse", "HEAD")
    args = [
        "run",
        "--python=same",
        "--set-commit-hash",
        head,
        "--machine",
        machine,
        "--quick",
        "--show-stderr",
    ]
    if bench:
        args += ["--bench", bench]
    return asv(*args)


@dataclass(frozen=True)
class Record:
    commit: str
    date: int
    values: dict[str, float]


def load_records(machine: str) -> list[Record]:
    """This machine's records, one per commit (runs of one commit merged, the latest run of each figure winning),
    oldest commit first (by commit date)."""
    runs: dict[str, tuple[int, dict[str, tuple[int, float]]]] = {}
    for path in sorted((RECORDS / machine).glob("*.json")):
        if path.name == "machine.json":
            continue
        data = json.loads(path.read_text())
        columns = data.get("result_columns", ["result"])
        _, values = runs.setdefault(data["commit_hash"], (int(data.get("date") or 0), {}))
        for name, row in data.get("results", {}).items():
            result = row[columns.index("result")]
            started = row[columns.index("started_at")] if "started_at" in columns else 0
            value = result[0] if isinstance(result, list) and result else result
            if isinstance(value, int | float) and started >= values.get(name, (-1, 0.0))[0]:
                values[name] = (started, float(value))
    records = [
        Record(commit, date, {name: value for name, (_, value) in values.items()})
        for commit, (date, values) in runs.items()
    ]
    return sorted(records, key=lambda r: r.date)


def worse_by(name: str, old: float, new: float) -> float:
    """How much worse ``new`` is than ``old`` (0.25 = a quarter worse), by the figure's direction."""
    better = direction(name)
    if old <= 0 or new <= 0:
        return 0.0
    return old / new - 1.0 if better == "higher" else new / old - 1.0


def compare(records: list[Record], threshold: float, baseline: int = BASELINE_RECORDS) -> list[str]:
    """Each figure of the newest record more than ``threshold`` worse than its baseline: the median of its values in
    the ``baseline`` latest earlier records that have it (one quick run per record is noisy; a median of a few is
    less so)."""
    if len(records) < 2:
        return []
    newest = records[-1]
    fallen = []
    for name, new in sorted(newest.values.items()):
        earlier = [r for r in records[:-1] if name in r.values][-baseline:]
        if not earlier:
            continue
        old = statistics.median(r.values[name] for r in earlier)
        worse = worse_by(name, old, new)
        if worse > threshold:
            fallen.append(
                f"{name}: {old:g} -> {new:g} ({worse:.0%} worse; {direction(name)} is better) "
                f"in {earlier[0].commit[:8]}..{newest.commit[:8]}"
            )
    return fallen


def history(records: list[Record]) -> None:
    names = sorted({n for r in records for n in r.values})
    print("figure".ljust(48) + "".join(r.commit[:8].rjust(10) for r in records))
    for name in names:
        cells = "".join(f"{r.values[name]:10.3g}" if name in r.values else " " * 10 for r in records)
        print(name.removeprefix("figures.").ljust(48) + cells)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare-only", action="store_true", help="compare the records already there")
    parser.add_argument("--history", action="store_true", help="print every recorded figure and exit")
    parser.add_argument("--bench", help="only the benchmarks matching this asv regex")
    parser.add_argument("--machine", default=None, help="the machine's name (default: its kind)")
    parser.add_argument("--threshold", type=float, default=THRESHOLD)
    args = parser.parse_args()
    machine = args.machine or machine_name()
    if args.history:
        history(load_records(machine))
        return 0
    asv_code = 0
    if not args.compare_only:
        if git("status", "--porcelain", "--untracked-files=no"):
            print("uncommitted changes: commit them first (records are of commits)", file=sys.stderr)
            return 2
        asv_code = record(machine, args.bench)
        if asv_code != 0:
            print(f"asv run exited {asv_code}: a benchmark failed (its figure is not recorded; see above)")
    records = load_records(machine)
    if not args.compare_only:
        subprocess.run([sys.executable, "-m", "tools.bench.performance_page"], cwd=ROOT, check=False)
    fallen = compare(records, args.threshold)
    if len(records) < 2:
        print(f"{len(records)} record(s) for {machine}: nothing to compare yet")
    elif fallen:
        print(f"Fell by more than {args.threshold:.0%} since the previous record:")
        for line in fallen:
            print("  " + line)
    else:
        print(
            f"No figure fell by more than {args.threshold:.0%} ({records[-2].commit[:8]}..{records[-1].commit[:8]})"
        )
    return 1 if fallen or (not args.compare_only and asv_code != 0) else 0


if __name__ == "__main__":
    sys.exit(main())
