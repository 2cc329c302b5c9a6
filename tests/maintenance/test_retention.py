"""Message retention (R80) against real servers and a real worker: the weekly maintenance
deletes a tenant's raw messages older than its retention (the statements indexing them with
them), keeps the memories derived from them marked `sources_pruned_at`, leaves newer
messages and tenants without a retention alone, logs and records counts only, and a user
forgotten afterwards is still forgotten provably."""

from __future__ import annotations

import json
import logging
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from continuum.cli.main import app
from continuum.config import ConfigError, Settings
from continuum.store.engine import session_scope
from continuum.store.models import MaintenanceRun, Memory, MemoryLog, Message, ProcessedEvent
from tests.support.events import LONG_TURN, T0, session_end, turn
from tests.support.wait import wait_for

runner = CliRunner()
NOW = datetime.now(UTC)


def _ago(days: float) -> float:
    """The `at` (seconds from T0) of an event `days` ago."""
    return (NOW - timedelta(days=days) - T0).total_seconds()


def _processed(ids: list[str]) -> bool:
    with session_scope() as db:
        wanted = [uuid.UUID(i) for i in ids]
        query = select(func.count()).select_from(ProcessedEvent)
        return db.scalar(query.where(ProcessedEvent.event_id.in_(wanted))) == len(ids)


def _messages(namespace: str) -> list[str]:
    with session_scope() as db:
        query = select(Message.message_id).where(Message.namespace == namespace)
        return sorted(db.scalars(query))


def _memories(namespace: str, session_id: str) -> dict[str, list[dict[str, Any]]]:
    with session_scope() as db:
        rows = db.scalars(
            select(Memory).where(Memory.namespace == namespace, Memory.session_id == session_id)
        )
        kinds: dict[str, list[dict[str, Any]]] = {}
        for memory in rows:
            kinds.setdefault(memory.kind, []).append(memory.details)
        return kinds


def _call(namespace: str, session_id: str, days: float, *lines: str) -> list[dict[str, Any]]:
    """A finished call of jason's `days` ago, one turn per line (its message ids `<session>-<i>`)."""
    at = _ago(days)
    turns = [
        turn(line, namespace=namespace, session_id=session_id, at=at + 10 * i,
             message_id=f"{session_id}-{i}")
        for i, line in enumerate(lines)
    ]  # fmt: skip
    end = session_end(namespace=namespace, session_id=session_id, at=at + 60)
    return [*turns, {**end, "duration_s": 60.0}]


def test_weekly_maintenance_expires_messages_past_the_tenants_retention(
    db: Any, worker: Any, client: Any, settings_env: Any, tmp_path: Any, caplog: Any
) -> None:
    from tasks.maintenance import run_maintenance_task

    settings_env(workspace_dir=tmp_path, tenant_message_retention="alpha=30,gamma=forever")
    caplog.set_level(logging.INFO, logger="continuum.maintenance.retention")
    events = [
        *_call("alpha", "old", 45, LONG_TURN, "I prefer green tea over coffee.", "Noted."),
        *_call("alpha", "new", 5, LONG_TURN, "I prefer jasmine tea in the evening."),
        *_call("beta", "old", 45, LONG_TURN, "Beta keeps every word it said."),  # no retention
        *_call("gamma", "old", 400, "Gamma keeps its words forever."),
    ]
    ids = [client.emit(event) for event in events]
    wait_for(lambda: _processed(ids))
    wait_for(lambda: all(_memories(ns, "old").get("conversation_summary") for ns in ("alpha",
             "beta", "gamma")))  # fmt: skip
    before = _memories("alpha", "old")
    assert before.get("statement") and before.get("preference")  # capture indexed the turns

    run_maintenance_task.delay()  # as beat sends it: every tenant, on the worker
    wait_for(lambda: _runs_done() == 3)  # alpha, beta and gamma
    assert _retention_logged() == 1  # alpha's: the others keep their messages forever

    assert _messages("alpha") == ["new-0", "new-1"]  # the call of 45 days ago is gone
    assert _messages("beta") == ["old-0", "old-1"] and _messages("gamma") == ["old-0"]
    after = _memories("alpha", "old")
    assert "statement" not in after  # its turns' words went with them
    kept = after["preference"] + after["conversation_summary"]
    assert kept and all("sources_pruned_at" in details for details in kept)
    assert all(
        "sources_pruned_at" not in d for ds in _memories("alpha", "new").values() for d in ds
    )
    assert _memories("beta", "old").get("statement")  # another tenant: untouched

    [line] = [r.getMessage() for r in caplog.records if r.name.endswith("retention")
              and "alpha" in r.getMessage()]  # fmt: skip
    assert "retention of alpha (30 days" in line and "3 messages deleted" in line
    assert "tea" not in caplog.text and "Beta keeps" not in caplog.text  # counts, never text
    status = json.loads(runner.invoke(app, ["status", "--json"]).stdout)["last_retention"]
    assert set(status) == {"alpha"}
    assert (status["alpha"]["messages"], status["alpha"]["days"]) == (3, 30)
    assert status["alpha"]["statements"] == len(before["statement"])
    shown = runner.invoke(app, ["status"]).stdout
    assert "retention of alpha" in shown and "3 messages older than 30 days deleted" in shown

    # Forgetting jason afterwards still proves itself: what retention deleted is not found,
    # the rest is found, removed and re-scanned empty.
    forgot = runner.invoke(app, ["forget", "-n", "alpha", "--user", "jason", "--json"])
    assert forgot.exit_code == 0, forgot.output
    report = json.loads(forgot.output)
    assert report["complete"] and report["stores"]["messages"]["found"] == 2
    assert report["stores"]["memories"]["found"] >= len(kept)
    assert all(store["remaining"] == 0 for store in report["stores"].values())
    assert _messages("alpha") == [] and _memories("alpha", "old") == {}


def _runs_done() -> int:
    with session_scope() as db:
        query = select(func.count()).select_from(MaintenanceRun)
        return int(db.scalar(query.where(MaintenanceRun.status == "done")) or 0)


def _retention_logged() -> int:
    """How many tenants' retention the maintenance run recorded."""
    with session_scope() as db:
        query = select(func.count()).select_from(MemoryLog).where(MemoryLog.action == "retention")
        return int(db.scalar(query) or 0)


@pytest.mark.parametrize(
    "given",
    ["alpha=0", "alpha=thirty", "Alpha!=30", "alpha", "alpha=-3"],
)
def test_a_bad_tenant_retention_is_refused_with_an_example(given: str, monkeypatch: Any) -> None:
    monkeypatch.setenv("CONTINUUM_TENANT_MESSAGE_RETENTION", given)
    with pytest.raises(ConfigError, match=r"tenant=days .*alpha=30,beta=365"):
        Settings()


def test_each_tenant_keeps_its_messages_its_own_number_of_days(monkeypatch: Any) -> None:
    monkeypatch.setenv("CONTINUUM_TENANT_MESSAGE_RETENTION", " alpha=30 , beta=forever")
    assert Settings().message_retention("alpha") == 30
    assert Settings().message_retention("beta") is None
    assert Settings().message_retention("other") is None  # default: kept forever
    monkeypatch.setenv("CONTINUUM_MESSAGE_RETENTION_DAYS", "365")
    assert Settings().message_retention("other") == 365
    assert Settings().message_retention("beta") is None  # its own forever wins


def test_erased_turns_settle_their_memories_as_retention_does(
    db: Any, worker: Any, client: Any
) -> None:
    """A runtime erasing its turns (`DELETE /v1/sessions/{id}/messages`) and retention share
    one rule: the erased turn's statements go with it, the memories derived from it stay
    marked; the session's other turns keep theirs."""
    from continuum.memory.gone_turns import erase_turns

    events = _call("delta", "erased", 1, LONG_TURN, "I prefer green tea over coffee.")
    ids = [client.emit(event) for event in events]
    wait_for(lambda: _processed(ids))
    wait_for(lambda: bool(_memories("delta", "erased").get("preference")))
    assert _memories("delta", "erased").get("statement")  # the long turn is indexed

    assert erase_turns("delta", "erased", ["erased-0", "erased-1"]) == 2
    after = _memories("delta", "erased")
    assert "statement" not in after  # their words went with them
    assert all("sources_pruned_at" in d for d in after["preference"])
    assert _messages("delta") == []
