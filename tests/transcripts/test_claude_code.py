"""Claude Code transcripts: kept text, dropped tool traffic, summaries as compactions."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from continuum.transcripts.claude_code import ClaudeCodeParser
from continuum.transcripts.lines import read_complete_lines

SESSION = "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b"
PATH = (
    Path(__file__).resolve().parents[1]
    / "fixtures/transcripts/home/.claude/projects/-Users-k-proj"
    / f"{SESSION}.jsonl"
)


def test_keeps_user_and_assistant_text_only() -> None:
    result = ClaudeCodeParser().feed(read_complete_lines(PATH))
    assert [(m.role, m.content, m.has_image) for m in result.messages] == [
        (
            "user",
            "Let's switch the test suite to pytest-xdist; CI takes 3 minutes and that's too slow.",
            False,
        ),
        ("assistant", "Sure: I'll add pytest-xdist and run with `-n auto`.", False),
        ("assistant", "Done: the suite runs in 41s with xdist (was 3m10s).", False),
        ("user", "Does this coverage chart look right to you?", True),
        ("assistant", "Yes. The dip on the 12th is the flaky network test we skipped.", False),
        ("user", "Also pin xdist in the lockfile.", False),
    ]
    assert dict(result.skipped) == {
        "thinking": 1,
        "tool_call": 1,
        "tool_result": 1,
        "meta": 2,
        "image": 1,
        "system": 1,
    }
    assert result.errors == []


def test_ids_parents_model_and_session_facts() -> None:
    result = ClaudeCodeParser().feed(read_complete_lines(PATH))
    lines = [json.loads(line) for line in PATH.read_text().splitlines()]
    by_uuid = {line.get("uuid"): line for line in lines}
    for message in result.messages:
        line = by_uuid[message.message_id]
        assert message.parent_id == line["parentUuid"]
        assert message.metadata == {"git_branch": "main"}
    assert result.messages[1].model == "claude-opus-4-6"
    assert result.messages[0].model is None
    assert result.messages[0].created_at == datetime(2026, 7, 4, tzinfo=UTC)
    assert (result.session_id, result.cwd, result.model) == (
        SESSION,
        "/Users/k/proj",
        "claude-opus-4-6",
    )
    assert result.started_at == datetime(2026, 7, 4, tzinfo=UTC)


def test_summary_lines_and_compact_summaries_become_compactions() -> None:
    first, second = ClaudeCodeParser().feed(read_complete_lines(PATH)).compactions
    assert (first.compaction_id, first.summary, first.created_at) == (
        "0c5d9a7e-1b2f-4c3d-8e4f-5a6b7c8d9e0f",
        "Speeding up the Continuum test suite",
        None,
    )
    assert second.decisions == ["Use pytest-xdist with -n auto in CI"]
    assert second.next_steps == ["Quarantine the flaky network test"]
    assert "Summary:" in second.summary


def test_sidechain_and_invalid_lines(tmp_path: Path) -> None:
    base = {"sessionId": "s", "timestamp": "2026-07-04T00:00:00Z", "parentUuid": None}
    rows = [
        {
            **base,
            "type": "user",
            "uuid": "u1",
            "isSidechain": True,
            "message": {"role": "user", "content": "subagent prompt"},
        },
        {**base, "type": "user", "message": {"role": "user", "content": "no uuid"}},
        {**base, "type": "file-history-snapshot", "uuid": "u3"},
        {**base, "type": "user", "uuid": "u4", "message": {"role": "user", "content": "kept"}},
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = ClaudeCodeParser().feed(read_complete_lines(path))
    assert [m.content for m in result.messages] == ["kept"]
    assert [(e.kind, e.line_no) for e in result.errors] == [("invalid_entry", 2)]
    assert (result.skipped["sidechain"], result.skipped["unknown_entry"]) == (1, 1)
