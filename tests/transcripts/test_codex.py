"""Codex rollouts: session meta, kept messages, injected context and tool traffic dropped."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from continuum.transcripts.codex import CodexParser
from continuum.transcripts.lines import read_complete_lines
from continuum.transcripts.models import ParserState

SESSION = "019bd6d8-b99b-7eb1-847c-87c3da10673a"
PATH = (
    Path(__file__).resolve().parents[1]
    / "fixtures/transcripts/home/.codex/sessions/2026/01/19"
    / f"rollout-2026-01-19T15-21-26-{SESSION}.jsonl"
)


def test_kept_messages_and_drops() -> None:
    result = CodexParser().feed(read_complete_lines(PATH))
    assert [(m.role, m.content, m.model, m.has_image) for m in result.messages] == [
        ("user", "fix the bug in parse_date: it drops the timezone", None, False),
        (
            "assistant",
            "Fixed: parse_date keeps the UTC offset now; added a regression test.",
            "gpt-5.2-codex",
            False,
        ),
        ("user", "[image shared]", None, True),
        (
            "assistant",
            "That screenshot shows the old build; rerun after `make clean`.",
            "gpt-5.2-codex",
            False,
        ),
    ]
    assert dict(result.skipped) == {
        "system_prompt": 1,
        "injected_context": 2,
        "turn_context": 1,
        "event_msg": 2,
        "thinking": 1,
        "tool_call": 1,
        "tool_result": 1,
        "image": 1,
    }
    assert result.errors == []


def test_session_meta_ids_and_parent_chain() -> None:
    result = CodexParser().feed(read_complete_lines(PATH))
    assert (result.session_id, result.cwd, result.model) == (
        SESSION,
        "/Users/i/proj",
        "gpt-5.2-codex",
    )
    assert result.started_at == datetime(2026, 1, 19, 15, 21, 26, 171000, tzinfo=UTC)
    ids = [m.message_id for m in result.messages]
    assert ids == [f"off-{m.byte_offset}" for m in result.messages]
    assert [m.parent_id for m in result.messages] == [None, *ids[:-1]]


def test_compacted_line_becomes_a_compaction() -> None:
    [compaction] = CodexParser().feed(read_complete_lines(PATH)).compactions
    assert compaction.decisions == ["Datetimes are always tz-aware"]
    assert compaction.next_steps == ["Add property tests for parse_date"]
    assert compaction.created_at == datetime(2026, 1, 19, 15, 26, 41, 936000, tzinfo=UTC)


def test_resumed_parse_keeps_ids_and_chain(tmp_path: Path) -> None:
    full = CodexParser().feed(read_complete_lines(PATH))
    first = read_complete_lines(PATH, max_lines=8)
    parser = CodexParser()
    head = parser.feed(first)
    resumed = CodexParser(ParserState.model_validate_json(parser.state.model_dump_json()))
    tail = resumed.feed(read_complete_lines(PATH, first.next_offset))
    assert head.messages + tail.messages == full.messages
