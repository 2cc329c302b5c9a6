"""What planning and applying agree on: the thresholds of a run (`MaintenanceConfig`), the
shape of a step (`Action`), and the row rules a plan selects with and a step re-checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from continuum.domain.kinds import kind_names
from continuum.sealing.envelope import open_text, seal

Action = dict[str, Any]
TRIGGER = "maintenance"
PLAN_KIND = "maintenance_runs.plan"


def stored_plan(namespace: str, steps: list[Action], run_id: int) -> list[Action]:
    """The plan as its run keeps it (`maintenance_runs.plan`): a compress step's summary
    quotes the memories it joins, so it is sealed like them (their owner's key), bound to
    the run."""
    return [
        {**step, "content": seal(namespace, step["user_id"], PLAN_KIND, step["content"], run_id)}
        if step["op"] == "compress"
        else step
        for step in steps
    ]


def opened_step(step: Action, run_id: int) -> Action:
    """A stored step of the run `run_id` as planned."""
    if step["op"] != "compress":
        return step
    return {**step, "content": open_text(step["content"], PLAN_KIND, run_id)}


@dataclass(frozen=True)
class MaintenanceConfig:
    """Thresholds of a run (these defaults; callers such as tests and the benchmark pass others)."""

    duplicate_similarity: float = 0.95
    half_life_days: float = 90.0
    decision_half_life_days: float = 365.0
    forgotten_retention_days: float = 0.0
    superseded_retention_days: float = 90.0
    decayed_retention_days: float = 180.0
    summary_archive_days: float = 30.0
    cluster_min_size: int = 8
    cluster_kinds: tuple[str, ...] = kind_names(lambda spec: spec.compressible)
    cluster_max_importance: int = 5
    step_size: int = 500
    memory_md_items: int = 12
    lock_ttl_s: int = 3600


# When a memory was last of use: created, accessed or confirmed.
RECENT = (
    "greatest(created_at, coalesce(last_accessed_at, created_at), "
    "coalesce(CAST(details->>'last_confirmed' AS timestamptz), created_at))"
)
# The per-kind rules of the registry, bound as parameters of the queries below.
KIND_PARAMS = {
    "decay_kept": list(kind_names(lambda spec: not spec.pruned_when_decayed)),
    "slow_decay": list(kind_names(lambda spec: spec.slow_decay)),
    "archived_kinds": list(kind_names(lambda spec: spec.archived_when_old)),
}
# Kinds never merged with a near-identical memory (documents: each is its own path and key).
KEPT_APART = frozenset(kind_names(lambda spec: not spec.merged_when_alike))
# Which rows each prune reason removes; planning selects with it, applying re-checks it.
PRUNE_WHERE = {
    "forgotten": "status = 'forgotten' AND updated_at < :cutoff",
    "superseded": "status IN ('superseded', 'merged') AND updated_at < :cutoff",
    "decayed": "status = 'active' AND importance <= 1 "
    f"AND kind <> ALL(CAST(:decay_kept AS text[])) AND {RECENT} < :cutoff",
}
