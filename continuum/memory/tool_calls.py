"""Running the memory tools (R40–R43, R49): store, update, forget, mark private, list.

`MemoryTools(namespace, ...)` is the Python API; `call(name, arguments)` runs a tool call as
an LLM emits it (arguments as a dict or JSON text) and always answers with a JSON-able dict:
`{"success": false, "message": ...}` names every missing or wrong field instead of raising.
The tools' names and argument models (what a client sees) are `continuum.memory.tool_schemas`.

Writes go through the memory writer, so a stored claim supersedes, reinforces or is
quarantined like any other (R24/R29). After a write in a live session its key joins the
keys the session stored (R45: neither the LLM's chunks nor session end store it again); in a
session or not, the change is published on `continuum:{namespace}:memory-changed` so live
runtimes (a call on another channel, say) can refresh their context.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

import redis
from pydantic import ValidationError
from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session as DbSession

from continuum.domain.kinds import MemoryKind
from continuum.domain.memory import Claim, ClaimScope, MemoryCandidate, Provenance
from continuum.domain.text import find_time_expression, snake
from continuum.ephemeral.notify import notify_memory_changed
from continuum.ephemeral.turns import add_stored_keys
from continuum.memory.tool_schemas import (
    TOOLS,
    ForgetMemoryArgs,
    ListMemoriesArgs,
    MarkPrivateArgs,
    MemoryTarget,
    StoreMemoryArgs,
    UpdateMemoryArgs,
    validation_problems,
)
from continuum.memory.writer import (
    WriteScope,
    explicit_candidate,
    store_memories,
    stored_idempotency_key,
)
from continuum.store import metrics
from continuum.store.engine import session_scope
from continuum.store.models import Memory, MemoryLog
from continuum.store.reads import read_scope

log = logging.getLogger(__name__)
FORGETTABLE = ("active", "quarantined", "superseded", "merged", "archived")


class MemoryTools:
    """The memory tools for one tenant and caller. `provenance` is `system` for an assistant
    acting on its own judgement, `user_explicit` when the user asked for the write;
    `main_context` allows private memories to be listed (R42)."""

    def __init__(
        self,
        namespace: str,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        channel: str | None = None,
        provenance: Provenance = "system",
        main_context: bool = False,
    ) -> None:
        self.ctx = WriteScope(namespace, session_id, user_id, channel)
        self.provenance: Provenance = provenance
        self.main_context = main_context

    # -- dispatch ------------------------------------------------------------------------
    def call(
        self, name: str, arguments: dict[str, Any] | str | None, call_id: str | None = None
    ) -> dict[str, Any]:
        """Run one tool call; `call_id` (the LLM's tool-call id) makes a retried call a no-op."""
        tool = TOOLS.get(name)
        if tool is None:
            return {"success": False, "message": f"unknown tool {name!r}: use {', '.join(TOOLS)}"}
        try:
            raw = json.loads(arguments) if isinstance(arguments, str) else dict(arguments or {})
            args = tool.args.model_validate(raw)
        except json.JSONDecodeError as exc:
            return {"success": False, "message": f"{name}: arguments are not JSON ({exc})"}
        except ValidationError as exc:
            return {"success": False, "message": f"{name}: {validation_problems(exc)}"}
        self._call_id = call_id or uuid.uuid4().hex
        return OPERATIONS[name](self, args)

    def store_memory(self, **arguments: Any) -> dict[str, Any]:
        return self.call("store_memory", arguments)

    def update_memory(self, **arguments: Any) -> dict[str, Any]:
        return self.call("update_memory", arguments)

    def forget_memory(self, **arguments: Any) -> dict[str, Any]:
        return self.call("forget_memory", arguments)

    def mark_private(self, **arguments: Any) -> dict[str, Any]:
        return self.call("mark_private", arguments)

    def list_memories(self, **arguments: Any) -> dict[str, Any]:
        return self.call("list_memories", arguments)

    # -- helpers -------------------------------------------------------------------------
    def _scoped(self, stmt: Any) -> Any:
        stmt = stmt.where(Memory.namespace == self.ctx.namespace)
        if self.ctx.user_id:
            stmt = stmt.where(or_(Memory.user_id == self.ctx.user_id, Memory.user_id.is_(None)))
        return stmt

    def _write(
        self,
        db: DbSession,
        kind: MemoryKind,
        key: str,
        value: str,
        confidence: float,
        columns: dict[str, Any] | None = None,
    ) -> tuple[int, str]:
        """Store one explicit memory; returns (id of the memory in force, status of the write)."""
        candidate = explicit_candidate(
            kind,
            key,
            value,
            confidence=confidence,
            provenance=self.provenance,
            source_id=f"tool:{self._call_id}",
            session_id=self.ctx.session_id,
        )
        return _insert(db, self.ctx, candidate, columns)

    def _notify(self, memory_ids: list[int], action: str, key: str | None = None) -> None:
        """Tell live sessions about a committed write: `key` joins the stored keys of this
        tool's session (if it has one), and the change is published."""
        ctx = self.ctx
        try:
            if key and ctx.session_id:
                add_stored_keys(ctx.namespace, ctx.session_id, [key])
            notify_memory_changed(ctx.namespace, ctx.session_id, memory_ids, action, ctx.user_id)
        except redis.RedisError as exc:  # the write is committed; the rest is best effort
            log.warning("telling the live session about a memory write failed: %s", exc)

    def _targets(self, db: DbSession, args: MemoryTarget) -> list[Memory]:
        stmt = self._scoped(select(Memory)).where(Memory.status.in_(FORGETTABLE))
        if args.key is not None:
            stmt = stmt.where(func.lower(Memory.key) == snake(args.key))
        else:
            stmt = stmt.where(Memory.id == args.memory_id)
        return list(db.scalars(stmt.order_by(Memory.id).with_for_update()))

    # -- tools ---------------------------------------------------------------------------
    def _store(self, args: StoreMemoryArgs) -> dict[str, Any]:
        with session_scope() as db:
            memory_id, status = self._write(
                db, args.memory_type, args.key, args.value, args.confidence
            )
        response: dict[str, Any] = {"success": True, "memoryId": memory_id}
        if status != "duplicate":
            action = "stored" if status != "merged" else "reinforced"
            self._notify([memory_id], action, args.key)
        message = _STATUS_MESSAGES.get(status)
        if args.suggest_reminder:
            when = find_time_expression(args.value) if args.memory_type == "follow_up" else None
            response["suggestReminder"] = bool(when)
            if when:
                response["reminder"] = {"when": when, "text": args.value}
            else:
                message = "no reminder suggested: only a follow_up with a time can have one"
        if message:
            response["message"] = message
        return response

    def _update(self, args: UpdateMemoryArgs) -> dict[str, Any]:
        with session_scope() as db:
            old = db.scalars(
                self._scoped(select(Memory))
                .where(func.lower(Memory.key) == args.existing_key, Memory.status == "active")
                .order_by(Memory.created_at.desc(), Memory.id.desc())
                .limit(1)
                .with_for_update()
            ).first()
            if old is None:
                kind = args.memory_type or "fact"
                memory_id, _ = self._write(
                    db, kind, args.existing_key, args.new_value, args.confidence or 0.8
                )
                response: dict[str, Any] = {
                    "success": True,
                    "memoryId": memory_id,
                    "action": "created",
                }
            else:
                old.status = "superseded"
                db.flush()
                memory_id, _ = self._write(
                    db,
                    args.memory_type or cast(MemoryKind, old.kind),
                    old.key or args.existing_key,
                    args.new_value,
                    old.confidence if args.confidence is None else args.confidence,
                    {"version": old.version + 1, "private": old.private},
                )
                _superseded_by(db, old, memory_id, "tool")
                response = {
                    "success": True,
                    "memoryId": memory_id,
                    "action": "updated",
                    "previousMemoryId": old.id,
                    "version": old.version + 1,
                }
        self._notify([memory_id], str(response["action"]), args.existing_key)
        return response

    def revise(self, memory_id: int, content: str) -> dict[str, Any]:
        """Edit one memory by id (a person fixing it, in Mission Control): a new version
        with `content` supersedes it, with its kind, key, owner, session, channel, tags,
        importance, privacy and source turns, and its claim (valued `content`). The answer
        is a tool's: `{success, memoryId, previousMemoryId, version}`, or `{success: false}`
        when no active memory of this scope has the id. Raises ValueError for content the
        kind cannot hold."""
        with session_scope() as db:
            old = db.scalars(
                self._scoped(select(Memory))
                .where(Memory.id == memory_id, Memory.status == "active")
                .with_for_update()
            ).first()
            if old is None:
                return {"success": False, "message": f"no active memory with id {memory_id}"}
            claim = None
            if old.claim_subject and old.claim_predicate:
                claim = Claim(subject=old.claim_subject, predicate=old.claim_predicate,
                              value=content, scope=cast(ClaimScope, old.claim_scope or "global"),
                              valid_from=old.valid_from, valid_until=old.valid_until)  # fmt: skip
            try:
                candidate = MemoryCandidate(
                    kind=cast(MemoryKind, old.kind),
                    content=content,
                    tags=list(old.tags),
                    importance=old.importance,
                    confidence=old.confidence,
                    provenance=self.provenance,
                    claim=claim,
                    # a row is edited once (then it is superseded): one key per edit
                    source_message_ids=list(old.source_message_ids) or [f"edit:{old.id}"],
                    trigger=f"edit:{old.id}",
                    details={"edited_from": old.id},
                )
            except ValidationError as exc:
                raise ValueError(validation_problems(exc)) from None
            old.status = "superseded"
            db.flush()
            scope = WriteScope(old.namespace, old.session_id, old.user_id, old.channel)
            columns = {"key": old.key, "version": old.version + 1, "private": old.private}
            new_id, _ = _insert(db, scope, candidate, columns)
            _superseded_by(db, old, new_id, "review")
            response = {"success": True, "memoryId": new_id, "previousMemoryId": old.id,
                        "version": old.version + 1}  # fmt: skip
        self._notify([new_id], "updated", old.key)
        return response

    def _set(self, args: MemoryTarget, values: dict[str, Any], action: str) -> dict[str, Any]:
        with session_scope() as db:
            ids = [m.id for m in self._targets(db, args)]
            if ids:
                db.execute(
                    update(Memory)
                    .where(Memory.namespace == self.ctx.namespace, Memory.id.in_(ids))
                    .values(**values, updated_at=func.now())
                    .execution_options(synchronize_session=False)
                )
                db.add_all(
                    MemoryLog(
                        namespace=self.ctx.namespace, action=action, memory_id=i, trigger="tool"
                    )
                    for i in ids
                )
        if not ids:
            target = f"key {args.key!r}" if args.key is not None else f"id {args.memory_id}"
            return {"success": False, "message": f"no memory with {target}"}
        self._notify(ids, action)
        return {"success": True, "memoryIds": ids}

    def _forget(self, args: ForgetMemoryArgs) -> dict[str, Any]:
        forgotten_at = {"forgotten_at": datetime.now(UTC).isoformat()}
        values = {"status": "forgotten", "details": Memory.details.op("||")(forgotten_at)}
        response = self._set(args, values, "forget")
        if response["success"]:
            response["message"] = "forgotten now; purged by the next maintenance run"
        return response

    def _private(self, args: MarkPrivateArgs) -> dict[str, Any]:
        return self._set(args, {"private": args.private}, "private" if args.private else "public")

    def _list(self, args: ListMemoriesArgs) -> dict[str, Any]:
        stmt = self._scoped(select(Memory)).where(Memory.status == "active")
        if args.memory_type:
            stmt = stmt.where(Memory.kind == args.memory_type)
        if args.channel:
            stmt = stmt.where(Memory.channel == args.channel)
        if not self.main_context:
            stmt = stmt.where(Memory.private.is_(False))
        stmt = stmt.order_by(Memory.created_at.desc(), Memory.id.desc()).limit(args.limit)
        with read_scope(self.ctx.namespace) as db:
            memories = [
                {
                    "memoryId": m.id,
                    "type": m.kind,
                    "key": m.key,
                    "value": m.claim_value or m.content,
                    "content": m.content,
                    "confidence": m.confidence,
                    "importance": m.importance,
                    "private": m.private,
                    "version": m.version,
                    "createdAt": m.created_at.isoformat(),
                }
                for m in db.scalars(stmt)
            ]
        return {"success": True, "memories": memories}


def _insert(
    db: DbSession, scope: WriteScope, candidate: MemoryCandidate, columns: dict[str, Any] | None
) -> tuple[int, str]:
    """Store one memory; returns (id of the memory in force, status of the write)."""
    stored = store_memories(db, [(scope, candidate)], columns)
    ikey = stored_idempotency_key(scope.namespace, candidate)
    row = db.execute(
        select(Memory.id, Memory.status, Memory.superseded_by).where(
            Memory.namespace == scope.namespace, Memory.idempotency_key == ikey
        )
    ).one()
    status = stored[0].status if stored else "duplicate"
    return (row.superseded_by if status == "merged" else row.id), status


def _superseded_by(db: DbSession, old: Memory, memory_id: int, trigger: str) -> None:
    """`old` (already `superseded`) now points at its new version `memory_id`: counted and
    logged as an update."""
    old.superseded_by = memory_id
    metrics.incr_on_commit(db, metrics.MEMORIES_UPDATED)
    metrics.incr_on_commit(db, metrics.MEMORIES_SUPERSEDED)
    db.add(
        MemoryLog(
            namespace=old.namespace,
            action="update",
            memory_id=old.id,
            trigger=trigger,
            details={"new_memory_id": memory_id, "version": old.version + 1},
        )
    )


_STATUS_MESSAGES = {
    "merged": "already known: the existing memory was reinforced",
    "quarantined": "held for review: it contradicts a more trusted memory",
    "superseded": "stored as history: a newer memory says otherwise",
    "duplicate": "already stored by this tool call",
}
# What each tool does, by name: one operation per tool of `tool_schemas.TOOLS` (a test holds
# the two lists equal, so a tool a client is offered always has an operation).
OPERATIONS: dict[str, Callable[[MemoryTools, Any], dict[str, Any]]] = {
    "store_memory": MemoryTools._store,
    "update_memory": MemoryTools._update,
    "forget_memory": MemoryTools._forget,
    "mark_private": MemoryTools._private,
    "list_memories": MemoryTools._list,
}
