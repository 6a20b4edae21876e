"""Who may stop the driver with a TERMINATE_DRIVER command (Aeron 1.17's termination validators).

A validator sees the aeron directory and the token the client sent and says yes or no. As in Aeron, the
driver denies by default; ``aeron.driver.termination.validator=allow`` (or Aeron's class names) lets any
client stop it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from driver.util.settings import ConfigurationError

TerminationValidator = Callable[[Path, bytes], bool]


def deny_termination(_aeron_dir: Path, _token: bytes) -> bool:
    return False


def allow_termination(_aeron_dir: Path, _token: bytes) -> bool:
    return True


VALIDATORS: dict[str, TerminationValidator] = {
    "deny": deny_termination,
    "allow": allow_termination,
    "io.aeron.driver.DefaultDenyTerminationValidator": deny_termination,
    "io.aeron.driver.DefaultAllowTerminationValidator": allow_termination,
}


def parse_termination_validator(name: str, text: str) -> str:
    if text not in VALIDATORS:
        raise ConfigurationError(f"{name}={text!r}: expected one of {', '.join(VALIDATORS)}")
    return text


def termination_validator(setting: str) -> TerminationValidator:
    """The validator ``aeron.driver.termination.validator`` names."""
    return VALIDATORS[setting]
