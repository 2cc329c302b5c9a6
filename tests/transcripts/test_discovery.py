"""Discovery over the fixture home: instances, kinds, archived and topic files, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from continuum.transcripts import discover, discovery, instance_name, parser_for
from continuum.transcripts.claude_code import ClaudeCodeParser
from continuum.transcripts.codex import CodexParser
from continuum.transcripts.openclaw import OpenClawParser
from tests.support.transcripts import lock

HOME = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "home"


def summary(source: discovery.TranscriptSource) -> tuple[object, ...]:
    return (source.kind, source.instance, source.agent_id, source.path.name, source.archived)


def test_discovers_every_fixture_source() -> None:
    found = discover(None, HOME)
    assert found.errors == []
    assert [summary(s) for s in found.sources] == [
        ("claude_code", "claude-code", None, "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b.jsonl", False),
        (
            "codex",
            "codex",
            None,
            "rollout-2026-01-19T15-21-26-019bd6d8-b99b-7eb1-847c-87c3da10673a.jsonl",
            False,
        ),
        ("openclaw_jsonl", "dteam", "ops", "d7e8f9a0-b1c2-4d3e-8f4a-5b6c7d8e9f01.jsonl", False),
        (
            "openclaw_jsonl",
            "entrepreneur",
            "main",
            "a1e2b3c4-d5f6-4789-8abc-def012345678.jsonl",
            False,
        ),
        ("openclaw_jsonl", "default", "main", "5d2e7c41-0a9b-4f3e-9c1d-2b8e6f4a7d10.jsonl", False),
        (
            "openclaw_jsonl",
            "default",
            "main",
            "7a1b9c3d-5e6f-4a8b-9c0d-1e2f3a4b5c6d-topic-42.jsonl",
            False,
        ),
        ("openclaw_jsonl", "default", "main", "b96c88e2-b875-4762-a8c3-fd495a27f5bd.jsonl", False),
        ("openclaw_jsonl", "default", "main", "c0ffee12-3456-4789-abcd-ef0123456789.jsonl", False),
        (
            "openclaw_jsonl",
            "default",
            "main",
            "e4d5f6a7-b8c9-4d0e-a1f2-3b4c5d6e7f80.jsonl.reset.2026-02-20T09-15-02.123Z",
            True,
        ),
    ]
    by_name = {s.path.name: s for s in found.sources}
    topic = by_name["7a1b9c3d-5e6f-4a8b-9c0d-1e2f3a4b5c6d-topic-42.jsonl"]
    assert (topic.session_id, topic.topic_id, topic.channel) == (
        "7a1b9c3d-5e6f-4a8b-9c0d-1e2f3a4b5c6d",
        "42",
        "telegram",
    )
    assert by_name["5d2e7c41-0a9b-4f3e-9c1d-2b8e6f4a7d10.jsonl"].channel == "discord"
    codex = found.sources[1]
    assert codex.session_id == "019bd6d8-b99b-7eb1-847c-87c3da10673a"


@pytest.mark.parametrize(
    ("name", "instance"),
    [
        (".openclaw", "default"),
        (".openclaw-entrepreneur", "entrepreneur"),
        (".openclaw-DTeam", "dteam"),
        ("srv-claw", "srv-claw"),
    ],
)
def test_instance_names(name: str, instance: str) -> None:
    assert instance_name(Path("/home/u") / name) == instance


def test_explicit_roots_and_optional_sources(tmp_path: Path) -> None:
    found = discover([HOME / ".openclaw-entrepreneur"], HOME, ["openclaw_jsonl", "openclaw_sqlite"])
    assert [(s.instance, s.session_id) for s in found.sources] == [
        ("entrepreneur", "a1e2b3c4-d5f6-4789-8abc-def012345678")
    ]
    assert discover(None, tmp_path).sources == []


def test_sqlite_store_is_a_source(tmp_path: Path) -> None:
    store = tmp_path / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"")
    (tmp_path / ".openclaw" / "agents" / "main" / "sessions").mkdir()
    [source] = discover(None, tmp_path).sources
    assert (source.kind, source.instance, source.agent_id, source.session_id) == (
        "openclaw_sqlite",
        "default",
        "main",
        None,
    )


def test_unreadable_directories_are_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    locked = HOME / ".openclaw" / "agents" / "main" / "sessions"
    lock(monkeypatch, locked)
    found = discover(None, HOME)
    assert [(e.path, e.detail) for e in found.errors] == [(locked, "Permission denied")]
    assert not any(s.instance == "default" for s in found.sources)
    assert any(s.instance == "entrepreneur" for s in found.sources)


def test_parser_for_each_kind() -> None:
    sources = {s.kind: s for s in discover(None, HOME).sources}
    assert isinstance(parser_for(sources["openclaw_jsonl"]), OpenClawParser)
    assert isinstance(parser_for(sources["claude_code"]), ClaudeCodeParser)
    assert isinstance(parser_for(sources["codex"]), CodexParser)
    parser = parser_for(sources["openclaw_jsonl"])
    assert parser.state.session_id == sources["openclaw_jsonl"].session_id
    assert parser.state.channel == sources["openclaw_jsonl"].channel
