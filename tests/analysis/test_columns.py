"""The columnar decoder the Spark job runs (``columns``) against the reference row decoder (``decode``): the same
entries, the same errors at the same offsets; and the mapInArrow function over paths and over content."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from driver.analysis import columns
from driver.analysis.corpus import generate_corpus
from driver.analysis.decode import LossFileError, file_rows


class SetAccumulator:
    def __init__(self, zero: object) -> None:
        self.value = zero

    def add(self, term: object) -> None:
        self.value = self.value | term if isinstance(self.value, set) else self.value + term  # type: ignore[operator]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return generate_corpus(tmp_path_factory.mktemp("corpus"), 4, 4_000, seed=3).files


def rows(batch: pa.RecordBatch) -> list[tuple[object, ...]]:
    return [tuple(r.values()) for r in batch.to_pylist()]


def test_every_entry_matches_the_row_decoder(corpus: list[Path]) -> None:
    for path in corpus:
        data = path.read_bytes()
        batch = columns.file_batch(f"file:{path}", data)
        assert batch.schema == columns.SCHEMA
        assert batch.num_rows > 0
        assert rows(batch) == file_rows(f"file:{path}", data)


def test_non_ascii_bytes_are_replaced_as_the_row_decoder_does(corpus: list[Path]) -> None:
    data = bytearray(corpus[0].read_bytes())
    data[columns.CHANNEL_OFFSET + 3] = 0xE9  # a byte past ASCII in the first entry's channel
    expected = file_rows("x", bytes(data))
    assert "\ufffd" in expected[0][2]
    assert rows(columns.file_batch("x", bytes(data))) == expected


@pytest.mark.parametrize("into_entry", [4, 20, 46, 60, 100])
def test_a_truncated_file_fails_at_the_same_offset_as_the_row_decoder(
    corpus: list[Path], into_entry: int
) -> None:
    data = corpus[0].read_bytes()
    offsets, _, _ = columns.entry_offsets(data)
    data = data[: offsets[5] + into_entry]  # the file ends inside its sixth entry
    with pytest.raises(LossFileError) as reference:
        file_rows("x", data)
    with pytest.raises(LossFileError) as ours:
        columns.file_batch("x", data)
    assert str(ours.value) == str(reference.value)


def test_garbage_fails_as_the_row_decoder_does() -> None:
    data = np.random.default_rng(2).integers(0, 256, 1 << 16, dtype=np.uint8).tobytes()
    with pytest.raises(LossFileError) as reference:
        file_rows("x", data)
    with pytest.raises(LossFileError) as ours:
        columns.file_batch("x", data)
    assert str(ours.value) == str(reference.value)


def test_an_empty_report_has_no_rows() -> None:
    assert columns.file_batch("x", bytes(4096)).num_rows == 0
    assert columns.file_batch("x", b"").num_rows == 0


def test_decode_batches_reads_local_paths_and_content_and_names_bad_files(
    corpus: list[Path], tmp_path: Path
) -> None:
    bad = tmp_path / "host-cut" / "loss-report.dat"
    bad.parent.mkdir()
    data = corpus[0].read_bytes()
    bad.write_bytes(data[: columns.entry_offsets(data)[0][5] + 20])
    uris = [f"file:{p}" for p in [*corpus[:2], bad]]
    skipped, files, entries = SetAccumulator(set()), SetAccumulator(0), SetAccumulator(0)
    by_path = list(
        columns.decode_batches(iter([pa.RecordBatch.from_pydict({"path": uris})]), skipped, files, entries)
    )
    contents = [Path(columns.local_path(u)).read_bytes() for u in uris]
    by_content = list(
        columns.decode_batches(iter([pa.RecordBatch.from_pydict({"path": uris, "content": contents})]))
    )
    by_id = list(columns.decode_batches(iter([pa.RecordBatch.from_pydict({"id": [1, 0, 2]})]), paths=uris))
    expected = [row for u, c in zip(uris[:2], contents[:2], strict=True) for row in file_rows(u, c)]
    assert len(by_path) == 1  # both files' entries in one batch
    assert flat(by_path) == flat(by_content) == expected
    assert sorted(flat(by_id)) == sorted(expected)
    assert files.value == 2 and entries.value == len(expected)
    ((path, reason),) = skipped.value
    assert path == uris[2] and "past the end" in reason


def test_decode_batches_cuts_batches_at_about_batch_entries(corpus: list[Path]) -> None:
    uris = [f"file:{p}" for p in corpus]
    listing = iter(
        [pa.RecordBatch.from_pydict({"path": uris[:2]}), pa.RecordBatch.from_pydict({"path": uris[2:]})]
    )
    batches = list(columns.decode_batches(listing, batch_entries=1))
    assert [b.num_rows for b in batches] == [
        len(file_rows(u, p.read_bytes())) for u, p in zip(uris, corpus, strict=True)
    ]


def test_an_entry_in_a_last_partial_block_is_read(corpus: list[Path]) -> None:
    data = corpus[0].read_bytes()
    offsets, channels, sources = columns.entry_offsets(data)
    end = (
        offsets[6] + columns.FIXED_LENGTH + channels[6] + sources[6]
    )  # the file ends where its 7th entry does
    assert rows(columns.file_batch("x", data[:end])) == file_rows("x", data[:end])
    short = struct.pack(
        "<qqqqiii2si1s", 1, 32, 5, 6, -7, 8, 2, b"ab", 1, b"c"
    )  # 51 bytes: not one whole block
    cut = data[:end] + bytes(-end % 64) + short
    assert rows(columns.file_batch("x", cut)) == file_rows("x", cut)
    assert rows(columns.file_batch("x", short)) == file_rows("x", short) != []


def flat(batches: list[pa.RecordBatch]) -> list[tuple[object, ...]]:
    return [row for b in batches for row in rows(b)]
