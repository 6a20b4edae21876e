"""One read of a running driver's cnc.dat (ours or the Java driver's), and a mapping that follows the driver
across restarts: what the CLI's views and the Prometheus exporter both show. Maps cnc.dat read-only and never
writes to it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from driver.concurrent.cnc_file import CNC_FILE, CNC_VERSION, CncError, CncFile
from driver.concurrent.counter_types import (
    PUBLISHER_LIMIT_TYPE_ID,
    PUBLISHER_POS_TYPE_ID,
    RECEIVER_HWM_TYPE_ID,
    RECEIVER_POS_TYPE_ID,
    SENDER_POSITION_TYPE_ID,
    SUBSCRIBER_POSITION_TYPE_ID,
    CounterInfo,
    read_counters,
)
from driver.concurrent.counters import CountersReader
from driver.concurrent.error_log import ErrorLogReader
from driver.concurrent.ring_buffer import ManyToOneRingBuffer
from driver.util.files import describe_os_error


@dataclass(frozen=True)
class DriverSnapshot:
    """What one read of cnc.dat says about the driver."""

    cnc_path: Path
    version: int
    pid: int
    start_timestamp_ms: int
    client_liveness_timeout_ns: int
    heartbeat_ms: int  # to-driver ring consumer heartbeat (epoch ms), written by the driver conductor
    counters: list[CounterInfo] = field(default_factory=list)
    distinct_errors: int = 0
    error_observations: int = 0


def read_snapshot(cnc: CncFile, with_errors: bool = True) -> DriverSnapshot:
    reader = CountersReader(cnc.counters_metadata_buffer, cnc.counters_values_buffer)
    counts: list[int] = []
    if with_errors:
        ErrorLogReader.read(cnc.error_log_buffer, lambda count, _f, _l, _t: counts.append(count))
    return DriverSnapshot(
        cnc_path=cnc.path,
        version=cnc.version,
        pid=cnc.pid,
        start_timestamp_ms=cnc.start_timestamp_ms,
        client_liveness_timeout_ns=cnc.client_liveness_timeout_ns,
        heartbeat_ms=ManyToOneRingBuffer(cnc.to_driver_buffer).consumer_heartbeat_time(),
        counters=read_counters(reader),
        distinct_errors=len(counts),
        error_observations=sum(counts),
    )


class CncWatcher:
    """Keeps a read-only mapping of ``<dir>/cnc.dat`` that follows the driver across restarts.

    A driver restart deletes and recreates the file (new inode), or at least rewrites the pid and start
    timestamp; either way the old mapping is dropped and the new file mapped once it is ready (version 15).
    """

    def __init__(self, aeron_dir: str | os.PathLike[str]) -> None:
        self.path = Path(aeron_dir) / CNC_FILE
        self._cnc: CncFile | None = None
        self._identity: tuple[int, int, int, int] | None = None
        self.maps = 0  # how many times a (new) cnc.dat was mapped
        self.problem = "not mapped yet"

    def current(self) -> CncFile | None:
        """The mapped, ready cnc.dat, or None (then ``problem`` says why)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._unmap(f"{self.path} does not exist")
            return None
        except OSError as e:
            self._unmap(describe_os_error(e))
            return None
        cnc = self._cnc
        if cnc is not None:
            stat_identity = (st.st_dev, st.st_ino)
            if (
                self._identity is None
                or stat_identity != self._identity[:2]
                or ((cnc.start_timestamp_ms, cnc.pid) != self._identity[2:])
            ):
                self._unmap("cnc.dat was replaced")
                cnc = None
        if cnc is None:
            cnc = self._map(st)
        return cnc

    def _map(self, st: os.stat_result) -> CncFile | None:
        try:
            cnc = CncFile.map_existing(self.path, writable=False)
        except OSError as e:
            self.problem = describe_os_error(e)
            return None
        except (CncError, ValueError) as e:
            self.problem = str(e)
            return None
        version = cnc.version
        if version != CNC_VERSION:
            # 0: the driver is still creating it (its header lengths may not be written yet): map again later.
            cnc.close()
            self.problem = (
                f"{self.path} is not ready yet (CnC version 0)"
                if version == 0
                else f"{self.path} has CnC version {version}, not {CNC_VERSION} (Aeron 1.15.1)"
            )
            return None
        self._cnc = cnc
        self._identity = (st.st_dev, st.st_ino, cnc.start_timestamp_ms, cnc.pid)
        self.maps += 1
        self.problem = ""
        return cnc

    def _unmap(self, why: str) -> None:
        if self._cnc is not None:
            self._cnc.close()
            self._cnc = None
            self._identity = None
        self.problem = why

    def close(self) -> None:
        self._unmap("closed")

    def __enter__(self) -> CncWatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- derived positions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DerivedPosition:
    """A difference of two position counters of one publication or image, e.g. a receive gap."""

    name: str  # receive_gap | subscriber_lag | sender_backlog | publisher_headroom
    registration_id: int
    session_id: int
    stream_id: int
    channel: str
    value: int


def _by_registration(counters: Iterable[CounterInfo], type_id: int) -> dict[int, CounterInfo]:
    return {c.registration_id: c for c in counters if c.type_id == type_id and c.registration_id is not None}


def derived_positions(counters: list[CounterInfo]) -> Iterator[DerivedPosition]:
    """Receive gap (rcv-hwm - rcv-pos), subscriber lag (rcv-pos - sub-pos), sender backlog (pub-pos - snd-pos)
    and publisher headroom (pub-lmt - pub-pos), each labelled by the counter it is about.

    Pairs of one image (hwm/pos) or one publication (pub-pos/snd-pos/pub-lmt) share the registration id.
    A sub-pos is matched to the image with its session, stream and channel (else the only image with its
    session and stream); IPC subscribers, which have no image, are measured against the publication's pub-pos.
    Lag and backlog are floored at 0: pub-pos is a sample taken once per driver timer interval.
    """
    rcv_pos = _by_registration(counters, RECEIVER_POS_TYPE_ID)
    pub_pos = _by_registration(counters, PUBLISHER_POS_TYPE_ID)
    for hwm in counters:
        if hwm.type_id == RECEIVER_HWM_TYPE_ID and hwm.registration_id in rcv_pos:
            pos = rcv_pos[hwm.registration_id]
            yield _derived("receive_gap", hwm, max(0, hwm.value - pos.value))
    images_by_stream: dict[tuple[int | None, int | None], list[CounterInfo]] = {}
    for pos in rcv_pos.values():
        images_by_stream.setdefault((pos.session_id, pos.stream_id), []).append(pos)
    for sub in counters:
        if sub.type_id != SUBSCRIBER_POSITION_TYPE_ID or sub.registration_id is None:
            continue
        candidates = images_by_stream.get((sub.session_id, sub.stream_id), [])
        exact = [c for c in candidates if c.channel == sub.channel]
        ref = exact[0] if len(exact) == 1 else (candidates[0] if len(candidates) == 1 and not exact else None)
        if ref is None:
            ipc = [
                p
                for p in pub_pos.values()
                if (p.session_id, p.stream_id, p.channel) == (sub.session_id, sub.stream_id, sub.channel)
            ]
            ref = ipc[0] if len(ipc) == 1 else None
        if ref is not None:
            yield _derived("subscriber_lag", sub, max(0, ref.value - sub.value))
    for snd in counters:
        if snd.type_id == SENDER_POSITION_TYPE_ID and snd.registration_id in pub_pos:
            yield _derived("sender_backlog", snd, max(0, pub_pos[snd.registration_id].value - snd.value))
    for lmt in counters:
        if lmt.type_id == PUBLISHER_LIMIT_TYPE_ID and lmt.registration_id in pub_pos:
            yield _derived("publisher_headroom", lmt, lmt.value - pub_pos[lmt.registration_id].value)


def _derived(name: str, c: CounterInfo, value: int) -> DerivedPosition:
    return DerivedPosition(
        name, c.registration_id or 0, c.session_id or 0, c.stream_id or 0, c.channel or "", value
    )
