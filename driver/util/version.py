"""The package's version, at the bottom layer so that counters and tools below ``driver`` can name it."""

VERSION = "0.1.0"
"""As ``version`` in pyproject.toml; ``driver.__version__`` is this."""
