"""``python -m driver`` and the ``mediadriver`` command: the stop signals are held before anything else."""

import sys

from driver import stop_signals


def main() -> int:
    stop_signals.hold()
    # Imported after the handlers are in: importing the CLI alone takes ~50 ms, when a signal would kill.
    from driver.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
