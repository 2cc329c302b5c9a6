"""The recall log (R31, R27): every recall written to `memory_log` (action `recall`) with
its query, topic slug, user, channel, budget, tokens injected and the refs it injected with
their scores — and read back by topic-shift recall, which skips what a recall under the
previous topic already injected.

Writer and reader live together because they share one format (the `details` keys, the
keyed topic label): a change to one must be a change to the other. Both are the primary's:
a block read from a standby (`continuum.store.reads`) is logged in a transaction of its own
on the primary, and what topic-shift recall skips is what was logged, at once.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session as DbSession

from continuum.recall.items import ContextResult, RecallRequest
from continuum.recall.rankings import set_local
from continuum.sealing.envelope import seal
from continuum.sealing.terms import keyed_label
from continuum.sealing.tombstones import UserForgotten
from continuum.store.engine import fetch, session_scope

log = logging.getLogger(__name__)
QUERY_KIND = "memory_log.query"
# The recall log need not wait for a WAL flush: a crash may lose its last few rows, never a
# memory.
UNFLUSHED = {"synchronous_commit": "off"}


def _logged_query(request: RecallRequest, query_id: str) -> str | None:
    """The question as the recall log keeps it: sealed for the user of an encrypted tenant,
    bound to the recall's `query_id` (unique, and kept beside it in the same row); not at
    all for a forgotten user."""
    try:
        return seal(request.namespace, request.user_id, QUERY_KIND, request.seed_text, query_id)
    except UserForgotten:
        return None


def log_recall(db: DbSession, request: RecallRequest, result: ContextResult) -> None:
    """One `memory_log` row for the recall `request` that gave `result`."""
    details = {
        "query_id": result.query_id,
        "query": _logged_query(request, result.query_id),
        "topic": keyed_label(request.namespace, result.topic),
        "since_topic": request.since_topic and keyed_label(request.namespace, request.since_topic),
        "user_id": request.user_id,
        "channel": request.channel,
        "max_tokens": request.max_tokens,
        "tokens_injected": result.tokens_used,
        "results": [{"ref": i.ref, "score": i.score} for i in result.items],
        "excluded": len(result.excluded),
    }
    fetch(
        db,
        "INSERT INTO memory_log (namespace, action, trigger, details) "
        "VALUES (:ns, 'recall', 'context', CAST(:details AS jsonb))",
        {"ns": request.namespace, "details": json.dumps(details)},
    )


def log_recall_apart(request: RecallRequest, result: ContextResult) -> None:
    """`log_recall` in a transaction of its own on the primary (for a block read from the
    standby). A primary that does not answer costs the row, not the block: a warning."""
    try:
        with session_scope() as db:
            set_local(db, UNFLUSHED)
            log_recall(db, request, result)
    except OperationalError as exc:
        log.warning("recall %s of %s not logged: %s", result.query_id, request.namespace, exc)


def injected_for_topic(
    namespace: str, topic: str, user_id: str | None, within: timedelta
) -> frozenset[str]:
    """Refs injected by recalls logged under `topic` (for this user) in the last `within`
    (wall-clock time: when the recalls ran)."""
    with session_scope() as db:
        rows = db.execute(
            text(
                "SELECT details->'results' AS results FROM memory_log "
                "WHERE namespace = :ns AND action = 'recall' AND details->>'topic' = :topic "
                "AND created_at >= :since "
                "AND (CAST(:uid AS text) IS NULL OR details->>'user_id' = :uid)"
            ),
            {
                "ns": namespace,
                "topic": keyed_label(namespace, topic),
                "since": datetime.now(UTC) - within,
                "uid": user_id,
            },
        )
        return frozenset(item["ref"] for row in rows for item in row.results or [])
