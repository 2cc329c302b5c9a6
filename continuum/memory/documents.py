"""Documents: JSON values an application keeps under a namespace path and a key (the items
of a LangGraph store), stored as memories of kind `document`, so hybrid search, the context
block, encryption at rest, forgetting a user and the embedding outbox treat them as they
treat every memory.

One row of `memories` per document (tenant, path, key):
- `idempotency_key` is the document's locator, a digest of path and key (keyed for an
  encrypted tenant): a put is an upsert on it, so a document has one row however many
  writers race;
- `content` is the text it is found by (the application says which of its fields; none:
  not found by a query, only by its path and filters), clipped to `MAX_TEXT_CHARS`;
- `details.document` holds `{path, key, value, indexed}` (sealed for an encrypted tenant);
- `tags` hold the path in the clear, as `store-path:a.b.c` and one `store-in:` tag per
  prefix (`store-in:a`, `store-in:a.b`, `store-in:a.b.c`), so a prefix is a tag filter of
  search and the paths are listed by SQL (labels never contain a period);
- `user_id` is the owner the application names: forgetting that user removes it;
- `key` stays empty, so the memory tools' keys never meet a document.

A put rewrites the row in place: `created_at` is kept, `updated_at` moves, the vector is
cleared for the outbox to embed the new text. A delete removes the row. Secrets in the
value and the text are redacted like any memory's (`CONTINUUM_REDACT_SECRETS`), and a
forgotten user's documents are refused. Filters (`matches`) and path patterns
(`path_matches`) follow LangGraph's store: exact values, nested objects, and `$eq`, `$ne`,
`$gt`, `$gte`, `$lt`, `$lte`; `*` matches any one label.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import any_, delete, literal, select, text, update
from sqlalchemy.orm import Session as DbSession

from continuum.config import get_settings
from continuum.domain.records import Document
from continuum.domain.secrets import redact
from continuum.domain.storable import UNSTORABLE
from continuum.memory.writer import TRUST, stored_digest
from continuum.sealing.envelope import seal, seal_details
from continuum.sealing.terms import terms_for
from continuum.sealing.tombstones import guard_users
from continuum.store import metrics
from continuum.store.bulk import allocate_ids, insert_ignore
from continuum.store.engine import session_scope
from continuum.store.models import Memory, MemoryLog
from continuum.store.reads import read_scope

KIND = "document"
TRIGGER = "document"
PATH_TAG = "store-path:"
PREFIX_TAG = "store-in:"
SEPARATOR = "."  # LangGraph refuses it inside a label, so a joined path is unambiguous
MAX_TEXT_CHARS = 4000  # of the text a document is found by (its value is kept whole)
IMPORTANCE = 5
OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
Path = tuple[str, ...]


class DocumentRefused(ValueError):
    """A document that cannot be stored; `field` names the part of the request at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def joined(path: Sequence[str]) -> str:
    return SEPARATOR.join(path)


def prefix_tag(prefix: Sequence[str]) -> str:
    """The tag every document at or below `prefix` carries."""
    return PREFIX_TAG + joined(prefix)


def _tags(path: Path) -> list[str]:
    return [PATH_TAG + joined(path), *(prefix_tag(path[: i + 1]) for i in range(len(path)))]


def locator(namespace: str, path: Path, key: str) -> str:
    """The document's idempotency key in `namespace` (keyed for an encrypted tenant)."""
    digest = hashlib.sha256(json.dumps([list(path), key]).encode()).hexdigest()
    return stored_digest(namespace, f"{KIND}:{digest}")


def unstorable(value: Any, where: str = "value") -> str | None:
    """Where `value` holds what JSON in Postgres cannot keep (NUL, a lone surrogate, NaN or
    an infinity), as a dotted location; None when it is all storable."""
    if isinstance(value, str):
        return where if UNSTORABLE.search(value) else None
    if isinstance(value, float):
        return None if math.isfinite(value) else where
    if isinstance(value, Mapping):
        for name, item in value.items():
            found = unstorable(str(name), where) or unstorable(item, f"{where}.{name}")
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = unstorable(item, f"{where}.{index}")
            if found:
                return found
    return None


def _redacted(value: Any) -> tuple[Any, int]:
    """`value` with secrets in every string replaced, and how many were found."""
    if isinstance(value, str):
        result = redact(value)
        return result.text, result.total
    if isinstance(value, Mapping):
        pairs = [(name, _redacted(item)) for name, item in value.items()]
        return {name: item for name, (item, _) in pairs}, sum(n for _, (_, n) in pairs)
    if isinstance(value, list):
        items = [_redacted(item) for item in value]
        return [item for item, _ in items], sum(n for _, n in items)
    return value, 0


def _document(row: Memory, score: float | None = None) -> Document:
    stored = row.details.get("document", {})
    return Document(
        namespace=stored.get("path", []),
        key=stored.get("key", ""),
        value=stored.get("value", {}),
        user_id=row.user_id,
        indexed=bool(stored.get("indexed")),
        memory_id=row.id,
        created_at=row.created_at,
        updated_at=row.updated_at,
        score=score,
    )


def put_document(
    namespace: str,
    path: Path,
    key: str,
    value: dict[str, Any],
    text: str | None,
    user_id: str | None = None,
) -> Document:
    """Store `value` under (`path`, `key`), found by `text` (None: by path and filters only);
    replaces what was there."""
    bad = unstorable(value) or (unstorable(text, "text") if text is not None else None)
    if bad:
        raise DocumentRefused(bad, "holds what JSON cannot store (NUL, lone surrogate, NaN)")
    with session_scope() as db:
        if guard_users(db, namespace, [user_id]):
            raise DocumentRefused(
                "user_id", f"user {user_id!r} was forgotten: nothing of theirs is stored"
            )
        if get_settings().redact_secrets:
            value, in_value = _redacted(value)
            text, in_text = _redacted(text) if text is not None else (None, 0)
            if in_value + in_text:
                metrics.incr_on_commit(db, metrics.SECRETS_REDACTED, in_value + in_text)
        content = (text or "")[:MAX_TEXT_CHARS]
        stored = {"path": list(path), "key": key, "value": value, "indexed": text is not None}
        found_by = locator(namespace, path, key)
        columns = {
            "user_id": user_id,
            "tags": _tags(path),
            "tsv_keyed": terms_for(db, namespace, [content])[0],
            "updated_at": datetime.now(UTC),
        }

        def sealed(row_id: int) -> dict[str, Any]:
            """The columns, content and details sealed for (and bound to) row `row_id`."""
            return {
                **columns,
                "content": seal(namespace, user_id, "memories.content", content, row_id),
                "details": seal_details(namespace, user_id, {"document": stored}, row_id),
            }

        row = _write(db, namespace, found_by, sealed)
        db.add(MemoryLog(namespace=namespace, action="write", memory_id=row.id,
                         trigger=TRIGGER, details={"kind": KIND}))  # fmt: skip
    return Document(
        namespace=list(path),
        key=key,
        value=value,
        user_id=user_id,
        indexed=text is not None,
        memory_id=row.id,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def _write(
    db: DbSession, namespace: str, locator: str, sealed: Callable[[int], dict[str, Any]]
) -> Any:
    """Rewrite the document's row, or insert it (then count a stored memory): its seals
    are bound to the row's id, so the id is known before the values are sealed. A racing
    insert of the same document makes the loser's insert a no-op, and it rewrites instead."""
    while True:
        found = db.scalar(
            select(Memory.id)
            .where(Memory.namespace == namespace, Memory.idempotency_key == locator)
            .with_for_update()
        )
        if found is not None:
            return db.execute(
                update(Memory)
                .where(Memory.namespace == namespace, Memory.id == found)
                .values(**sealed(found), status="active", embedding=None)
                .returning(Memory.id, Memory.created_at, Memory.updated_at)
            ).one()
        row_id = allocate_ids(db, Memory, 1)[0]
        row = {
            "id": row_id,
            "namespace": namespace,
            "kind": KIND,
            "importance": IMPORTANCE,
            "confidence": 1.0,
            "provenance": "system",
            "trust": TRUST["system"],
            "trigger": TRIGGER,
            "idempotency_key": locator,
            **sealed(row_id),
        }
        inserted = insert_ignore(
            db, Memory, [row], ["namespace", "idempotency_key"], ["id", "created_at", "updated_at"]
        )
        if inserted:
            metrics.incr_on_commit(db, metrics.MEMORIES_STORED)
            return inserted[0]


def _at(db: DbSession, namespace: str, path: Path, key: str) -> Memory | None:
    return db.scalars(
        select(Memory).where(
            Memory.namespace == namespace,
            Memory.idempotency_key == locator(namespace, path, key),
            Memory.status == "active",
        )
    ).first()


def get_document(namespace: str, path: Path, key: str) -> Document | None:
    with read_scope(namespace) as db:
        row = _at(db, namespace, path, key)
        return _document(row) if row else None


def delete_document(namespace: str, path: Path, key: str) -> bool:
    """Remove the document (row, vector and all); False when there was none."""
    with session_scope() as db:
        gone = db.scalars(
            delete(Memory)
            .where(
                Memory.namespace == namespace,
                Memory.idempotency_key == locator(namespace, path, key),
            )
            .returning(Memory.id)
        ).all()
        db.add_all(MemoryLog(namespace=namespace, action="delete", memory_id=i, trigger=TRIGGER)
                   for i in gone)  # fmt: skip
    return bool(gone)


def _scope(namespace: str, prefix: Path) -> Any:
    stmt = select(Memory).where(
        Memory.namespace == namespace, Memory.kind == KIND, Memory.status == "active"
    )
    return stmt.where(literal(prefix_tag(prefix)) == any_(Memory.tags)) if prefix else stmt


def find_documents(
    namespace: str,
    prefix: Path,
    filter: Mapping[str, Any] | None = None,
    limit: int = 10,
    offset: int = 0,
) -> list[Document]:
    """Documents at or below `prefix` whose value matches `filter`, most recently updated
    first (the filter is applied as the rows are read, so a page costs what it skips)."""
    if filter:
        check_filter(filter)
    found: list[Document] = []
    stmt = _scope(namespace, prefix).order_by(Memory.updated_at.desc(), Memory.id.desc())
    with read_scope(namespace) as db:
        for row in db.scalars(stmt.execution_options(yield_per=200)):
            document = _document(row)
            if filter and not matches(document.value, filter):
                continue
            if offset:
                offset -= 1
                continue
            found.append(document)
            if len(found) >= limit:
                break
    return found


def documents_by_id(namespace: str, ids: Sequence[int]) -> dict[int, Document]:
    """The active documents among memories `ids`."""
    stmt = _scope(namespace, ()).where(Memory.id.in_(list(ids)))
    with read_scope(namespace) as db:
        return {row.id: _document(row) for row in db.scalars(stmt)}


def paths(namespace: str) -> list[Path]:
    """Every path that holds a document, sorted."""
    sql = text(
        "SELECT DISTINCT t FROM memories, unnest(tags) AS t WHERE namespace = :ns "
        "AND kind = :kind AND status = 'active' AND t LIKE :tag"
    )
    with read_scope(namespace) as db:
        tags = db.scalars(sql, {"ns": namespace, "kind": KIND, "tag": PATH_TAG + "%"}).all()
    return sorted(tuple(tag.removeprefix(PATH_TAG).split(SEPARATOR)) for tag in tags)


def path_matches(path: Path, pattern: Sequence[str], side: Literal["prefix", "suffix"]) -> bool:
    """Whether `path` starts (or ends) with `pattern`, `*` matching any one label."""
    if len(path) < len(pattern):
        return False
    labels = path[: len(pattern)] if side == "prefix" else path[len(path) - len(pattern) :]
    return all(want in ("*", label) for label, want in zip(labels, pattern, strict=True))


def list_paths(
    namespace: str,
    prefix: Sequence[str] = (),
    suffix: Sequence[str] = (),
    max_depth: int | None = None,
    limit: int = 100,
    offset: int = 0,
) -> list[Path]:
    """The paths matching `prefix` and `suffix`, cut to `max_depth` labels (deduplicated),
    sorted, one page of them."""
    found: Iterator[Path] = (
        path
        for path in paths(namespace)
        if path_matches(path, prefix, "prefix") and path_matches(path, suffix, "suffix")
    )
    if max_depth is not None:
        found = iter(sorted({path[:max_depth] for path in found}))
    return list(found)[offset : offset + limit]


def check_filter(wanted: Any) -> None:
    """Refuse a filter naming an operator `matches` does not know, wherever it is nested
    (ValueError); `matches` may stop before it reaches one."""
    if isinstance(wanted, Mapping):
        for name, operand in wanted.items():
            if str(name).startswith("$") and name not in OPERATORS:
                raise ValueError(f"unknown operator {name!r}: use one of {', '.join(OPERATORS)}")
            check_filter(operand)
    elif isinstance(wanted, list | tuple):
        for item in wanted:
            check_filter(item)


def matches(value: Any, filter: Mapping[str, Any]) -> bool:
    """Whether a document's value passes `filter` (every field must)."""
    return isinstance(value, Mapping) and all(
        _compare(value.get(name), wanted) for name, wanted in filter.items()
    )


def _compare(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(str(name).startswith("$") for name in wanted):
            return all(_apply(value, op, operand) for op, operand in wanted.items())
        return matches(value, wanted)
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list)
            and len(value) == len(wanted)
            and all(_compare(v, w) for v, w in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def _apply(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(value == operand)
    if op == "$ne":
        return bool(value != operand)
    try:
        left, right = float(value), float(operand)
    except (TypeError, ValueError):
        return False  # a missing or non-numeric field is not greater or smaller than anything
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[
        op
    ]
