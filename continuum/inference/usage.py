"""What the LLM costs: every call recorded per tenant (`llm_calls`: model, prompt and version,
tokens, latency, outcome) and counted in the pipeline metrics; the per-tenant daily token
budget (`CONTINUUM_LLM_DAILY_TOKEN_BUDGET`, UTC days) and the figures `continuum usage`
prints.

Tokens are what the endpoint reports in `usage`; an endpoint that reports none is
estimated with the local tokenizer. A request that never got an answer counts no tokens.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session as DbSession

from continuum.config import get_settings
from continuum.sealing.envelope import seal
from continuum.store import metrics
from continuum.store.bulk import allocate_ids
from continuum.store.engine import session_scope
from continuum.store.models import LlmCall

log = logging.getLogger(__name__)
Outcome = Literal["ok", "repaired", "fallback", "error", "timeout"]
ANSWERED: tuple[Outcome, ...] = ("ok", "repaired")
ERROR_KIND = "llm_calls.error"
OUTCOME_COUNTERS = {
    "fallback": metrics.LLM_BAD_OUTPUT,
    "error": metrics.LLM_ERRORS,
    "timeout": metrics.LLM_TIMEOUTS,
}


@dataclass
class CallRecord:
    """One call as it goes: requests and tokens add up, the outcome is set at the end."""

    namespace: str
    session_id: str | None
    model: str
    prompt: str
    prompt_version: str
    outcome: Outcome = "error"
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    error: str | None = None


def record(call: CallRecord) -> None:
    """Keep the call in `llm_calls` and the counters. Losing a record to a database outage
    never fails the work that made the call (it is logged)."""
    try:
        with session_scope() as db:
            # An error may quote the model's answer about the conversation: sealed for an
            # encrypted tenant like the conversation itself.
            row: dict[str, Any] = {}
            if call.error is not None and get_settings().is_encrypted(call.namespace):
                (row["id"],) = allocate_ids(db, LlmCall, 1)  # what the sealed error is bound to
                row["error"] = seal(call.namespace, None, ERROR_KIND, call.error, row["id"])
            db.add(LlmCall(**{**asdict(call), **row}))
    except SQLAlchemyError as exc:
        log.warning("LLM call of %s not recorded: %s", call.namespace, exc)
    metrics.incr(metrics.LLM_CALLS)
    metrics.incr(metrics.LLM_PROMPT_TOKENS, call.prompt_tokens)
    metrics.incr(metrics.LLM_COMPLETION_TOKENS, call.completion_tokens)
    if call.outcome not in ANSWERED:
        metrics.incr(metrics.LLM_FALLBACKS)
        metrics.incr(OUTCOME_COUNTERS[call.outcome])


def _today() -> datetime:
    return datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def tokens_today(db: DbSession, namespaces: list[str] | None = None) -> dict[str, int]:
    """Tokens (prompt + completion) each tenant used since 00:00 UTC: of `namespaces` (0 for
    those without calls), or of every tenant that made calls today."""
    stmt = select(
        LlmCall.namespace, func.sum(LlmCall.prompt_tokens + LlmCall.completion_tokens)
    ).where(LlmCall.created_at >= _today())
    if namespaces is not None:
        stmt = stmt.where(LlmCall.namespace.in_(namespaces))
    used = {
        namespace: int(total or 0)
        for namespace, total in db.execute(stmt.group_by(LlmCall.namespace))
    }
    return used if namespaces is None else {n: used.get(n, 0) for n in namespaces}


def over_budget(namespace: str) -> bool:
    """True once the tenant's tokens today reached `CONTINUUM_LLM_DAILY_TOKEN_BUDGET`."""
    budget = get_settings().llm_daily_token_budget
    if budget is None:
        return False
    with session_scope() as db:
        return tokens_today(db, [namespace])[namespace] >= budget


@dataclass(frozen=True)
class Usage:
    """Calls of one tenant and model since a time, by outcome."""

    namespace: str
    model: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    ok: int
    repaired: int
    fallback: int
    errors: int
    timeouts: int
    latency_ms_avg: int


@dataclass(frozen=True)
class Budget:
    """A tenant's tokens today against the daily budget (None: no budget)."""

    namespace: str
    used_today: int
    budget: int | None

    @property
    def exhausted(self) -> bool:
        return self.budget is not None and self.used_today >= self.budget


def usage_since(db: DbSession, since: datetime, namespaces: list[str] | None = None) -> list[Usage]:
    """Per tenant and model, every call since `since` (of `namespaces`, or every tenant)."""

    def outcome(name: Outcome) -> Any:
        return func.count().filter(LlmCall.outcome == name)

    stmt = select(
        LlmCall.namespace,
        LlmCall.model,
        func.count(),
        func.sum(LlmCall.prompt_tokens),
        func.sum(LlmCall.completion_tokens),
        outcome("ok"),
        outcome("repaired"),
        outcome("fallback"),
        outcome("error"),
        outcome("timeout"),
        func.avg(LlmCall.latency_ms),
    ).where(LlmCall.created_at >= since)
    if namespaces is not None:
        stmt = stmt.where(LlmCall.namespace.in_(namespaces))
    rows = db.execute(
        stmt.group_by(LlmCall.namespace, LlmCall.model).order_by(LlmCall.namespace, LlmCall.model)
    )
    return [
        Usage(
            namespace=row[0],
            model=row[1],
            calls=row[2],
            prompt_tokens=int(row[3] or 0),
            completion_tokens=int(row[4] or 0),
            ok=row[5],
            repaired=row[6],
            fallback=row[7],
            errors=row[8],
            timeouts=row[9],
            latency_ms_avg=round(row[10] or 0),
        )
        for row in rows
    ]


def budgets(db: DbSession, namespaces: list[str], *, only: bool = False) -> list[Budget]:
    """Today's tokens beside the daily budget, for `namespaces` and (unless `only`) every
    tenant that made calls today."""
    budget = get_settings().llm_daily_token_budget
    used = (
        tokens_today(db, namespaces)
        if only
        else {**dict.fromkeys(namespaces, 0), **tokens_today(db)}
    )
    return [Budget(namespace, used[namespace], budget) for namespace in sorted(used)]
