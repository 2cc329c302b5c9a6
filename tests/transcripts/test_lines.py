"""Complete-line reading: offsets, half-written lines, oversize and invalid lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from continuum.transcripts.lines import TranscriptVanished, read_complete_lines


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_returns_complete_lines_with_their_start_offsets(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", b'{"a":1}\n{"b":22}\n')
    batch = read_complete_lines(path, 0)
    assert [(line.text, line.offset, line.number) for line in batch.lines] == [
        ('{"a":1}', 0, 1),
        ('{"b":22}', 8, 2),
    ]
    assert batch.next_offset == 17 == path.stat().st_size
    assert batch.partial_tail is False
    assert batch.errors == []


def test_half_written_last_line_is_not_consumed_until_complete(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", b'{"a":1}\n{"b":')
    first = read_complete_lines(path, 0)
    assert [line.text for line in first.lines] == ['{"a":1}']
    assert first.next_offset == 8
    assert first.partial_tail is True

    again = read_complete_lines(path, first.next_offset)
    assert again.lines == [] and again.next_offset == 8

    with path.open("ab") as handle:
        handle.write(b'2}\n{"c":3}\n')
    resumed = read_complete_lines(path, first.next_offset)
    assert [(line.text, line.offset) for line in resumed.lines] == [('{"b":2}', 8), ('{"c":3}', 16)]
    assert resumed.next_offset == path.stat().st_size
    assert resumed.partial_tail is False


def test_oversize_line_is_reported_and_skipped_once_complete(tmp_path: Path) -> None:
    big = b'{"big":"' + b"x" * 5000 + b'"}'
    path = write(tmp_path / "t.jsonl", b'{"a":1}\n' + big + b'\n{"c":3}\n')
    batch = read_complete_lines(path, 0, max_line_bytes=100, chunk_bytes=64)
    assert [line.text for line in batch.lines] == ['{"a":1}', '{"c":3}']
    assert batch.lines[1].offset == 8 + len(big) + 1
    [error] = batch.errors
    assert (error.kind, error.offset, error.line_no) == ("oversize_line", 8, 2)
    assert str(len(big)) in error.detail
    assert batch.next_offset == path.stat().st_size


def test_incomplete_oversize_line_keeps_the_cursor_before_it(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", b'{"a":1}\n' + b"y" * 1000)
    batch = read_complete_lines(path, 0, max_line_bytes=100, chunk_bytes=64)
    assert batch.next_offset == 8
    assert batch.errors == []
    assert batch.partial_tail is True


def test_line_exactly_at_the_limit_is_kept(tmp_path: Path) -> None:
    line = b'{"k":"' + b"z" * 92 + b'"}'
    assert len(line) == 100
    path = write(tmp_path / "t.jsonl", line + b"\n")
    batch = read_complete_lines(path, 0, max_line_bytes=100, chunk_bytes=7)
    assert [len(x.text) for x in batch.lines] == [100]
    assert batch.errors == []


def test_invalid_utf8_is_reported_and_neighbours_survive(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", b'{"a":1}\n{"b":"\xff\xfe"}\n{"c":3}\r\n')
    batch = read_complete_lines(path, 0)
    assert [line.text for line in batch.lines] == ['{"a":1}', '{"c":3}']
    [error] = batch.errors
    assert (error.kind, error.offset, error.line_no) == ("invalid_utf8", 8, 2)


def test_blank_lines_are_skipped_but_numbered(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", b'\n  \n{"a":1}\n')
    batch = read_complete_lines(path, 0)
    assert [(line.text, line.number, line.offset) for line in batch.lines] == [('{"a":1}', 3, 4)]


def test_max_lines_stops_right_after_the_last_returned_line(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", b"".join(b'{"n":%d}\n' % n for n in range(5)))
    first = read_complete_lines(path, 0, max_lines=2, chunk_bytes=1024)
    assert [line.text for line in first.lines] == ['{"n":0}', '{"n":1}']
    assert first.next_offset == 16
    rest = read_complete_lines(path, first.next_offset)
    assert [line.text for line in rest.lines] == ['{"n":2}', '{"n":3}', '{"n":4}']


def test_offset_beyond_the_end_reports_truncation(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", b'{"a":1}\n')
    batch = read_complete_lines(path, 500)
    assert batch.truncated is True
    assert batch.next_offset == 500
    assert batch.lines == []


def test_missing_file_raises_transcript_vanished(tmp_path: Path) -> None:
    with pytest.raises(TranscriptVanished) as info:
        read_complete_lines(tmp_path / "gone.jsonl", 0)
    assert isinstance(info.value, FileNotFoundError)
    assert info.value.filename == str(tmp_path / "gone.jsonl")
