"""Chunks of 10 messages or 5 minutes for transcript capture (R60)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from continuum.capture.chunking import chunk_messages

T0 = datetime(2025, 3, 4, 14, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Row:
    """Any object with `created_at` can be chunked, e.g. a synced message row."""

    id: int
    created_at: datetime


def _rows(offsets_seconds: list[float]) -> list[Row]:
    return [Row(i, T0 + timedelta(seconds=s)) for i, s in enumerate(offsets_seconds)]


def _ids(chunks: list[list[Row]]) -> list[list[int]]:
    return [[row.id for row in chunk] for chunk in chunks]


def test_ten_messages_close_a_chunk():
    rows = _rows([10 * i for i in range(23)])  # 23 messages within 4 minutes
    assert [len(c) for c in chunk_messages(rows)] == [10, 10, 3]


def test_more_than_five_minutes_after_the_chunk_start_opens_a_new_chunk():
    rows = _rows([0, 60, 120, 300, 301, 700])
    # 300 s is exactly five minutes after the first message: still the same chunk
    assert _ids(chunk_messages(rows)) == [[0, 1, 2, 3], [4], [5]]


def test_span_is_measured_from_the_first_message_not_the_previous_one():
    rows = _rows([0, 200, 400, 600])  # gaps of 200 s, but 400 s after the chunk start
    assert _ids(chunk_messages(rows)) == [[0, 1], [2, 3]]


def test_messages_are_ordered_by_time_first():
    rows = _rows([0, 30, 400])
    shuffled = [rows[2], rows[0], rows[1]]
    assert _ids(chunk_messages(shuffled)) == [[0, 1], [2]]


def test_custom_limits_and_empty_input():
    rows = _rows([0, 1, 2, 3, 4])
    assert _ids(chunk_messages(rows, max_messages=2)) == [[0, 1], [2, 3], [4]]
    assert _ids(chunk_messages(rows, max_span=timedelta(seconds=1))) == [[0, 1], [2, 3], [4]]
    assert chunk_messages([]) == []
    with pytest.raises(ValueError):
        chunk_messages(rows, max_messages=0)
