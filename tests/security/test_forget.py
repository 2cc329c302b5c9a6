"""`continuum forget` end to end (R47): a user's rows in every store are found and removed,
their data keys destroyed first, a re-scan finds nothing; a row written while the forget
runs is removed too and one arriving after it is refused; recall for the user returns
nothing while another user of the tenant keeps everything."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from typer.testing import CliRunner

from continuum.cli.main import app
from continuum.contract.events import parse_event
from continuum.conversations.writer import write
from continuum.maintenance.workspace import memory_md_path, write_memory_md
from continuum.pipeline.ingest import ingest_batch, message_row
from continuum.recall.context import context
from continuum.recall.scope import SearchFilters
from continuum.recall.search import search
from continuum.redis_client import get_redis
from continuum.sealing.tombstones import guard_users
from continuum.store.engine import session_scope
from continuum.store.models import DataKey, DeadLetter, Memory, Message, ProcessedEvent
from tests.support.events import session_end, turn
from tests.support.wait import wait_for

runner = CliRunner()


def _count(model: Any, *where: Any) -> int:
    with session_scope() as db:
        return int(db.scalar(select(func.count()).select_from(model).where(*where)) or 0)


def _processed(ids: list[str]) -> bool:
    wanted = [uuid.UUID(i) for i in ids]
    return _count(ProcessedEvent, ProcessedEvent.event_id.in_(wanted)) == len(ids)


def _files(root: Path) -> list[str]:
    return [path.relative_to(root).as_posix() for path in sorted(root.rglob("*.md"))]


def _shown(namespace: str, file: str) -> str:
    """A workspace file as `continuum workspace show` prints it (sealed entries opened)."""
    shown = runner.invoke(app, ["workspace", "show", file, "-n", namespace])
    assert shown.exit_code == 0, shown.output
    return shown.output


def _jason(content: str, at: float, **fields: Any) -> dict[str, Any]:
    return turn(content, namespace="vault", at=at, **fields)


def test_forget_removes_a_user_from_every_store(
    db: Any,
    worker: Any,
    client: Any,
    encrypted: str,
    dumps: Any,
    settings_env: Callable[..., None],
    tmp_path: Path,
) -> None:
    settings_env(workspace_dir=tmp_path)
    marker = f"quillon{uuid.uuid4().hex[:10]}"
    events = [
        _jason(f"My locker combination is hidden in the {marker} notebook.", 0, message_id="j1"),
        _jason(f"Remind me to burn the {marker} notebook tomorrow.", 4),
        _jason("I prefer green tea over coffee.", 8),
        _jason(f"The {marker} notebook is safe with me.", 12, role="assistant"),
        session_end(namespace=encrypted, at=100),
        _jason(f"Still thinking about the {marker} notebook.", 200, session_id="voice-2"),
        turn(
            "Ana likes the garden shed.",
            namespace=encrypted,
            session_id="ana-1",
            user_id="ana",
            at=5,
            message_id="a1",
        ),
        {**_jason(f"a bad {marker} turn", 20), "role": "narrator"},  # dead-lettered
    ]
    ids = [client.emit(event) for event in events[:-1]]
    wait_for(lambda: _processed(ids))
    ingest_batch([events[-1]])  # what the worker does with a batch producers did not check
    assert _count(DeadLetter) == 1
    wait_for(lambda: _count(Memory, Memory.kind == "conversation_summary"))
    wait_for(lambda: list(tmp_path.glob("vault/memory/*.md")))  # the narrative is written
    wait_for(lambda: _count(Message, Message.embedding.is_not(None)) == 6)
    with session_scope() as s:
        write_memory_md(s, encrypted, memory_md_path(encrypted), 20)
    assert "green tea" not in memory_md_path(encrypted).read_text()  # sealed on disk
    assert "green tea" in _shown(encrypted, "MEMORY.md")  # and opened by the CLI
    narrative = "".join(_shown(encrypted, f) for f in _files(tmp_path / encrypted))
    assert marker in narrative  # the session's activity line and daily note
    assert get_redis().exists("continuum:vault:transcript:voice-2")

    # A writer of jason's that checked the tombstone before the forget and commits during it.
    late = parse_event(_jason(f"Late {marker} words.", 300, session_id="voice-3"), 0)
    writer = session_scope()
    s = writer.__enter__()
    assert guard_users(s, encrypted, ["jason"]) == set()
    write(s, [], [message_row(late)])  # type: ignore[arg-type]
    result: dict[str, Any] = {}

    def run() -> None:
        outcome = runner.invoke(app, ["forget", "-n", encrypted, "--user", "jason", "--json"])
        result.update(code=outcome.exit_code, report=json.loads(outcome.output))

    forgetting = threading.Thread(target=run)
    forgetting.start()
    time.sleep(1.0)
    assert forgetting.is_alive()  # it waits for the writer's commit
    writer.__exit__(None, None, None)
    forgetting.join(60)
    assert result["code"] == 0
    report = result["report"]
    stores = report["stores"]
    assert report["complete"] and report["keys_destroyed"] == 1
    assert stores["messages"]["found"] == 6  # five turns and the late one
    assert stores["vectors"]["found"] >= 5
    assert stores["preferences"]["found"] == 1
    assert stores["memories"]["found"] >= 3  # follow-up, preference, summary
    assert stores["tasks"]["found"] == 1
    assert stores["dead_letters"]["found"] == 1
    assert stores["redis"]["found"] >= 2  # voice-2's buffer and the channel's registry
    assert stores["workspace_files"]["found"] >= 3  # activity line, daily note, MEMORY.md
    for counts in stores.values():
        assert counts["removed"] == counts["found"] and counts["remaining"] == 0

    after = client.emit(_jason(f"Back again with the {marker} notebook.", 400))
    wait_for(lambda: _processed([after]))
    assert _count(Message, Message.user_id == "jason") == 0  # refused at ingest
    with session_scope() as s:
        keys = s.scalars(select(DataKey).where(DataKey.user_id == "jason")).all()
        assert keys and all(k.wrapped is None and k.destroyed_at for k in keys)

    jason = SearchFilters(user_id="jason")
    assert search(encrypted, f"{marker} notebook", filters=jason) == []
    block = context(encrypted, marker, 800, user_id="jason", channel="voice")
    assert marker not in block.block and "green tea" not in block.block
    ana = search(encrypted, "garden shed", filters=SearchFilters(user_id="ana"))
    assert [hit.source_message_ids for hit in ana if hit.source == "message"] == [["a1"]]
    files = "".join(p.read_text() for p in tmp_path.rglob("*.md"))
    assert marker not in files and "green tea" not in files
    narrative = "".join(_shown(encrypted, f) for f in _files(tmp_path / encrypted))
    assert marker not in narrative and "green tea" not in narrative
    assert "[forgotten]" not in narrative  # the user's sealed entries are gone, not unreadable
    database, rdb = dumps()
    assert marker.encode() not in database and marker.encode() not in rdb


def test_forget_over_http_answers_the_report_and_leaves_a_tombstone(
    db: Any, encrypted: str
) -> None:
    from fastapi.testclient import TestClient

    from continuum.api.app import create_app
    from continuum.security.tokens import create_token
    from continuum.store.models import ForgetTombstone

    ingest_batch([_jason("The spare key is under the mat.", 0), _jason("Bye.", 3, user_id="ana")])
    token, _ = create_token([encrypted])
    with TestClient(create_app()) as api:
        answer = api.post(
            "/v1/forget", json={"user_id": "jason"}, headers={"Authorization": f"Bearer {token}"}
        )
    assert answer.status_code == 200
    report = answer.json()
    assert report["complete"] and report["stores"]["messages"] == {
        "found": 1,
        "removed": 1,
        "remaining": 0,
    }
    assert _count(Message) == 1  # ana's
    with session_scope() as s:
        tombstone = s.scalars(select(ForgetTombstone)).one()
        assert (tombstone.user_id, tombstone.report["complete"]) == ("jason", True)
        assert tombstone.finished_at is not None
