"""The record & replay service's counters in cnc.dat (docs/service.md section 9): the state and progress of its
recording and replay jobs, so every reader of cnc.dat (``mediadriver stat``, AeronStat, the Prometheus exporter)
sees them with nothing to configure.

The service allocates them through the driver (ADD_COUNTER, as the archive does its rec-pos) and writes them a few
times a second; they go when the service's client closes. One counter per (job, field): type id
``SERVICE_JOB_TYPE_ID``, key ``job i32 @0, field i32 @4``, label ``service <job> <field>``.
"""

from __future__ import annotations

import re
import struct
from enum import IntEnum

SERVICE_JOB_TYPE_ID = 1200
"""Away from Aeron's own type ids (driver 0-12, archive 100): a client-defined counter type."""

JOB_OFFSET = 0
FIELD_OFFSET = JOB_OFFSET + 4
KEY_LENGTH = FIELD_OFFSET + 4
_KEY = struct.Struct("<ii")


class Job(IntEnum):
    RECORD = 0
    REPLAY = 1


class Field(IntEnum):
    STATE = 0  # a STATES index
    MESSAGES = 1
    BYTES = 2
    DURATION_MS = 3
    PROGRESS_PPM = (
        4  # of the limit (record: count or duration; replay: messages of all rounds), parts per million
    )
    REPEATS_DONE = 5  # replay only
    REPEAT = 6  # replay only


STATES = ("idle", "running", "stopping", "done", "cancelled", "failed")
"""The jobs' states (RecordStatus/ReplayStatus ``state``) in the order of their codes."""

FIELDS = {
    Job.RECORD: (Field.STATE, Field.MESSAGES, Field.BYTES, Field.DURATION_MS, Field.PROGRESS_PPM),
    Job.REPLAY: tuple(Field),
}

_LABEL = re.compile(r"^service (record|replay) ([a-z_]+)$")


def state_code(state: str) -> int:
    return STATES.index(state) if state in STATES else -1


def key(job: Job, field: Field) -> bytes:
    return _KEY.pack(job, field)


def label(job: Job, field: Field) -> str:
    return f"service {job.name.lower()} {field.name.lower()}"


def parse_label(text: str) -> tuple[Job, Field] | None:
    """(job, field) of a service counter's label; None for any other label. Readers that have only the label (the
    exporter's snapshot keeps labels, not keys) use this; the label is fixed ASCII well under the label limit."""
    match = _LABEL.match(text)
    if match is None:
        return None
    try:
        return Job[match.group(1).upper()], Field[match.group(2).upper()]
    except KeyError:
        return None
