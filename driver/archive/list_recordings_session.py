"""Listing sessions: ListRecordings and ListRecordingsForUri, a few hundred catalog entries per duty cycle
(docs/archive.md section 9).

Unlike 1.15.1, invalid entries are skipped without counting against ``count``: the client waits for ``count``
descriptors, so it gets exactly what it asked for, or RECORDING_UNKNOWN at the end of the catalog.
"""

from __future__ import annotations

from driver.archive.catalog import Catalog, CatalogError
from driver.archive.control_response_proxy import descriptor_message
from driver.archive.control_session import ControlSession

MAX_SCANS_PER_WORK_CYCLE = 256


class ListRecordingsSession:
    def __init__(
        self,
        control_session: ControlSession,
        correlation_id: int,
        from_recording_id: int,
        count: int,
        catalog: Catalog,
        stream_id: int | None = None,
        channel_fragment: str | None = None,
    ) -> None:
        self.control_session = control_session
        self.correlation_id = correlation_id
        self._cursor = from_recording_id
        self.count = count
        self._remaining = count
        self._catalog = catalog
        self._stream_id = stream_id
        self._fragment = channel_fragment
        self.is_done = count <= 0

    def _matches(self, stream_id: int, original_channel: str) -> bool:
        if self._fragment is None:
            return True
        return stream_id == self._stream_id and self._fragment in original_channel

    def do_work(self) -> int:
        if self.is_done:
            return 0
        session = self.control_session
        if not session.is_active:
            self.is_done = True
            return 1
        catalog = self._catalog
        scanned = 0
        while scanned < MAX_SCANS_PER_WORK_CYCLE and self._remaining > 0:
            recording_id = self._cursor
            if not 0 <= recording_id < catalog.count_entries:
                session.send_recording_unknown(self.correlation_id, recording_id)
                self.is_done = True
                return scanned + 1
            try:
                descriptor = catalog.descriptor(recording_id)
            except CatalogError:
                descriptor = None  # a damaged entry is not listed (start-up reported it)
            if descriptor is not None and self._matches(descriptor.stream_id, descriptor.original_channel):
                message = descriptor_message(descriptor, session.control_session_id, self.correlation_id)
                if not session.try_send(message):
                    return scanned
                self._remaining -= 1
            self._cursor += 1
            scanned += 1
        if self._remaining <= 0:
            self.is_done = True
        return scanned
