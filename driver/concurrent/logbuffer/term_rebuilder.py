"""TermRebuilder.insert: a datagram from the network copied into a term at the offset its header names.

spec/logbuffer.md section 7, Aeron 1.15.1, with two differences that only ever drop or keep bytes Aeron
would have handled worse, never change what a healthy stream rebuilds to:

- The datagram is checked first (every frame: version 0, DATA or PAD, the first frame's session, stream and
  term id, a term_offset equal to where it sits, whole inside the datagram and the term; PAD only last). A
  datagram that fails is not written at all: the result says so and the receiver counts it as invalid.
- Aeron copies the whole datagram only if its first frame is absent. Here each absent frame goes in (body,
  then header words at +24, +16, +8, then the first 8 bytes with a release store), so a retransmission that
  overlaps data already received still fills the frames that were missing.

A heartbeat (32 bytes, frame length 0) writes nothing. One native call.
"""

from __future__ import annotations

from typing import Any

from driver._native import lib
from driver.concurrent.atomic_buffer import AtomicBuffer

OUT_OF_TERM: int = lib.AMD_REBUILD_OUT_OF_TERM
"""The datagram does not fit the term at ``term_offset`` (or the offset is negative or not 32-aligned)."""
MALFORMED: int = lib.AMD_REBUILD_MALFORMED
"""A frame header of the datagram is inconsistent: nothing was written."""


def insert(
    term_buffer: AtomicBuffer, term_offset: int, packet: Any, length: int, packet_offset: int = 0
) -> int:
    """Insert ``packet[packet_offset : packet_offset + length]`` at ``term_offset``.

    Returns the number of frames written (0: all were duplicates, or a heartbeat), or ``OUT_OF_TERM`` /
    ``MALFORMED`` (< 0) when the datagram was rejected and nothing written."""
    return term_buffer.term_rebuild_insert(term_offset, packet, packet_offset, length)
