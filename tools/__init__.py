"""The repository's own tools, run from its root (``python -m tools.bench.<name>``); not shipped in the
sdist or wheel (pyproject packages ``driver*`` only; MANIFEST.in prunes tools/)."""
