"""The format registry: every source has a row, each row finds only its own kind, each row
finds and parses a real fixture of its format, and an optional format's setting removes
exactly its sources."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from continuum.config import Settings, get_settings
from continuum.transcripts import (
    FORMATS,
    TranscriptSource,
    discover,
    enabled_kinds,
    format_of,
    parser_for,
    read_complete_lines,
)
from continuum.transcripts import formats as formats_module
from continuum.transcripts.models import ParseResult
from continuum.transcripts.openclaw_sqlite import (
    STORE_NAME,
    parse_events,
    read_events,
    session_heads,
)
from tests.support.transcripts import FIXTURE_HOME, lock, make_store

OPTIONAL = [row for row in FORMATS if row.setting is not None]
STORE = Path(".openclaw/agents/main/agent") / STORE_NAME
# Per format: a file of the fixture home (relative to it) and its first two messages as
# (role, text) once its row's parser has cleaned them (envelopes, cron prompts, wrappers).
READS: dict[str, tuple[Path, list[tuple[str, str]]]] = {
    "openclaw_jsonl": (
        Path(".openclaw/agents/main/sessions/5d2e7c41-0a9b-4f3e-9c1d-2b8e6f4a7d10.jsonl"),
        [
            ("user", "Can we move standup to 10am? 9 is rough for the west coast folks."),
            ("assistant", "Works for me. I'll propose 10:00 PT in the invite."),
        ],
    ),
    "openclaw_sqlite": (
        STORE,  # session s-1 holds the lines of the cron session `CRON`
        [
            ("user", "Summarize yesterday's commits and open PRs for the team channel."),
            (
                "assistant",
                "Standup digest, Feb 27:\n- 4 commits on main (transcript sync, recall packing,"
                " sqlite reader, UI filters)\n- Open PRs: #112 sqlite reader, #115 web UI"
                " filters\n- Nothing blocked",
            ),
        ],
    ),
    "claude_code": (
        Path(".claude/projects/-Users-k-proj/3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b.jsonl"),
        [
            (
                "user",
                "Let's switch the test suite to pytest-xdist; CI takes 3 minutes and that's"
                " too slow.",
            ),
            ("assistant", "Sure: I'll add pytest-xdist and run with `-n auto`."),
        ],
    ),
    "codex": (
        Path(
            ".codex/sessions/2026/01/19/"
            "rollout-2026-01-19T15-21-26-019bd6d8-b99b-7eb1-847c-87c3da10673a.jsonl"
        ),
        [
            ("user", "fix the bug in parse_date: it drops the timezone"),
            ("assistant", "Fixed: parse_date keeps the UTC offset now; added a regression test."),
        ],
    ),
}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture home plus an OpenClaw SQLite store: a source of every format."""
    home = tmp_path_factory.mktemp("formats") / "home"
    shutil.copytree(FIXTURE_HOME, home)
    make_store(home / STORE)
    return home


def kinds_of(sources: list[TranscriptSource]) -> set[str]:
    return {source.kind for source in sources}


def test_every_discovered_kind_has_a_row_and_every_row_finds_only_its_kind(home: Path) -> None:
    everything = discover(None, home).sources
    assert kinds_of(everything) == {row.kind for row in FORMATS}
    by_row = []
    for row in FORMATS:
        own = discover(None, home, [row.kind]).sources
        assert own, f"no {row.kind} source in the fixture home: add one"
        assert kinds_of(own) == {row.kind}
        by_row += own
    assert sorted(by_row, key=lambda s: (s.kind, str(s.path))) == everything
    assert len({row.kind for row in FORMATS}) == len(FORMATS)


def parse_source(source: TranscriptSource) -> list[ParseResult]:
    """Every session of the source, parsed by its row's parser and read as sync reads it."""
    row = format_of(source.kind)
    assert type(parser_for(source)) is row.parser
    if row.reader == "jsonl":
        return [parser_for(source).feed(read_complete_lines(source.path))]
    return [
        parse_events(parser_for(source), read_events(source.path, session_id))
        for session_id in sorted(session_heads(source.path))
    ]


def assert_reads_its_fixture(home: Path, kind: str) -> None:
    path, expected = READS[kind]
    found = [s for s in discover(None, home, [kind]).sources if s.path == home / path]
    assert len(found) == 1, f"{kind} did not discover {path}"
    messages = [m for result in parse_source(found[0]) for m in result.messages]
    assert [(m.role, m.content) for m in messages[: len(expected)]] == expected


def test_every_row_has_a_fixture_to_read() -> None:
    assert set(READS) == {row.kind for row in FORMATS}


@pytest.mark.parametrize("kind", sorted(READS))
def test_each_row_discovers_and_parses_its_fixture(home: Path, kind: str) -> None:
    assert_reads_its_fixture(home, kind)


@pytest.mark.parametrize("kind", sorted(READS))
def test_the_fixture_check_fails_when_discovery_finds_nothing(
    home: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    blind = tuple(replace(row, find=lambda found: None) for row in FORMATS)
    monkeypatch.setattr(formats_module, "FORMATS", blind)
    with pytest.raises(AssertionError, match="did not discover"):
        assert_reads_its_fixture(home, kind)


def test_unknown_kinds_are_refused(home: Path) -> None:
    with pytest.raises(ValueError, match="claude"):
        discover(None, home, ["openclaw_jsonl", "claude"])
    with pytest.raises(KeyError):
        format_of("claude")


def test_optional_formats_are_switched_by_bool_settings_on_by_default() -> None:
    always = {row.kind for row in FORMATS if row.setting is None}
    assert always == {"openclaw_jsonl", "openclaw_sqlite"}
    for row in OPTIONAL:
        assert row.setting is not None
        field = Settings.model_fields[row.setting]
        assert (field.annotation, field.default) == (bool, True), row.setting


@pytest.mark.parametrize("row", OPTIONAL, ids=lambda row: row.kind)
def test_a_setting_switched_off_removes_exactly_its_sources(
    home: Path, settings_env: Any, row: Any
) -> None:
    everything = discover(None, home).sources
    settings_env(**{row.setting: False})
    enabled = enabled_kinds(get_settings())
    assert enabled == {r.kind for r in FORMATS} - {row.kind}
    assert discover(None, home, enabled).sources == [s for s in everything if s.kind != row.kind]
    assert any(s.kind == row.kind for s in everything)


@pytest.mark.parametrize(
    ("env", "off"),
    [
        ({"CONTINUUM_SYNC_INCLUDE_CLAUDE": "false"}, {"claude_code"}),
        ({"CONTINUUM_SYNC_INCLUDE_CODEX": "0"}, {"codex"}),
        (
            {"CONTINUUM_SYNC_INCLUDE_CLAUDE": "no", "CONTINUUM_SYNC_INCLUDE_CODEX": "false"},
            {"claude_code", "codex"},
        ),
        ({}, set()),
    ],
)
def test_the_documented_environment_variables(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], off: set[str]
) -> None:
    for name in ("CONTINUUM_SYNC_INCLUDE_CLAUDE", "CONTINUUM_SYNC_INCLUDE_CODEX"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert enabled_kinds(Settings()) == {row.kind for row in FORMATS} - off


def test_a_directory_shared_by_two_formats_is_reported_once(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = home / ".openclaw" / "agents"  # OpenClaw files and stores both list it
    lock(monkeypatch, locked)
    found = discover(None, home)
    assert [(e.path, e.detail) for e in found.errors] == [(locked, "Permission denied")]
    assert not any(s.instance == "default" for s in found.sources)
