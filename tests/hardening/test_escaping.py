"""Clients choose channels and labels: the CLI tools must never hand their control characters to a terminal."""

from __future__ import annotations

import subprocess
import sys

import pytest

from driver.client import Aeron, RegistrationError
from driver.util.text import printable

HOSTILE = "\x1b[2J\x07\r\nforged"
ESCAPED = "\\x1b[2J\\x07\\r\\nforged"


def mediadriver(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "driver", *args], capture_output=True, text=True, timeout=20
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def assert_safe(output: str) -> None:
    assert "\x1b" not in output and "\x07" not in output and "\r" not in output
    assert "\nforged" not in output


def test_printable_escapes_controls_and_format_characters() -> None:
    assert printable(HOSTILE) == ESCAPED
    assert printable("\u202eevil\x7f\x85") == "\\u202eevil\\x7f\\x85"
    assert printable("aeron:udp?endpoint=localhost:40123|é") == "aeron:udp?endpoint=localhost:40123|é"
    assert printable("a\nb\tc\r", keep="\n\t") == "a\nb\tc\\r"


def test_stat_streams_and_errors_print_hostile_channels_escaped(driver_process) -> None:
    driver = driver_process()
    directory = str(driver.aeron_dir)
    with Aeron.connect(aeron_dir=directory) as aeron:
        aeron.add_publication(f"aeron:ipc?alias={HOSTILE}", 7)
        aeron.add_counter(1001, f"label {HOSTILE}")
        with pytest.raises(RegistrationError):
            aeron.add_publication(f"aeron:udp?endpoint={HOSTILE}", 7)
        stat = mediadriver("stat", "--dir", directory, "--once")
        table = mediadriver("stat", "--dir", directory, "--once", "--table")
        streams = mediadriver("streams", "--dir", directory, "--once")
        errors = mediadriver("errors", "--dir", directory)
    for output in (stat, table, streams, errors):
        assert_safe(output)
    assert f"label {ESCAPED}" in stat and f"label {ESCAPED}" in table
    assert f"alias={ESCAPED}" in stat and f"alias={ESCAPED}" in streams
    assert f"endpoint={ESCAPED}" in errors
