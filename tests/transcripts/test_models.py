"""Shared model helpers: timestamps and compaction summary sections."""

from __future__ import annotations

from datetime import UTC, datetime

from continuum.transcripts.models import Compaction, from_millis, parse_timestamp


def test_parse_timestamp_normalizes_to_utc() -> None:
    assert parse_timestamp("2026-02-07T17:56:16.780Z") == datetime(
        2026, 2, 7, 17, 56, 16, 780000, tzinfo=UTC
    )
    assert parse_timestamp("2026-02-07T09:56:16-08:00") == datetime(
        2026, 2, 7, 17, 56, 16, tzinfo=UTC
    )
    assert parse_timestamp("2026-02-07T17:56:16").tzinfo is UTC  # type: ignore[union-attr]
    assert parse_timestamp("yesterday") is None
    assert parse_timestamp(1770486976784) is None


def test_from_millis() -> None:
    assert from_millis(1770486976784) == datetime(2026, 2, 7, 17, 56, 16, 784000, tzinfo=UTC)
    assert from_millis(True) is None
    assert from_millis("1770486976784") is None


def test_summary_sections_ignore_unknown_headings_and_empty_markers() -> None:
    summary = (
        "## Goal\n- not a section item\n"
        "## Constraints and Preferences\n* metric units\n  continued prose line\n"
        "## Progress\n### Done\n(none)\n### Blocked\n- [ ] waiting on legal review\n"
        "## Key Decisions\n1) use pgvector\n2. HNSW index\n"
        "## Critical Context\n- the server is in Frankfurt\n"
        "## Next Steps\n\n- ship\n"
    )
    compaction = Compaction.from_summary("c1", None, summary)
    assert compaction.constraints == ["metric units", "continued prose line"]
    assert compaction.done == []
    assert compaction.blocked == ["waiting on legal review"]
    assert compaction.decisions == ["use pgvector", "HNSW index"]
    assert compaction.next_steps == ["ship"]
    assert compaction.in_progress == []
