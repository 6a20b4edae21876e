"""The harness the tests and the tools (benchmarks, ``make peers``, ``make dist``) both stand on, owned by
neither: tests/ and tools/ import from here, never from each other (tests/test_imports.py checks it). Not shipped
in the wheel or the sdist.

Peers and processes:

- ``install.py``: installs the jar, a Java 11 runtime and the pyaeron venv into ``.peers/`` (``make peers``).
- ``c_driver.py``: builds the Aeron 1.53 C driver ``aeronmd`` and our C sample clients (``c_samples/``) into
  ``.peers/aeron-c/`` (optional; ``make peers``) and finds them: the benchmarks' ``c`` reference.
- ``java.py``: finds what it installed and a ``javac``; compiles Java programs (``javac --release 11``) and
  builds ``java`` command lines.
- ``children.py``: child processes: their environment, their start (the benchmarks' in a session of their own),
  waiting until they are ready, and the output of one kept line by line.
- ``cnc.py``: a small reader of a driver's cnc.dat (readiness, header, counters, to-driver ring), independent
  of driver/ and usable against either driver.
- ``netns.py``: two network namespaces joined by an impaired link.
- ``errors.py``: ``PeerError``, what the kit raises when a peer cannot run.

Drivers, archives and waiting:

- ``embedded.py``: ``EmbeddedDriver``, ``embedded_driver(...)``, ``new_aeron_dir()``: a MediaDriver in this
  process on a uvloop loop in a background thread.
- ``archive_host.py``: ``ArchiveHost``, our driver and archive inside a ``netns.Host``.
- ``fast_publisher.py``, ``live_publisher.py``: publishers in processes of their own (``python -m harness.<name>``).
- ``spark_cluster.py``: a standalone Spark cluster (master and worker) on loopback; ``stop_session``.
- ``recorded_streams.py``: recordings of Python publications in our archive, and their full replays: what the
  Spark recording source is checked and benchmarked against.
- ``wait.py``: ``wait_for`` and ``wait_until``, polling with a deadline; ``ports.py``: ``free_port``.

Packaging: ``dist.py``, the sdist and the manylinux wheel (``make dist``, the Dockerfile, tests/packaging).
"""
