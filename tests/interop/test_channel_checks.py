"""The wire tolerance table (tests/protocol/test_wire_tolerance.py) against the real 1.15.1 driver and ours.

ChannelChecks.java adds every case's channel with the real 1.15.1 client, in order, on one driver: against the
Java driver this checks that the table says what 1.15.1 does; against our driver (its own process) that ours
does the same for the Java client.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.protocol.test_wire_tolerance import CASES, DRIVER_PROPS, channels, free_ports, observed_matches

pytestmark = pytest.mark.interop

_ERROR = re.compile(r"^ERR code=(-?\d+) ")


def run_checks(run_java: Callable[..., Any], aeron_dir: object) -> list[str]:
    lines = [f"{kind}\t{stream_id}\t{channel}" for kind, stream_id, channel in channels(free_ports())]
    result = run_java("ChannelChecks", aeron_dir, input="\n".join(lines) + "\n", timeout=120, check=True)
    out = result.stdout.splitlines()
    assert len(out) == len(CASES), result.stdout + result.stderr
    wrong = []
    for case, line, answer in zip(CASES, lines, out, strict=True):
        error = _ERROR.match(answer)
        values = {} if error else {k: int(v) for k, v in (p.split("=") for p in answer.split()[1:])}
        code = int(error.group(1)) if error else None
        if not observed_matches(case, error is None, values, code):
            wrong.append(f"{line}: expected {case.expected}, got {answer}")
    return wrong


def test_the_table_is_what_the_1_15_1_driver_does(java_driver_factory, run_java) -> None:
    driver = java_driver_factory(DRIVER_PROPS)
    wrong = run_checks(run_java, driver.aeron_dir)
    assert not wrong, "\n".join(wrong)


def test_our_driver_answers_the_java_client_as_1_15_1_does(our_driver, run_java) -> None:
    driver = our_driver(DRIVER_PROPS)
    wrong = run_checks(run_java, driver.aeron_dir)
    assert not wrong, "\n".join(wrong)
