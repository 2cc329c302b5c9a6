"""Key rotation (R47): `continuum keys rotate` re-wraps every data key under a new
key-encryption key while both are configured; `--data` seals a tenant's rows again under new
data keys in resumable batches (and seals rows stored before the tenant was encrypted)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import select, text
from typer.testing import CliRunner

from continuum.cli.main import app
from continuum.config import ConfigError
from continuum.pipeline.ingest import ingest_batch
from continuum.recall.namespace_queries import search_messages
from continuum.sealing.envelope import key_id_of, seal_with
from continuum.sealing.keys import KeyUnavailable, keyring
from continuum.store.engine import session_scope
from continuum.store.models import DataKey
from tests.support.encryption import ENCRYPTED, KEK
from tests.support.events import turn

runner = CliRunner()
NEW_KEK = "c3" * 32


def _rotate(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["keys", "rotate", *args, "--json"])
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.output))


def _switch(settings_env: Callable[..., None], **values: Any) -> None:
    settings_env(**values)
    keyring.clear()  # as a restarted process would


def _stored(column: str = "content") -> list[str]:
    with session_scope() as db:
        return list(db.scalars(text(f"SELECT {column} FROM messages ORDER BY id")))


def _send(marker: str, count: int) -> None:
    users = ("jason", "ana", None)
    content = f"about the {marker} lantern"
    events = [
        turn(f"Turn {i} {content}.", namespace=ENCRYPTED, at=i, user_id=users[i % 3])
        for i in range(count)
    ]
    ingest_batch(events)


def test_rewrap_moves_every_data_key_to_the_new_kek(
    db: Any, encrypted: str, settings_env: Callable[..., None]
) -> None:
    marker = f"vexil{uuid.uuid4().hex[:8]}"
    _send(marker, 3)
    _switch(settings_env, encryption_key=NEW_KEK)
    with pytest.raises(KeyUnavailable):  # the new KEK alone cannot unwrap the keys
        search_messages(encrypted, marker)

    _switch(settings_env, encryption_key=NEW_KEK, encryption_old_keys=KEK)
    assert len(search_messages(encrypted, marker)) == 3  # online: both KEKs read
    report = _rotate()
    with session_scope() as s:
        keys = s.scalars(select(DataKey)).all()
    assert report == {"rewrapped": len(keys), "current": 0, "destroyed": 0}

    _switch(settings_env, encryption_key=NEW_KEK, encryption_old_keys=None)
    assert len(search_messages(encrypted, marker)) == 3
    assert _rotate()["rewrapped"] == 0


def test_data_rotation_reseals_rows_in_resumable_batches(
    db: Any, encrypted: str, settings_env: Callable[..., None], dumps: Any
) -> None:
    marker = f"vexil{uuid.uuid4().hex[:8]}"
    _switch(settings_env, encryption_key=KEK, encryption_tenants="other")
    _send(marker, 5)  # stored before the tenant was encrypted
    assert all(marker in content for content in _stored())
    _switch(settings_env, encryption_key=KEK, encryption_tenants=ENCRYPTED)

    first = _rotate("--data", "-n", encrypted, "--batch", "2", "--max-batches", "1")
    assert (first["done"], first["resealed"]) == (False, {"messages": 2})
    assert sum(marker in content for content in _stored()) == 3
    rest = _rotate("--data", "-n", encrypted, "--batch", "2")
    assert (rest["done"], rest["resealed"]) == (True, {"messages": 3})  # resumed after row 2
    assert not any(marker in content for content in _stored())
    assert all(keyed is not None for keyed in _stored("tsv_keyed"))
    assert len(search_messages(encrypted, marker)) == 5
    database, _ = dumps()
    assert marker.encode() not in database

    old = {key_id_of(content) for content in _stored()}
    again = _rotate("--data", "-n", encrypted)
    assert again["done"] and again["resealed"] == {"messages": 5}
    assert set(again["retired_keys"]) == old
    assert not {key_id_of(content) for content in _stored()} & old

    refused = runner.invoke(app, ["keys", "rotate", "--destroy-retired", "-n", encrypted])
    assert isinstance(refused.exception, ConfigError)  # a process may still seal under them
    straggler = next(iter(old))  # a row sealed under a retired key after the pass went by
    late = seal_with(keyring.by_id(straggler), "messages.content", f"Late {marker} lantern.", 1)
    with session_scope() as s:
        s.execute(text("UPDATE messages SET content = :c WHERE id = 1"), {"c": late})
        s.execute(text("UPDATE data_keys SET retired_at = retired_at - interval '1 minute'"))
    gone = _rotate("--destroy-retired", "-n", encrypted)
    assert (gone["resealed"], gone["destroyed"]) == ({"messages": 1}, len(old))
    with session_scope() as s:
        erased = s.scalars(select(DataKey).where(DataKey.id.in_(old))).all()
    assert all(key.wrapped is None for key in erased)
    keyring.clear()
    hits = search_messages(encrypted, marker)
    assert len(hits) == 5 and all(marker in hit.content for hit in hits)  # none forgotten


def test_data_rotation_reseals_cron_reports_and_workspace_entries(
    db: Any, encrypted: str, settings_env: Callable[..., None], tmp_path: Any
) -> None:
    """Cron reports and the narrative files' entries are sealed again under the new keys,
    so erasing the retired keys afterwards leaves them readable."""
    from datetime import UTC, datetime

    from continuum.pipeline.narrative import record_session, workspace
    from continuum.sync.cron import cron_reports, upsert_report
    from continuum.transcripts import CronReport

    settings_env(workspace_dir=tmp_path)
    at = datetime(2026, 3, 2, 9, tzinfo=UTC)
    record_session(
        encrypted, at, "voice", "Booked the ferry", "Booked the ferry to Arran.", "jason"
    )
    with session_scope() as s:
        report = CronReport(job_id="d", name="Digest", text="Digest: the ferry is booked.",
                            message_id="x", run_started_at=None, run_ended_at=None)  # fmt: skip
        upsert_report(s, encrypted, "run-1", report, at)
    log = workspace(encrypted) / "activity-log.md"
    before = log.read_text()
    old = {key_id_of(line) for line in before.splitlines()}

    rotated = _rotate("--data", "-n", encrypted)
    assert rotated["resealed"] == {"cron_reports": 1, "workspace_files": 2}  # log and note
    assert {key_id_of(line) for line in log.read_text().splitlines()}.isdisjoint(old)
    with session_scope() as s:
        s.execute(text("UPDATE data_keys SET retired_at = retired_at - interval '1 minute'"))
    assert _rotate("--destroy-retired", "-n", encrypted)["destroyed"] == 2  # tenant's, jason's
    keyring.clear()
    shown = runner.invoke(app, ["workspace", "show", "-n", encrypted])
    assert "Booked the ferry" in shown.output and "[forgotten]" not in shown.output
    assert [r.summary for r in cron_reports(encrypted)] == ["Digest: the ferry is booked."]
