"""The columnar decoder the Spark job runs (``columns``) against the reference row decoder (``decode``): the same
entries, the same errors at the same offsets; and the mapInArrow function over paths and over content."""

from __future__ import annotations

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
def test_a_truncated_file_fails_at_the_same_offset_as_the_row_decoder(corpus: list[Path], into_entry: int) -> None:
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
    expected = [file_rows(u, c) for u, c in zip(uris[:2], contents[:2], strict=True)]
    assert [rows(b) for b in by_path] == [rows(b) for b in by_content] == expected
    assert files.value == 2 and entries.value == sum(map(len, expected))
    ((path, reason),) = skipped.value
    assert path == uris[2] and "past the end" in reason
