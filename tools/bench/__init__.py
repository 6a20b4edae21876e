"""The benchmarks (tools/bench/README.md), each run from the repository root as
``python -m tools.bench.<name>``. This package imports nothing itself: a benchmark's child processes (some in
another Python, as python_clients_peer.py) import only what they use."""
