"""Transcript sync of a private tenant (`CONTINUUM_PRIVATE_NAMESPACES`): its transcript is
read and counted, and none of its text reaches a table, a log line or a dead letter — its
messages, its cron run report, its compaction summary, its malformed line; a tenant that is
not private keeps all of them."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from continuum.store.engine import session_scope
from continuum.sync import sync
from continuum.sync.problems import WITHHELD
from tests.support.transcripts import live, message_line

CANARY = "Qz7f3e9dCanary"  # one word, so the full-text index would hold it too
CRON_SESSION = "c4a11a11-0000-4000-8000-00000000c0de"
CHAT_SESSION = "c4a11a11-0000-4000-8000-00000000c4a7"
HEADER = '{"type":"session","version":3,"id":"%s","timestamp":"2026-03-05T10:00:00.000Z"}\n'
COMPACTION = (
    '{"type":"compaction","id":"cmp00001","timestamp":"2026-03-05T10:00:05.000Z",'
    f'"summary":"## Key Decisions\\n- ship {CANARY} on Friday"}}\n'
)
MALFORMED = f'{{"type":"message","id":"00000009","text":"{CANARY} unterminated\n'


def write_home(home: Path) -> None:
    """One cron run (its report quotes the canary) and one chat with a compaction and a
    malformed line, all under the `default` instance."""
    cron = live(home, CRON_SESSION)
    cron.parent.mkdir(parents=True)
    cron.write_text(
        HEADER % CRON_SESSION
        + message_line(
            "00000001",
            "x",
            "2026-03-05T10:00:01.000Z",
            "user",
            f"[cron:9f3b2c1d-7e6a-4b5c-8d9e-0a1b2c3d4e5f Nightly Digest] Digest {CANARY}.",
        )
        + message_line(
            "00000002", "00000001", "2026-03-05T10:00:02.000Z", "assistant", f"Report: {CANARY}"
        )
    )
    live(home, CHAT_SESSION).write_text(
        HEADER % CHAT_SESSION
        + message_line("00000001", "x", "2026-03-05T10:00:01.000Z", "user", f"My {CANARY} plan.")
        + COMPACTION
        + MALFORMED
        + message_line("00000003", "00000001", "2026-03-05T10:00:06.000Z", "assistant", "Noted.")
    )


def rows_holding(canary: str) -> dict[str, int]:
    """Rows per `table.column` whose text (text, JSON or full-text terms) holds `canary`."""
    found: dict[str, int] = {}
    with session_scope() as db:
        columns = db.execute(
            text(
                "SELECT c.table_name, c.column_name FROM information_schema.columns c"
                " JOIN information_schema.tables t USING (table_schema, table_name)"
                " WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'"
                " AND c.data_type IN ('text', 'character varying', 'json', 'jsonb', 'tsvector')"
            )
        ).all()
        for table, column in columns:
            count = db.scalar(
                text(f'SELECT count(*) FROM "{table}" WHERE "{column}"::text ILIKE :pattern'),
                {"pattern": f"%{canary}%"},
            )
            if count:
                found[f"{table}.{column}"] = count
    return found


@pytest.mark.parametrize("private", [True, False], ids=["private", "not_private"])
def test_a_private_tenants_transcript_text_reaches_no_table_log_or_dead_letter(
    db: Any,
    settings_env: Any,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    private: bool,
) -> None:
    settings_env(private_namespaces="default" if private else None)
    sent: list[tuple[Any, ...]] = []
    monkeypatch.setattr("continuum.contract.dispatch.send", lambda *args: sent.append(args))
    home = tmp_path / "home"
    write_home(home)
    caplog.set_level(logging.DEBUG)

    summary = sync(home, kinds=["openclaw_jsonl"])

    assert summary.errors["malformed_json"] == 1
    assert summary.messages_parsed == 4
    logged = [record.getMessage() for record in caplog.records]
    held = rows_holding(CANARY)
    if private:
        assert held == {}
        assert not [line for line in logged if CANARY.lower() in line.lower()]
        assert CANARY not in repr(summary.as_dict()) and CANARY not in repr(sent)
        assert (summary.messages_withheld, summary.messages_inserted) == (4, 0)
        assert (summary.cron_reports, summary.duplicates, sent) == (0, 0, [])
        with session_scope() as session:  # the sessions are known, their words are not
            counts = session.execute(
                text("SELECT session_id, message_count FROM sessions ORDER BY session_id")
            ).all()
            details = session.scalars(text("SELECT detail FROM sync_problems")).all()
        assert [tuple(row) for row in counts] == [(CRON_SESSION, 0), (CHAT_SESSION, 0)]
        assert details == [WITHHELD]
    else:
        assert (summary.messages_withheld, summary.messages_inserted) == (0, 4)
        assert summary.cron_reports == 1
        assert {"messages.content", "cron_reports.summary", "sessions.details"} <= set(held)
    with session_scope() as session:
        assert session.scalar(text("SELECT count(*) FROM dead_letters")) == 0
