"""asv benchmarks of the tracked suite (tools/bench/track.py)."""
