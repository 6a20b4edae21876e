"""The peer and process kit: what the benchmarks (tools/bench) and the interop tests (tests/interop and the
fixtures that start peers) both need to run the real Aeron 1.15.1 peer and our driver as child processes.

- ``install.py``: installs the jar, a Java 11 runtime and the pyaeron venv into ``.peers/`` (``make peers``).
- ``c_driver.py``: builds the Aeron 1.53 C driver ``aeronmd`` and our C sample clients (``c_samples/``) into
  ``.peers/aeron-c/`` (optional; ``make peers``) and finds them.
- ``java.py``: finds what it installed and a ``javac``; compiles Java programs (``javac --release 11``) and
  builds ``java`` command lines.
- ``children.py``: child processes: their environment, their start (the benchmarks' in a session of their own), waiting until
  they are ready, and the output of one kept line by line.
- ``cnc.py``: a small reader of a driver's cnc.dat (readiness, header, counters, to-driver ring), independent
  of driver/ and usable against either driver.
- ``netns.py``: two network namespaces joined by an impaired link.
"""
