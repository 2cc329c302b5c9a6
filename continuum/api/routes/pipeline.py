"""`GET /v1/status`: the pipeline as the token may see it (Mission Control's Status view).
Its tenants' figures always (`continuum.status.tenant_status`); the global ones, which mix
every tenant's work (queues, unacked messages, every dead letter and embedding backlog, the
last sync run's counts), only for an operator token (`continuum tokens create --ops`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from continuum.api.auth import ScopeDep
from continuum.status import pipeline_status, tenant_status

router = APIRouter(prefix="/v1", tags=["status"])


@router.get("/status")
def get_status(scope: ScopeDep) -> dict[str, Any]:
    """`{tenant: {namespaces, embeddings_pending, dead_letters, problems_open, last_sync_at,
    llm_since, llm: [per tenant and model], llm_budgets}, pipeline: null | {queues, unacked,
    embeddings_pending, dead_letters, secrets_redacted, last_sync, last_sync_at,
    problems_open, drained}}`."""
    tenant = tenant_status(list(scope.namespaces)).as_dict()
    pipeline = pipeline_status().as_dict() if scope.token.ops else None
    return {"tenant": tenant, "pipeline": pipeline}
