"""``python -m driver`` and the ``mediadriver`` command: the stop signals are held before anything else."""

import sys

from driver import stop_signals

# Held at import, before the CLI's imports (its own, then in main() the command's family: a few hundred ms for
# `run`), when a signal would kill.
stop_signals.hold()

from driver.cli import main as cli_main  # noqa: E402  (after the hold, on purpose)


def main() -> int:
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
