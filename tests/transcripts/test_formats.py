"""The format registry: every source has a row, each row finds only its own kind, parsers
come from the rows, and an optional format's setting removes exactly its sources."""

from __future__ import annotations

import shutil
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
)
from continuum.transcripts.openclaw_sqlite import STORE_NAME
from tests.transcripts.test_discovery import lock

FIXTURE_HOME = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "home"
OPTIONAL = [row for row in FORMATS if row.setting is not None]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture home plus an OpenClaw SQLite store: a source of every format."""
    home = tmp_path_factory.mktemp("formats") / "home"
    shutil.copytree(FIXTURE_HOME, home)
    store = home / ".openclaw" / "agents" / "main" / "agent" / STORE_NAME
    store.parent.mkdir()
    store.write_bytes(b"")
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


def test_parsers_come_from_the_rows(home: Path) -> None:
    for source in discover(None, home).sources:
        assert type(parser_for(source)) is format_of(source.kind).parser


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
