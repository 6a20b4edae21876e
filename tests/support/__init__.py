"""Test support: the one copy of each helper the tests share. Import with ``from tests.support import ...``
(pyproject's pytest ``pythonpath = ["."]`` makes ``tests`` importable under ``--import-mode=importlib``).
What the tools use too (embedded drivers, archive hosts, waiting, ports, the peer kit) is in the top-level
``harness`` package; the names below whose file is under harness/ are re-exported here from it.

What is here, and when to use which:

``ManualClock`` (clock.py)
    Epoch-ms and monotonic-ns views of one manual time (``epoch_clock_ms``, ``nano_clock``, ``advance_ms``,
    ``advance_ns``, settable ``epoch_ms``). Use it for every protocol timer (NAK delay, SM timeout, liveness,
    linger, keepalive, image timeouts, counter reuse): hand its clocks to the agent or ``MediaDriver`` under
    test and advance it, instead of sleeping. The ``clock`` fixture gives a fresh one.
``FakeTransport``, ``FakeBatch`` (transport.py)
    A recording stand-in for a UDP transport and its receive batch, for sans-IO tests of endpoints, sender and
    receiver: ``inbox`` feeds ``receive_batch``; ``take()`` returns (datagram, address) pairs sent,
    ``take_data()`` the datagrams only.
``wait_for(predicate, timeout_s, what)``, ``wait_until`` (harness/wait.py)
    Poll with a deadline for what another thread, process or socket does (a Java peer, a driver's thread);
    the failure names ``what``. ``wait_until`` is the ``async`` form, for code on an event loop.
``free_port(kind)`` (harness/ports.py)
    A loopback port the OS just had free ("udp" or "tcp"); never use fixed ports.
``free_udp_channels(n)``, ``archive_channels()``, ``start_java_archive``/``java_archive`` (java_archive.py)
    The real 1.15.1 Archive (tests/interop/java/ArchiveLauncher.java) as a peer: fresh UDP channels and the
    ``aeron.archive.*`` channel properties, and the archive's start (after ARCHIVE READY) and stop. Import
    from ``tests.support.java_archive``; tests/archive/conftest.py has a module-scoped ``java_archive`` fixture.
``archive_env(tmp_path, archive_dir=None, **ctx)``, ``Env`` (archive_env.py)
    Our archive (SHARED) on an embedded driver, its clock a ManualClock, with a client and an
    ``ArchiveControl`` session (archive_control.py: raw control requests and every response). Import from
    ``tests.support.archive_env``; wrap it in a fixture where a test module needs one.
``OurArchive``, ``start_our_archive``, ``embedded_archive`` (our_archive.py)
    Our archive as the same kind of peer: standalone (``python -m driver archive`` on any driver, after "archive
    running") or embedded (read through its driver's log); ``errors()`` in the Java launcher's form. Import
    from ``tests.support.our_archive``; tests/archive/conftest.py's ``archive_server`` fixture runs the real
    archive and ours.
``start_service_env``, ``stop_service_env``, ``ServiceEnv``, ``Publisher``, ``Receiver`` (service_env.py)
    Our driver and archive (SHARED, real clocks) with the record & replay HTTP service on the driver's loop, an
    httpx client of it and an Aeron client; threads that publish and receive; ``record``, ``wait_for_state``,
    ``replay_payloads`` drive the API to a job's end. Import from ``tests.support.service_env``; tests/service's
    ``service_env`` fixture wraps it. ``python -m harness.fast_publisher`` (a publisher as fast as the stream
    takes it) and ``python -m tests.support.status_pollers`` (many concurrent HTTP pollers) run in processes of
    their own, for load tests.
``ArchiveHost`` (harness/archive_host.py)
    Our driver and archive in a network namespace (a harness/netns.py ``Host``), reached from this process
    through the driver's aeron dir (``archive``: an AeronArchive on the local control channel); ``replicate``
    runs ``mediadriver archive replicate`` against it. Import from ``harness.archive_host``.
``JavaPeers``, ``Spawned``, ``find_peer_paths``, ``compile_java_sources`` (java_peers.py)
    The real Aeron 1.15.1 peer: Java programs compiled (``javac --release 11``) and run, and children whose
    stdout is read with deadlines (a test fails with their output). ``DriverPool``, ``DriverProcess``
    (driver_pool.py): ours or the Java MediaDriver in processes of their own, ready once cnc.dat is, stopped at
    ``close``. ``parse_stat``, ``parse_errors`` (stat_output.py): AeronStat and ErrorStat output. They stand on
    the peer kit in harness/ (finding the peer, compiling, starting children, reading cnc.dat, network
    namespaces), which the benchmarks use too. The interop fixtures (tests/interop/conftest.py) wrap them.
``assert_same_recording`` (recording_files.py)
    Two recordings' descriptors and segment bytes over the recorded range compared (replication tests). Import
    from ``tests.support.recording_files``.
``Browser``, ``unavailable`` (browser.py)
    Debian's headless chromium driven through chromedriver (W3C WebDriver over httpx), for tests of the
    service's web page: ``open``, ``click``, ``type_into``, ``text``, ``wait_text``, ``run`` (a script).
    Import from ``tests.support.browser``; ``unavailable()`` is the reason to skip when chromium is missing.
``LogWriter`` (log_writer.py)
    Messages into a publication log (three contiguous terms + metadata) through the package's real
    concurrent offer path (NativeOffer), as a client's ``Publication.offer`` writes them: ``offer`` returns
    what ``Publication.offer`` would, ``append`` retries rotations. Use it for any test that needs messages
    in a log (a network publication to send, a reference stream to cut into datagrams).
``scratch_dir(factory, name)`` (scratch.py)
    A ``tmp_path_factory`` dir removed when its block ends: use it in every module- or session-scoped fixture
    that writes recordings, segments or other bulk (pytest would keep them until the run ends). Import from
    ``tests.support.scratch``.
``mounted_tmpfs(mount_point, size)`` (tmpfs.py)
    A real tmpfs mounted for the block (tests run as root; elsewhere the test skips): a file system that fills up,
    or an aeron or archive dir that is a mount point, as a container's memory-backed volume is. Import from
    ``tests.support.tmpfs``.
``another_user()``, ``run_as``, ``run_command_as``, ``as_user`` (users.py)
    A second user and its group for the block (root only; elsewhere the test skips), and code, a ``mediadriver``
    command or any command run as that user. Import from ``tests.support.users``.
``Rig``, ``Peer``, ``Readiness``, ``MODES`` (differential.py)
    One driver's data path run three ways (the SHARED Python cycle, the native steady-state cycle serving the
    wake-ups it can, DEDICATED's agent by agent) over the same scripted events against a peer of real loopback
    sockets, its clocks manual and the loop's socket readiness delivered by hand; ``Rig.result()`` is what a
    run observed (datagrams per event, delivered messages, counters, the loss report). Import from
    ``tests.support.differential``; tests/test_fast_cycle_differential.py compares the modes.
``PlainAgent`` (agents.py)
    An agent with no work that no work probe can watch: an added agent sharing a runner, in runner tests.
``EmbeddedDriver``, ``embedded_driver(...)``, ``new_aeron_dir()`` (harness/embedded.py)
    A MediaDriver in this process on a **uvloop** loop in a background thread, as users run it: fast to
    start, and it takes a ManualClock's clocks. The ``embedded_driver`` fixture (tests/conftest.py) starts
    them in the test's ``aeron_dir`` and stops them at teardown; the context manager of the same name is for
    code outside fixtures. For a driver in its own process use the ``driver_process`` fixture (tests/conftest.py),
    and for Java peers the interop fixtures (tests/interop/conftest.py).
``recording_archive``, ``record``, ``replay``, ``replay_messages`` (harness/recorded_streams.py)
    Our archive on an embedded driver (real clocks) with an ``AeronArchive`` client; recordings of Python
    publications (a session may publish some messages before its recording joins); a full replay of a stopped
    recording into a ``FragmentAssembler``. What the Spark recording source is checked and benchmarked against.
    Import from ``harness.recorded_streams`` (the Spark recording benchmark uses it too).
``file_opens(directory)`` (file_opens.py)
    A Counter of the files of a directory any process opens while the block runs (inotify ``IN_OPEN``): how
    many segment files a Spark query read. Import from ``tests.support.file_opens``.
``spark_cluster(tmp_path, workers)``, ``stop_session(spark)`` (harness/spark_cluster.py)
    A standalone Spark cluster on loopback from pyspark's own scripts; a session stopped with its gateway JVM.
"""

from harness.embedded import EmbeddedDriver, embedded_driver, new_aeron_dir
from harness.ports import free_port
from harness.wait import wait_for, wait_until
from tests.support.agents import PlainAgent
from tests.support.clock import ManualClock
from tests.support.log_writer import LogWriter
from tests.support.transport import FakeBatch, FakeTransport

__all__ = [
    "EmbeddedDriver",
    "FakeBatch",
    "FakeTransport",
    "LogWriter",
    "ManualClock",
    "PlainAgent",
    "embedded_driver",
    "free_port",
    "new_aeron_dir",
    "wait_for",
    "wait_until",
]
