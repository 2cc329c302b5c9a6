"""Rows Mission Control's console acts on, for its API and browser tests: open conflicts
(quarantined claims), and one tenant's dead letter and LLM calls beside another's."""

from __future__ import annotations

from sqlalchemy import select

from continuum.inference.usage import CallRecord, record
from continuum.memory.tool_calls import MemoryTools
from continuum.pipeline.deadletters import record_now
from continuum.store.engine import session_scope
from continuum.store.models import Memory


def conflict(namespace: str, key: str, trusted: str, doubtful: str) -> tuple[int, int]:
    """The user states `trusted` under `key`, then a less trusted source (the assistant on
    its own) says `doubtful`: quarantined. Returns (quarantined id, id in force)."""
    MemoryTools(namespace, user_id="jason", provenance="user_explicit").store_memory(
        memory_type="preference", key=key, value=trusted
    )
    MemoryTools(namespace, user_id="jason", provenance="system").store_memory(
        memory_type="preference", key=key, value=doubtful
    )
    with session_scope() as db:
        rows = {m.status: m.id for m in db.scalars(select(Memory).where(Memory.key == key))}
    return rows["quarantined"], rows["active"]


def status_of(memory_id: int) -> tuple[str, int | None]:
    """(status, superseded_by) of one memory."""
    with session_scope() as db:
        memory = db.scalars(select(Memory).where(Memory.id == memory_id)).one()  # any tenant
        return memory.status, memory.superseded_by


def pipeline_rows(namespace: str, other: str) -> None:
    """A dead letter and an LLM call of `namespace`, and two of each of `other`."""
    for tenant, n in ((namespace, 1), (other, 2)):
        for i in range(n):
            record_now(task_name="continuum.ingest_events", task_id=f"{tenant}-{i}",
                       payload={"args": []}, reason="task_error", error="boom", attempts=1,
                       namespace=tenant)  # fmt: skip
            call = CallRecord(tenant, None, "fake-model", "chunk_judge", "1")
            call.outcome, call.requests, call.prompt_tokens = "ok", 1, 100 * (i + 1)
            record(call)
