"""Schema 100 v0: the archive mark file's header (docs/archive.md section 11). 1.15.1 stores it at offset 0 of
``archive-mark.dat`` without a message header; the body codec is what the mark file uses."""

from __future__ import annotations

from typing import Annotated, NamedTuple

from driver.archive.codecs.sbe import At, Int32, Int64, Schema, VarAscii

SCHEMA_ID = 100
SCHEMA_VERSION = 0

MARK = Schema("archive-mark", SCHEMA_ID, SCHEMA_VERSION)


@MARK.message(template_id=200, block_length=128)
class MarkFileHeader(NamedTuple):
    version: Int32
    activity_timestamp: Annotated[Int64, At(8)]
    start_timestamp: Int64
    pid: Int64
    control_stream_id: Int32
    local_control_stream_id: Int32
    events_stream_id: Int32
    # The fields end at 44; the schema's block runs to 128, so the var data starts there.
    control_channel: VarAscii = ""
    local_control_channel: VarAscii = ""
    events_channel: VarAscii = ""
    aeron_directory: VarAscii = ""


MARK_FILE_HEADER = MARK.codec(MarkFileHeader)
