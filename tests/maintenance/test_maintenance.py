"""Weekly maintenance against real Postgres and Redis: each step's effect and thresholds,
forget purging every trace, dry-run equal to the applied diff, once per ISO week, and an
interrupted run resuming to the same end state."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, text

from continuum.domain.kinds import KINDS
from continuum.inference.embedding import vector_literal
from continuum.maintenance.rules import MaintenanceConfig
from continuum.maintenance.run import LOCK_KEY, maintain
from continuum.maintenance.workspace import memory_md_path, render_memory_md
from continuum.memory.tool_calls import MemoryTools
from continuum.redis_client import get_redis
from continuum.store.engine import session_scope
from continuum.store.models import Memory, MemoryLog, UserTask

NOW = datetime(2026, 11, 25, 3, 0, tzinfo=UTC)  # a Wednesday: ISO week 2026-W48
DIM = 384


@pytest.fixture
def mdb(db: Any, settings_env: Any, tmp_path: Any) -> Iterator[Any]:
    """A clean database (`db` truncates maintenance_runs too) and a private workspace."""
    settings_env(workspace_dir=tmp_path)
    yield db


def _vector(*weights: tuple[int, float]) -> str:
    v = [0.0] * DIM
    for axis, w in weights:
        v[axis] = w
    norm = sum(x * x for x in v) ** 0.5
    return vector_literal([x / norm for x in v])


def _add(content: str, *, ns: str = "pearl", days: float = 1, **columns: Any) -> int:
    created = NOW - timedelta(days=days)
    row = {
        "namespace": ns,
        "kind": "fact",
        "content": content,
        "idempotency_key": hashlib.sha256(f"{ns}{content}{days}".encode()).hexdigest(),
        "created_at": created,
        "updated_at": columns.pop("updated", created),
        "tags": ["topic:misc"],
        **columns,
    }
    names = ", ".join(row)
    values = ", ".join(f"CAST(:{k} AS halfvec)" if k == "embedding" else f":{k}" for k in row)
    with session_scope() as db:
        return int(
            db.execute(
                text(f"INSERT INTO memories ({names}) VALUES ({values}) RETURNING id"), row
            ).scalar_one()
        )


def _state(ns: str = "pearl") -> dict[str, tuple[str, int, int]]:
    with session_scope() as db:
        rows = db.scalars(select(Memory).where(Memory.namespace == ns))
        return {m.content: (m.status, m.importance, m.corroboration) for m in rows}


def test_merges_near_duplicates_with_reinforcement(mdb: Any) -> None:
    keep = _add("Blocked on the API key", kind="open_thread", embedding=_vector((0, 1)))
    dup = _add("Blocked on the API key!", kind="open_thread", days=0.5,
               embedding=_vector((0, 1), (1, 0.05)))  # fmt: skip
    other = _add("Blocked on the design review", kind="open_thread",
                 embedding=_vector((0, 1), (1, 0.6)))  # fmt: skip
    third = _add(
        "Blocked on the API key.",
        kind="open_thread",
        days=0.2,
        user_id="bob",
        embedding=_vector((0, 1)),
    )  # fmt: skip  (another user: never merged)
    report = maintain("pearl", now=NOW)
    assert report.status == "done" and report.applied["merge"] == 1
    with session_scope() as db:
        rows = {m.id: m for m in db.scalars(select(Memory))}
    assert (rows[keep].status, rows[keep].corroboration) == ("active", 2)
    assert (rows[dup].status, rows[dup].superseded_by) == ("merged", keep)
    assert rows[other].status == rows[third].status == "active"


def test_resolves_contradictions_left_in_old_data(mdb: Any) -> None:
    claim = {"claim_subject": "user", "claim_predicate": "employer", "trust": 4}
    old = _add("Works at Acme", days=20, claim_value="Acme", **claim)
    new = _add("Works at Globex", days=10, claim_value="Globex", **claim)
    rumour = _add("Works at Initech", days=5, claim_value="Initech", **{**claim, "trust": 1})
    maintain("pearl", now=NOW)
    with session_scope() as db:
        rows = {m.id: m for m in db.scalars(select(Memory))}
    assert (rows[old].status, rows[old].superseded_by) == ("superseded", new)
    assert rows[new].status == "active"
    assert (rows[rumour].status, rows[rumour].details["conflicts_with"]) == ("quarantined", new)


def test_decay_and_prune_thresholds(mdb: Any) -> None:
    _add("old fact", days=180, importance=8)  # two half-lives (90 d): 8 → 2
    _add("old decision", kind="decision", days=180, importance=8)  # 365 d half-life → 6
    _add("fresh fact", days=3, importance=8)  # unchanged
    _add("used fact", days=400, importance=8, last_accessed_at=NOW - timedelta(days=1))
    _add("stale superseded", days=200, status="superseded", updated=NOW - timedelta(days=91))
    _add("recent superseded", days=200, status="superseded", updated=NOW - timedelta(days=30))
    _add("faded fact", days=400, importance=1)  # decayed past retention → pruned
    _add("faded preference", kind="preference", days=400, importance=1)  # kept
    _add("old summary", kind="conversation_summary", days=31, importance=7)
    report = maintain("pearl", now=NOW)
    state = _state()
    assert state["old fact"][:2] == ("active", 2)
    assert state["old decision"][:2] == ("active", 6)
    assert state["fresh fact"][1] == state["used fact"][1] == 8
    assert "stale superseded" not in state and "faded fact" not in state
    assert "recent superseded" in state and "faded preference" in state
    assert state["old summary"][0] == "archived"
    assert report.planned == report.applied
    # Use restores importance from the stored base instead of compounding the decay.
    with session_scope() as db:
        db.execute(text("UPDATE memories SET last_accessed_at = :t WHERE content = 'old fact'"),
                   {"t": NOW})  # fmt: skip
    maintain("pearl", now=NOW + timedelta(days=7))
    assert _state()["old fact"][1] == 8


def test_each_kind_decays_prunes_archives_and_compresses_by_its_registry_row(mdb: Any) -> None:
    for spec in KINDS:
        _add(f"aged {spec.name}", kind=spec.name, days=180, importance=8)
        _add(f"faded {spec.name}", kind=spec.name, days=400, importance=1)
        _add(f"month-old {spec.name}", kind=spec.name, days=31, importance=7)
        for i in range(8):  # a cluster of small notes on one topic
            _add(f"small {spec.name} {i}", ns="twin", kind=spec.name, importance=4, days=2 + i,
                 tags=["topic:garden"])  # fmt: skip
    maintain("pearl", now=NOW)
    maintain("twin", now=NOW)
    state, twin = _state(), _state("twin")
    for spec in KINDS:
        assert state[f"aged {spec.name}"][1] == (6 if spec.slow_decay else 2), spec.name
        assert (f"faded {spec.name}" in state) != spec.pruned_when_decayed, spec.name
        archived = state[f"month-old {spec.name}"][0] == "archived"
        assert archived == spec.archived_when_old, spec.name
        merged = {twin[f"small {spec.name} {i}"][0] for i in range(8)}
        assert merged == {"merged" if spec.compressible else "active"}, spec.name


def test_memory_md_lists_each_kind_under_its_registry_section(mdb: Any) -> None:
    for spec in KINDS:
        _add(f"A note of kind {spec.name}", kind=spec.name, importance=7)
    with session_scope() as db:
        md = render_memory_md(db, "pearl", 20)
    section_of: dict[str, str] = {}
    for line in md.splitlines():
        if line.startswith("## "):
            title = line.removeprefix("## ")
        elif line.startswith("- A note of kind "):
            section_of[line.split()[5]] = title
    for spec in KINDS:
        assert section_of.get(spec.name) == spec.memory_md, spec.name


def test_forget_purges_every_trace(mdb: Any) -> None:
    tools = MemoryTools("pearl", user_id="jason")
    follow = tools.store_memory(memory_type="follow_up", key="ring_anna",
                                value="Call Anna about the surgery results")["memoryId"]  # fmt: skip
    kept = tools.store_memory(memory_type="fact", key="tea", value="Earl Grey")["memoryId"]
    redis = get_redis()
    redis.set(f"continuum:pearl:memory:{follow}", "cached")
    redis.sadd("continuum:pearl:session:voice-1:stored", str(follow), str(kept))
    with session_scope() as db:
        db.execute(
            text("UPDATE memories SET embedding = CAST(:v AS halfvec)"), {"v": _vector((0, 1))}
        )
        assert db.scalars(select(UserTask.title)).all()  # the follow-up made a task
    tools.forget_memory(memory_id=follow)
    maintain("pearl")
    with session_scope() as db:
        assert db.get(Memory, (follow, "pearl")) is None
        assert db.get(Memory, (kept, "pearl")) is not None
        assert db.scalars(select(UserTask)).all() == []
        logged = db.scalars(select(MemoryLog.details).where(MemoryLog.memory_id == follow)).all()
    assert logged and all("Anna" not in str(d) and "ring_anna" not in str(d) for d in logged)
    assert redis.get(f"continuum:pearl:memory:{follow}") is None
    assert redis.smembers("continuum:pearl:session:voice-1:stored") == {str(kept)}


def _corpus(ns: str) -> None:
    for i in range(9):  # a cluster of small context notes on one topic → compressed
        _add(f"Garden note {i}", ns=ns, kind="context", importance=4, days=2 + i,
             tags=["topic:garden"])  # fmt: skip
    _add("A", ns=ns, kind="open_thread", embedding=_vector((0, 1)))
    _add("A again", ns=ns, kind="open_thread", days=0.5, embedding=_vector((0, 1), (1, 0.01)))
    for i in range(5):
        _add(f"aging {i}", ns=ns, days=100 + 30 * i, importance=9)
        _add(f"gone {i}", ns=ns, status="forgotten", updated=NOW - timedelta(days=1))
    _add("User prefers tea", ns=ns, kind="preference", key="drink", importance=7)
    _add("Secret", ns=ns, kind="preference", key="secret", importance=9, private=True)


def test_dry_run_is_the_applied_diff_and_runs_once_a_week(mdb: Any) -> None:
    _corpus("pearl")
    before = _state()
    dry = maintain("pearl", now=NOW, dry_run=True)
    assert _state() == before  # dry run changes nothing
    assert not memory_md_path("pearl").exists()
    ops = {a["op"] for a in dry.plan}
    assert ops == {"compress", "merge", "decay", "prune", "memory_md"}
    real = maintain("pearl", now=NOW)
    assert real.plan == dry.plan and real.status == "done"
    assert real.applied == real.planned == dry.planned
    assert _state() != before
    assert maintain("pearl", now=NOW + timedelta(days=2)).status == "skipped"  # same week
    forced = maintain("pearl", now=NOW + timedelta(days=2), force=True)
    assert (forced.status, forced.attempt) == ("done", 2)
    assert maintain("pearl", now=NOW + timedelta(days=7)).status == "done"  # next week
    with session_scope() as db:
        summary = db.scalars(select(Memory).where(Memory.trigger == "compress")).one()
        members = db.scalars(select(Memory).where(Memory.superseded_by == summary.id)).all()
    assert summary.content.startswith("9 context notes on garden: Garden note 8; Garden note 7")
    assert (summary.status, summary.corroboration, len(members)) == ("active", 9, 9)
    assert {m.status for m in members} == {"merged"}
    md = memory_md_path("pearl").read_text()
    assert "User prefers tea" in md and "Secret" not in md
    assert not list(memory_md_path("pearl").parent.glob(".*tmp"))


def test_interrupted_run_resumes_to_the_same_end_state(mdb: Any) -> None:
    _corpus("pearl")
    _corpus("twin")
    config = MaintenanceConfig(step_size=2)  # many small steps
    first = maintain("pearl", now=NOW, config=config, max_steps=3)
    assert (first.status, first.steps_applied) == ("interrupted", 3)
    resumed = maintain("pearl", now=NOW, config=config)
    assert resumed.status == "done" and resumed.attempt == 1
    assert resumed.steps_applied == len(resumed.plan) > 3
    maintain("twin", now=NOW, config=config)
    assert _state("pearl") == _state("twin")
    assert resumed.applied == resumed.planned


def test_overlapping_runs_are_locked_out(mdb: Any) -> None:
    _add("anything")
    get_redis().set(LOCK_KEY.format(namespace="pearl"), "other-run", ex=60)
    assert maintain("pearl", now=NOW).status == "locked"
    get_redis().delete(LOCK_KEY.format(namespace="pearl"))
    assert maintain("pearl", now=NOW).status == "done"


def test_celery_task_runs_every_tenant(mdb: Any) -> None:
    from tasks.maintenance import run_maintenance_task

    _add("x", ns="pearl")
    _add("y", ns="entrepreneur")
    result = run_maintenance_task.apply().get()
    assert sorted((r["namespace"], r["status"]) for r in result) == [
        ("entrepreneur", "done"), ("pearl", "done")]  # fmt: skip
