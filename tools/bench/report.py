"""What a benchmark says: progress on stderr, exactly one JSON line on stdout, and its exit code."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from harness.errors import PeerError

BenchError = PeerError
"""A run that could not be measured; the message says why (and goes into the JSON line). The kit's error, so that
a peer that could not be found, built or started is reported like any other failed run."""


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def emit(result: Mapping[str, Any]) -> None:
    print(json.dumps(result, separators=(", ", ": ")), flush=True)


def no_comparison(base: Mapping[str, Any], exc: BaseException) -> int:
    """Say why nothing could be measured (stderr, and the JSON line ``{**base, "error": ...}``); exit code 2."""
    progress(str(exc))
    emit({**base, "error": str(exc)})
    return 2


def host_info() -> dict[str, Any]:
    """CPUs and 1-minute load average when the benchmark started: figures from a busy machine are noisy."""
    return {"cpus": os.cpu_count(), "load_1m": round(os.getloadavg()[0], 2)}


def run_main(main: Callable[[], int]) -> None:
    """Entry point wrapper: Ctrl-C (after the harness has cleaned up) exits 130 without a traceback."""
    try:
        code = main()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(code)
