"""Frame header layout of Aeron 1.15.1 (spec/wire.md section 2), and its mirror in native/include/amd_term.h."""

from __future__ import annotations

from driver._native import lib

from driver.protocol import frames as f


def test_data_header_field_offsets_follow_the_spec() -> None:
    assert (f.FRAME_LENGTH_OFFSET, f.VERSION_OFFSET, f.FLAGS_OFFSET, f.TYPE_OFFSET) == (0, 4, 5, 6)
    assert f.MIN_HEADER_LENGTH == 8
    assert (f.TERM_OFFSET_OFFSET, f.SESSION_ID_OFFSET, f.STREAM_ID_OFFSET, f.TERM_ID_OFFSET) == (
        8,
        12,
        16,
        20,
    )
    assert f.RESERVED_VALUE_OFFSET == 24
    assert f.HEADER_LENGTH == f.DATA_HEADER_LENGTH == 32
    assert f.FRAME_ALIGNMENT == 32
    assert f.CURRENT_VERSION == 0


def test_frame_types_and_flags() -> None:
    types = (
        f.HDR_TYPE_PAD,
        f.HDR_TYPE_DATA,
        f.HDR_TYPE_NAK,
        f.HDR_TYPE_SM,
        f.HDR_TYPE_ERR,
        f.HDR_TYPE_SETUP,
        f.HDR_TYPE_RTTM,
    )
    assert types == (0, 1, 2, 3, 4, 5, 6)
    assert f.HDR_TYPE_EXT == 0xFFFF
    assert (f.BEGIN_FLAG, f.END_FLAG, f.EOS_FLAG) == (0x80, 0x40, 0x20)
    assert f.UNFRAGMENTED == 0xC0
    assert f.BEGIN_END_AND_EOS_FLAGS == 0xE0


def test_default_header_is_what_the_driver_stores_in_log_metadata() -> None:
    header = f.create_default_header(session_id=-7, stream_id=1001, term_id=-2_000_000_000)
    assert len(header) == f.HEADER_LENGTH
    assert header[:8] == bytes([0, 0, 0, 0, 0, 0xC0, 1, 0])
    assert f.DATA_HEADER.unpack(header) == (0, 0, 0xC0, f.HDR_TYPE_DATA, 0, -7, 1001, -2_000_000_000, 0)


def test_the_c_header_mirrors_these_offsets() -> None:
    assert lib.AMD_FRAME_LENGTH_OFFSET == f.FRAME_LENGTH_OFFSET
    assert lib.AMD_FLAGS_OFFSET == f.FLAGS_OFFSET
    assert lib.AMD_TYPE_OFFSET == f.TYPE_OFFSET
    assert lib.AMD_TERM_OFFSET_OFFSET == f.TERM_OFFSET_OFFSET
    assert lib.AMD_SESSION_ID_OFFSET == f.SESSION_ID_OFFSET
    assert lib.AMD_STREAM_ID_OFFSET == f.STREAM_ID_OFFSET
    assert lib.AMD_TERM_ID_OFFSET == f.TERM_ID_OFFSET
    assert lib.AMD_RESERVED_VALUE_OFFSET == f.RESERVED_VALUE_OFFSET
    assert lib.AMD_DATA_HEADER_LENGTH == f.HEADER_LENGTH
    assert lib.AMD_FRAME_ALIGNMENT == f.FRAME_ALIGNMENT
    assert lib.AMD_HDR_TYPE_PAD == f.HDR_TYPE_PAD
    assert (lib.AMD_BEGIN_FLAG, lib.AMD_END_FLAG) == (f.BEGIN_FLAG, f.END_FLAG)
