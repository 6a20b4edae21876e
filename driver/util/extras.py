"""The optional extras (pyproject.toml) and the one-line error a command gives when the one it needs is missing.

Commands call ``require`` before they start anything, so a user without the extra sees which one to install and
the pip command, with exit code 2, instead of an ImportError traceback from deep inside the command.
"""

from __future__ import annotations

import importlib

DISTRIBUTION = "aio-media-driver"

EXTRAS: dict[str, tuple[str, ...]] = {
    "service": ("fastapi", "uvicorn"),  # the record & replay HTTP API and its page
    "analysis": ("pyspark", "pyarrow", "pandas", "matplotlib"),  # the Spark loss analysis and its charts
}
"""Each extra and the top-level modules our code imports from it."""

EXTRA_OF_MODULE = {module: extra for extra, modules in EXTRAS.items() for module in modules}


def install_command(extra: str) -> str:
    return f"pip install '{DISTRIBUTION}[{extra}]'"


class MissingExtra(Exception):
    """An optional extra is not installed; str() is the whole one-line message."""

    def __init__(self, extra: str, module: str, needed_by: str) -> None:
        super().__init__(
            f"{needed_by} needs the '{extra}' extra ({module} is not installed): {install_command(extra)}"
        )
        self.extra = extra
        self.module = module


def require(extra: str, needed_by: str) -> None:
    """Import every module of ``extra`` (a real import: a broken install fails here too) or raise MissingExtra."""
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise MissingExtra(extra, module, needed_by) from e


def missing_extra(error: ImportError, needed_by: str) -> MissingExtra | None:
    """The MissingExtra an ImportError stands for, or None when the module is not one of an extra's."""
    top = (error.name or "").partition(".")[0]
    extra = EXTRA_OF_MODULE.get(top)
    return None if extra is None else MissingExtra(extra, top, needed_by)
