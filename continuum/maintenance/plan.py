"""What a maintenance run would do now: one read-only snapshot of a tenant turned into a
list of small, JSON-able steps (the diff). Planning changes nothing; `apply` writes a step."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session as DbSession

from continuum.domain.memory import DIGEST_KINDS, MAX_CONTENT_CHARS
from continuum.domain.text import clip
from continuum.maintenance.retention import plan_expiry
from continuum.maintenance.rules import (
    KEPT_APART,
    KIND_PARAMS,
    PRUNE_WHERE,
    RECENT,
    Action,
    MaintenanceConfig,
)
from continuum.maintenance.workspace import memory_md_path
from continuum.memory.claims import CLAIM_COLUMNS, ClaimState, decide
from continuum.sealing.envelope import UNREADABLE, read_text
from continuum.store.engine import session_scope

_TOPIC = "(SELECT t FROM unnest(tags) AS t WHERE t LIKE 'topic:%' LIMIT 1)"
_GROUP = f"coalesce('key:' || lower(key), {_TOPIC}, '')"


def _chunks(ids: Sequence[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


def _cutoffs(now: datetime, config: MaintenanceConfig) -> dict[str, datetime]:
    """Rows last touched before these moments are pruned (by reason) or archived."""
    days = timedelta(days=1)
    return {
        "forgotten": now - config.forgotten_retention_days * days,
        "superseded": now - config.superseded_retention_days * days,
        "decayed": now - config.decayed_retention_days * days,
        "archive": now - config.summary_archive_days * days,
    }


def _plan_claims(db: DbSession, params: dict[str, Any], removed: set[int]) -> list[Action]:
    """Replay each contested claim in event-time order, as if its memories arrived now."""
    rows = db.execute(
        text(
            f"SELECT {CLAIM_COLUMNS} FROM memories WHERE namespace = :ns AND status = 'active' "
            "AND claim_predicate IS NOT NULL AND (coalesce(user_id, ''), lower(claim_subject), "
            "lower(claim_predicate)) IN (SELECT coalesce(user_id, ''), lower(claim_subject), "
            "lower(claim_predicate) FROM memories WHERE namespace = :ns AND status = 'active' "
            "AND claim_predicate IS NOT NULL GROUP BY 1, 2, 3 HAVING count(*) > 1) "
            "ORDER BY user_id, lower(claim_subject), lower(claim_predicate), created_at, id"
        ),
        params,
    ).all()
    groups: dict[tuple[str, str, str], list[Any]] = {}
    for row in rows:
        key = (row.user_id or "", row.claim_subject.lower(), row.claim_predicate.lower())
        groups.setdefault(key, []).append(row)
    actions: list[Action] = []
    for members in groups.values():
        active: list[ClaimState] = []
        for row in members:
            new = ClaimState.of(row)
            for old in list(active):
                verdict = decide(new, old, params["now"])
                if verdict == "none":
                    continue
                action, gone = _claim_action(verdict, new.id, old.id)
                actions.append(action)
                removed.add(gone)
                if gone == new.id:
                    break
                active.remove(old)
            else:
                active.append(new)
    return actions


def _claim_action(verdict: str, new_id: int, old_id: int) -> tuple[Action, int]:
    """The step for one verdict, and the memory it takes out of force."""
    if verdict == "reinforce":
        return {"op": "merge", "keep": old_id, "ids": [new_id]}, new_id
    if verdict in ("supersede_old", "supersede_new"):
        old, new = (old_id, new_id) if verdict == "supersede_old" else (new_id, old_id)
        return {"op": "supersede", "id": old, "by": new}, old
    held, other = (new_id, old_id) if verdict == "quarantine_new" else (old_id, new_id)
    return {"op": "quarantine", "id": held, "conflicts_with": other}, held


def _plan_duplicates(
    db: DbSession, params: dict[str, Any], config: MaintenanceConfig, removed: set[int]
) -> list[Action]:
    """Near-identical memories (cosine ≥ threshold) of the same user, kind and key (or topic
    when keyless); claims are left to `_plan_claims`, since 3 and 4 grandchildren embed alike;
    digests and the kinds the registry keeps apart (documents) are never merged."""
    pairs = db.execute(
        text(
            f"WITH c AS MATERIALIZED (SELECT id, coalesce(user_id, '') AS u, kind, {_GROUP} AS g, "
            "embedding, trust, corroboration, created_at FROM memories WHERE namespace = :ns "
            "AND status = 'active' AND embedding IS NOT NULL AND claim_predicate IS NULL "
            "AND NOT private AND kind <> ALL(:apart)) "
            "SELECT a.id AS a, b.id AS b FROM c AS a JOIN c AS b ON a.u = b.u AND a.kind = b.kind "
            "AND a.g = b.g AND a.id < b.id WHERE (a.embedding <=> b.embedding) <= :max_distance"
        ),
        {
            **params,
            "apart": sorted(DIGEST_KINDS | KEPT_APART),
            "max_distance": 1 - config.duplicate_similarity,
        },
    ).all()
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        if a not in removed and b not in removed:
            parent[root(b)] = root(a)
    clusters: dict[int, list[int]] = {}
    for member in list(parent):
        clusters.setdefault(root(member), []).append(member)
    if not clusters:
        return []
    ranks = {
        r.id: (-r.trust, -r.corroboration, r.created_at, r.id)
        for r in db.execute(
            text(
                "SELECT id, trust, corroboration, created_at FROM memories "
                "WHERE namespace = :ns AND id = ANY(:ids)"
            ),
            {"ns": params["ns"], "ids": list(parent)},
        )
    }
    actions = []
    for members in sorted(clusters.values(), key=min):
        keep, *dups = sorted(members, key=ranks.__getitem__)
        actions.append({"op": "merge", "keep": keep, "ids": sorted(dups)})
        removed.update(dups)
    return actions


def _plan_clusters(
    db: DbSession, params: dict[str, Any], config: MaintenanceConfig, removed: set[int]
) -> list[Action]:
    """Many small memories of one kind and topic → one summary memory linking them."""
    groups = db.execute(
        text(
            f"SELECT user_id, kind, {_TOPIC} AS topic, array_agg(id ORDER BY created_at, id) AS ids, "
            "array_agg(content ORDER BY created_at, id) AS contents FROM memories "
            "WHERE namespace = :ns AND status = 'active' AND NOT private AND kind = ANY(:kinds) "
            "AND importance <= :max_importance GROUP BY 1, 2, 3 HAVING count(*) >= :min_size "
            "ORDER BY 2, 3, 1"
        ),
        {
            **params,
            "kinds": list(config.cluster_kinds),
            "max_importance": config.cluster_max_importance,
            "min_size": config.cluster_min_size,
        },
    ).all()
    actions = []
    for group in groups:
        members = [
            (i, content)
            for i, sealed in zip(group.ids, group.contents, strict=True)
            if i not in removed
            # a damaged member (logged) stays as it is, out of the summary
            and (content := read_text(sealed, "memories.content", i)) != UNREADABLE
        ]
        if group.topic is None or len(members) < config.cluster_min_size:
            continue
        topic = group.topic.removeprefix("topic:")
        summary = f"{len(members)} {group.kind} notes on {topic}: " + "; ".join(
            c for _, c in members
        )
        actions.append(
            {
                "op": "compress",
                "ids": [i for i, _ in members],
                "kind": group.kind,
                "user_id": group.user_id,
                "tag": group.topic,
                # sealed like the memories it quotes when the plan is stored (`stored_plan`)
                "content": clip(summary, MAX_CONTENT_CHARS),
            }
        )
        removed.update(i for i, _ in members)
    return actions


_DECAY_TARGET = (
    "greatest(1, round(coalesce(CAST(details->>'importance_base' AS int), importance) * "
    f"power(0.5, extract(epoch FROM (CAST(:now AS timestamptz) - {RECENT})) / 86400.0 / "
    "CASE WHEN kind = ANY(CAST(:slow_decay AS text[])) THEN :decision_half_life "
    "ELSE :half_life END)))"
)


def _plan_decay(
    db: DbSession, params: dict[str, Any], config: MaintenanceConfig, removed: set[int]
) -> list[Action]:
    """Importance halves every half-life since last use (decisions slower), never below 1;
    computed from the original importance, so reruns and use restore rather than compound."""
    rows = db.execute(
        text(
            f"SELECT id, target FROM (SELECT id, importance, CAST({_DECAY_TARGET} AS int) AS target "
            "FROM memories WHERE namespace = :ns AND status = 'active') AS d "
            "WHERE target <> importance ORDER BY target, id"
        ),
        {
            **params,
            "half_life": config.half_life_days,
            "decision_half_life": config.decision_half_life_days,
        },
    ).all()
    by_target: dict[int, list[int]] = {}
    for row in rows:
        if row.id not in removed:
            by_target.setdefault(row.target, []).append(row.id)
    return [
        {"op": "decay", "to": target, "ids": chunk}
        for target, ids in sorted(by_target.items())
        for chunk in _chunks(ids, config.step_size)
    ]


def _plan_ids(
    db: DbSession, params: dict[str, Any], where: str, exclude: set[int], size: int
) -> Iterator[list[int]]:
    ids = db.scalars(
        text(f"SELECT id FROM memories WHERE namespace = :ns AND {where} ORDER BY id"), params
    ).all()
    yield from _chunks([i for i in ids if i not in exclude], size)


def plan(
    namespace: str, now: datetime | None = None, config: MaintenanceConfig | None = None
) -> list[Action]:
    """The diff a run would apply now: a list of small, JSON-able steps."""
    config = config or MaintenanceConfig()
    params: dict[str, Any] = {"ns": namespace, "now": now or datetime.now(UTC), **KIND_PARAMS}
    cutoffs = _cutoffs(params["now"], config)
    removed: set[int] = set()
    with session_scope() as db:
        db.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"))
        actions = _plan_claims(db, params, removed)
        actions += _plan_duplicates(db, params, config, removed)
        actions += _plan_clusters(db, params, config, removed)
        decay = _plan_decay(db, params, config, removed)
        decayed = {i for action in decay for i in action["ids"]}
        for reason, where in PRUNE_WHERE.items():
            exclude = removed | decayed if reason == "decayed" else set()
            cutoff = {**params, "cutoff": cutoffs[reason]}
            actions += [
                {"op": "prune", "reason": reason, "cutoff": cutoffs[reason].isoformat(), "ids": ids}
                for ids in _plan_ids(db, cutoff, where, exclude, config.step_size)
            ]
        actions += decay
        archive = (
            "status = 'active' AND kind = ANY(CAST(:archived_kinds AS text[])) "
            "AND created_at < :cutoff"
        )
        cutoff = {**params, "cutoff": cutoffs["archive"]}
        actions += [
            {"op": "archive", "ids": ids}
            for ids in _plan_ids(db, cutoff, archive, removed, config.step_size)
        ]
        actions += plan_expiry(db, namespace, params["now"], config.step_size)  # R80
    return [*actions, {"op": "memory_md", "path": str(memory_md_path(namespace))}]
