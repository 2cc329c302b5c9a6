"""Pure helpers of the sync: text cleaning, view and namespace names, summary, chunk feed."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from continuum.contract.queues import EXTRACT_CHUNK
from continuum.conversations.writer import InsertedMessage
from continuum.domain.storable import clean_json, clean_text, json_text
from continuum.sync import namespace_for, view_names
from continuum.sync.feed import feed_capture
from continuum.sync.run_report import MAX_ERROR_SAMPLES, SyncSummary
from continuum.sync.views import view_slug

T0 = datetime(2026, 2, 26, 22, 0, tzinfo=UTC)


def test_clean_text_drops_nul_and_replaces_lone_surrogates() -> None:
    plain = "ordinary text"
    assert clean_text(plain) is plain
    assert clean_text("a\x00b") == "ab"
    assert clean_text("x\ud800y") == "x?y"
    assert clean_text("café ☕") == "café ☕"


def test_json_text_is_valid_for_jsonb() -> None:
    assert json.loads(json_text({"a": "é"})) == {"a": "é"}
    dirty = {"k\x00": ["v\x00", {"s": "\udc80"}], "n": 1}
    assert clean_json(dirty) == {"k": ["v", {"s": "?"}], "n": 1}
    assert "\\u0000" not in json_text(dirty) and json.loads(json_text(dirty))["n"] == 1


@pytest.mark.parametrize(
    ("instance", "namespace", "slug"),
    [
        ("default", "default", "default"),
        ("claude-code", "claude-code", "claude_code"),
        ("My Team", "my-team", "my_team"),
        ('x"; DROP TABLE messages; --', "x-drop-table-messages", "x_drop_table_messages"),
        ("---", "default", "default"),
    ],
)
def test_namespace_and_view_names_are_sanitized(instance: str, namespace: str, slug: str) -> None:
    assert namespace_for(instance) == namespace
    assert view_slug(namespace) == slug
    assert view_names(namespace) == [f"messages_{slug}", f"cron_reports_{slug}"]


def test_view_names_fit_postgres_identifiers() -> None:
    assert all(len(name) <= 63 for name in view_names("a" * 64))


def test_summary_keeps_counts_and_a_bounded_sample_of_errors() -> None:
    summary = SyncSummary(messages_inserted=500, seconds=2.0)
    for index in range(MAX_ERROR_SAMPLES + 5):
        summary.record_error("malformed_json", "/t/a.jsonl", "bad", index)
    data = summary.as_dict()
    assert data["errors"] == {"malformed_json": MAX_ERROR_SAMPLES + 5}
    assert len(data["error_samples"]) == MAX_ERROR_SAMPLES
    assert data["rate"] == 250.0
    json.dumps(data)


def test_feed_capture_sends_chunks_per_session(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr("continuum.contract.dispatch.send", lambda *args: calls.append(args))
    messages = [
        InsertedMessage("default", "s1", f"m{i}", T0 + timedelta(seconds=i)) for i in range(12)
    ]
    messages += [
        InsertedMessage("default", "s2", "late", T0 + timedelta(minutes=9)),
        InsertedMessage("default", "s2", "early", T0),
    ]
    assert feed_capture("default", messages) == 4
    assert calls == [
        (EXTRACT_CHUNK, "default", "s1", [f"m{i}" for i in range(10)]),
        (EXTRACT_CHUNK, "default", "s1", ["m10", "m11"]),
        (EXTRACT_CHUNK, "default", "s2", ["early"]),
        (EXTRACT_CHUNK, "default", "s2", ["late"]),
    ]
