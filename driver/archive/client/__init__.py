"""The Python archive client: control sessions with an Aeron 1.15.1 archive (docs/archive.md).

``AeronArchive.connect()`` (or ``await AeronArchive.connect_async()``) opens a control session; its methods
record, replay, list and truncate; ``archive.resume()`` is a stream's history then its live on one host
(``CatchUp``), ``ReplayMerge`` the same over UDP. ``RecordingEventsAdapter`` follows the recording events. Every failure is an
``ArchiveError`` (``code``, ``error_message``, ``correlation_id``); a timeout is an ``ArchiveTimeoutError``,
also a ``TimeoutError``. It imports nothing of the archive server, only its codecs.
"""

from driver.archive.client.aeron_archive import (
    NULL_LENGTH,
    NULL_POSITION,
    NULL_RECORDING_ID,
    AeronArchive,
    DescriptorConsumer,
    replay_channel_for_session,
)
from driver.archive.client.archive_proxy import ArchiveProxy
from driver.archive.client.catch_up import (
    CatchUp,
    CatchUpError,
    HistoryUnavailable,
    LiveBufferOverflow,
    Resume,
    channel_fragment,
)
from driver.archive.client.catch_up import State as CatchUpState
from driver.archive.client.context import ArchiveClientContext, ArchiveConfigurationError
from driver.archive.client.control_response_poller import ControlResponsePoller
from driver.archive.client.exceptions import (
    ArchiveError,
    ArchiveErrorCode,
    ArchiveProtocolError,
    ArchiveTimeoutError,
)
from driver.archive.client.recording_events import RecordingEvent, RecordingEventsAdapter
from driver.archive.client.replay_merge import ReplayMerge, ReplayMergeError
from driver.archive.client.replay_merge import State as ReplayMergeState
from driver.archive.client.replication import ReplicationSignal
from driver.archive.codecs import (
    RecordingDescriptor,
    RecordingProgress,
    RecordingStarted,
    RecordingStopped,
    SourceLocation,
)

__all__ = [
    "NULL_LENGTH",
    "NULL_POSITION",
    "NULL_RECORDING_ID",
    "AeronArchive",
    "ArchiveClientContext",
    "ArchiveConfigurationError",
    "ArchiveError",
    "ArchiveErrorCode",
    "ArchiveProtocolError",
    "ArchiveProxy",
    "ArchiveTimeoutError",
    "CatchUp",
    "CatchUpError",
    "CatchUpState",
    "ControlResponsePoller",
    "DescriptorConsumer",
    "HistoryUnavailable",
    "LiveBufferOverflow",
    "RecordingDescriptor",
    "RecordingEvent",
    "RecordingEventsAdapter",
    "RecordingProgress",
    "RecordingStarted",
    "RecordingStopped",
    "ReplayMerge",
    "ReplayMergeError",
    "ReplayMergeState",
    "ReplicationSignal",
    "Resume",
    "SourceLocation",
    "channel_fragment",
    "replay_channel_for_session",
]
