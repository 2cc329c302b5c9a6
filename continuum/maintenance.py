"""Weekly maintenance (R30): merge near-duplicates, settle contradictions, compress clusters,
decay importance, prune, archive old summaries and distil `MEMORY.md` — one tenant at a time.

A run first *plans*: it reads one snapshot and produces a list of small steps (the diff),
each naming the rows it touches. `--dry-run` prints that plan and changes nothing; a real
run stores the same plan in `maintenance_runs` and applies it step by step, each step in its
own transaction together with the progress counter — so an interrupted run resumes at the
next step, and every step re-checks its preconditions (a row changed since is left alone).
A tenant runs at most once per ISO week (unless forced), under a Redis lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, get_args

import redis
from sqlalchemy import select, text
from sqlalchemy.orm import Session as DbSession

from continuum.domain.kinds import MemoryKind, MemoryMdSection, kind_names
from continuum.domain.memory import DIGEST_KINDS, MAX_CONTENT_CHARS, MemoryCandidate
from continuum.domain.text import clip
from continuum.memory.claims import (
    CLAIM_COLUMNS,
    ClaimState,
    decide,
    quarantine,
    reinforce,
    supersede,
)
from continuum.memory.user_tasks import tasks_query
from continuum.memory.writer import WriteContext, store_memories
from continuum.pipeline.narrative import workspace
from continuum.redis_client import get_redis
from continuum.sealing.envelope import UNREADABLE, open_text, read_text, seal
from continuum.store.engine import session_scope
from continuum.store.models import MaintenanceRun, MemoryLog

Action = dict[str, Any]
LOCK_KEY = "continuum:maintenance:lock:{namespace}"
TRIGGER = "maintenance"


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


# -- planning ------------------------------------------------------------------------
_RECENT = (
    "greatest(created_at, coalesce(last_accessed_at, created_at), "
    "coalesce(CAST(details->>'last_confirmed' AS timestamptz), created_at))"
)
# The per-kind rules of the registry, bound as parameters of the queries below.
KIND_PARAMS = {
    "decay_kept": list(kind_names(lambda spec: not spec.pruned_when_decayed)),
    "slow_decay": list(kind_names(lambda spec: spec.slow_decay)),
    "archived_kinds": list(kind_names(lambda spec: spec.archived_when_old)),
}
# Which rows each prune reason removes; planning selects with it, applying re-checks it.
PRUNE_WHERE = {
    "forgotten": "status = 'forgotten' AND updated_at < :cutoff",
    "superseded": "status IN ('superseded', 'merged') AND updated_at < :cutoff",
    "decayed": "status = 'active' AND importance <= 1 "
    f"AND kind <> ALL(CAST(:decay_kept AS text[])) AND {_RECENT} < :cutoff",
}
_TOPIC = "(SELECT t FROM unnest(tags) AS t WHERE t LIKE 'topic:%' LIMIT 1)"
_GROUP = f"coalesce('key:' || lower(key), {_TOPIC}, '')"

PLAN_KIND = "maintenance_runs.plan"


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
    when keyless); claims are left to `_plan_claims`, since 3 and 4 grandchildren embed alike."""
    pairs = db.execute(
        text(
            f"WITH c AS MATERIALIZED (SELECT id, coalesce(user_id, '') AS u, kind, {_GROUP} AS g, "
            "embedding, trust, corroboration, created_at FROM memories WHERE namespace = :ns "
            "AND status = 'active' AND embedding IS NOT NULL AND claim_predicate IS NULL "
            "AND NOT private AND kind <> ALL(:digests)) "
            "SELECT a.id AS a, b.id AS b FROM c AS a JOIN c AS b ON a.u = b.u AND a.kind = b.kind "
            "AND a.g = b.g AND a.id < b.id WHERE (a.embedding <=> b.embedding) <= :max_distance"
        ),
        {
            **params,
            "digests": sorted(DIGEST_KINDS),
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
            text("SELECT id, trust, corroboration, created_at FROM memories WHERE id = ANY(:ids)"),
            {"ids": list(parent)},
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
            and (content := read_text(sealed, "memories.content")) != UNREADABLE
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
                # the plan is stored (maintenance_runs): sealed like the memories it quotes
                "content": seal(
                    params["ns"], group.user_id, PLAN_KIND, clip(summary, MAX_CONTENT_CHARS)
                ),
            }
        )
        removed.update(i for i, _ in members)
    return actions


_DECAY_TARGET = (
    "greatest(1, round(coalesce(CAST(details->>'importance_base' AS int), importance) * "
    f"power(0.5, extract(epoch FROM (CAST(:now AS timestamptz) - {_RECENT})) / 86400.0 / "
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
    return [*actions, {"op": "memory_md", "path": str(memory_md_path(namespace))}]


# -- applying ------------------------------------------------------------------------
def _compress(db: DbSession, namespace: str, action: Action) -> int:
    sources = db.scalars(
        text(
            "SELECT DISTINCT s FROM memories, unnest(source_message_ids) AS s "
            "WHERE id = ANY(:ids) AND status = 'active' ORDER BY s"
        ),
        {"ids": action["ids"]},
    ).all()
    kind: MemoryKind = action["kind"]
    candidate = MemoryCandidate(
        kind=kind,
        content=open_text(action["content"], PLAN_KIND),
        tags=[action["tag"], "source:system"],
        importance=5,
        confidence=0.8,
        provenance="system",
        source_message_ids=list(sources) or [f"memory:{i}" for i in action["ids"]],
        trigger="compress",
        details={"compressed": action["ids"]},
    )
    ctx = WriteContext(namespace, user_id=action["user_id"])
    # The summary is no observation itself: its corroboration is its members'.
    stored = store_memories(db, [(ctx, candidate)], {"corroboration": 0})
    if not stored:
        return 0
    reinforce(db, stored[0].id, action["ids"], TRIGGER)
    return len(action["ids"])


def _update_ids(db: DbSession, sql: str, params: dict[str, Any]) -> int:
    return int(db.execute(text(sql), params).rowcount or 0)  # type: ignore[attr-defined]


def _prune(db: DbSession, namespace: str, action: Action) -> int:
    """Delete rows for good: their vectors go with them, log entries keep only ids, and a
    forgotten memory's tasks and Redis traces go too."""
    reason = action["reason"]
    params = {
        "ids": action["ids"],
        "cutoff": datetime.fromisoformat(action["cutoff"]),
        **KIND_PARAMS,
    }
    ids = db.scalars(
        text(f"SELECT id FROM memories WHERE id = ANY(:ids) AND {PRUNE_WHERE[reason]} FOR UPDATE"),
        params,
    ).all()
    if not ids:
        return 0
    db.execute(
        text(
            "UPDATE memory_log SET details = coalesce((SELECT jsonb_object_agg(k, v) FROM "
            "jsonb_each(details) AS e(k, v) WHERE k ~ '(^|_)ids?$'), '{}') || '{\"purged\": true}' "
            "WHERE namespace = :ns AND memory_id = ANY(:ids)"
        ),
        {"ns": namespace, "ids": list(ids)},
    )
    if reason == "forgotten":
        db.execute(
            text("DELETE FROM tasks WHERE namespace = :ns AND tags && :tags"),
            {"ns": namespace, "tags": [f"memory:{i}" for i in ids]},
        )
        purge_redis(namespace, ids)
    return _update_ids(db, "DELETE FROM memories WHERE id = ANY(:ids)", {"ids": list(ids)})


def purge_redis(namespace: str, ids: Sequence[int]) -> int:
    """Remove Redis traces of memories: keys named `…memory:<id>…` under the tenant's prefix
    and the ids as members of its sets and sorted sets. Returns keys touched."""
    client = get_redis()
    members = [str(i) for i in ids]
    names = [f"memory:{i}" for i in ids]
    touched = 0
    for key in client.scan_iter(match=f"continuum:{namespace}:*", count=1000):
        if any(key.endswith(n) or f"{n}:" in key for n in names):
            touched += 1
            client.delete(key)
            continue
        kind = client.type(key)
        if kind == "set":
            touched += bool(client.srem(key, *members))
        elif kind == "zset":
            touched += bool(client.zrem(key, *members))
    return touched


def apply_step(db: DbSession, namespace: str, action: Action, config: MaintenanceConfig) -> int:
    """Apply one planned step in the caller's transaction; returns rows it changed."""
    op = action["op"]
    if op == "merge":
        return len(action["ids"]) if reinforce(db, action["keep"], action["ids"], TRIGGER) else 0
    if op == "supersede":
        return int(supersede(db, action["id"], action["by"], TRIGGER))
    if op == "quarantine":
        return int(quarantine(db, action["id"], action["conflicts_with"], TRIGGER))
    if op == "compress":
        return _compress(db, namespace, action)
    if op == "decay":
        return _update_ids(
            db,
            "UPDATE memories SET importance = :to, details = details || jsonb_build_object("
            "'importance_base', coalesce(CAST(details->>'importance_base' AS int), importance)) "
            "WHERE id = ANY(:ids) AND status = 'active'",
            {"to": action["to"], "ids": action["ids"]},
        )
    if op == "prune":
        return _prune(db, namespace, action)
    if op == "archive":
        return _update_ids(
            db,
            "UPDATE memories SET status = 'archived', updated_at = now() "
            "WHERE id = ANY(:ids) AND status = 'active'",
            {"ids": action["ids"]},
        )
    if op == "memory_md":
        return write_memory_md(db, namespace, Path(action["path"]), config.memory_md_items)
    raise ValueError(f"unknown maintenance step {op!r}")


def planned_count(action: Action) -> int:
    return len(action.get("ids", ())) or 1


# -- MEMORY.md -----------------------------------------------------------------------
def _md_kinds(title: MemoryMdSection) -> tuple[MemoryKind, ...]:
    return kind_names(lambda spec: spec.memory_md == title)


MD_SECTIONS = tuple((title, _md_kinds(title)) for title in get_args(MemoryMdSection))


def memory_md_path(namespace: str) -> Path:
    return workspace(namespace) / "MEMORY.md"


def render_memory_md(db: DbSession, namespace: str, items: int) -> str:
    """The curated narrative file: the most important active, non-private memories."""
    lines = [f"# MEMORY — {namespace}", "", "Distilled by Continuum maintenance; private "
             "memories are never included. Regenerated weekly — edit memories, not this file."]  # fmt: skip
    for title, kinds in MD_SECTIONS:
        rows = db.execute(
            text(
                "SELECT content, corroboration, created_at FROM memories WHERE namespace = :ns "
                "AND status = 'active' AND NOT private AND kind = ANY(CAST(:kinds AS text[])) "
                "ORDER BY importance DESC, corroboration DESC, created_at DESC, id LIMIT :n"
            ),
            {"ns": namespace, "n": items, "kinds": list(kinds)},
        ).all()
        lines += ["", f"## {title}", ""]
        lines += [
            f"- {read_text(r.content, 'memories.content')} ({r.created_at:%Y-%m-%d}"
            + (f", confirmed {r.corroboration}×)" if r.corroboration > 1 else ")")
            for r in rows
        ] or ["- (none)"]
    tasks = [task.title for task in db.scalars(tasks_query(namespace, limit=items))]
    lines += ["", "## Active tasks", "", *([f"- [ ] {t}" for t in tasks] or ["- (none)"])]
    return "\n".join(lines) + "\n"


def write_memory_md(db: DbSession, namespace: str, path: Path, items: int) -> int:
    """Write MEMORY.md atomically (temp file + rename): readers never see half a file."""
    content = render_memory_md(db, namespace, items)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(content, encoding="utf-8")
    os.replace(temp, path)
    return 1


# -- runs ----------------------------------------------------------------------------
@dataclass
class RunReport:
    namespace: str
    week: str
    status: str  # done | skipped | locked | dry_run | interrupted
    attempt: int = 0
    plan: list[Action] = field(default_factory=list)
    planned: dict[str, int] = field(default_factory=dict)
    applied: dict[str, int] = field(default_factory=dict)
    steps_applied: int = 0
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "plan"}


def iso_week(moment: datetime) -> str:
    year, week, _ = moment.isocalendar()
    return f"{year}-W{week:02d}"


def _step_name(action: Action) -> str:
    """What a step counts under in a report: its op, and a prune's reason."""
    return action["op"] + (f":{action['reason']}" if "reason" in action else "")


def _tally(actions: Sequence[Action]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for action in actions:
        name = _step_name(action)
        counts[name] = counts.get(name, 0) + planned_count(action)
    return counts


def _start(
    namespace: str, week: str, force: bool, now: datetime, config: MaintenanceConfig
) -> MaintenanceRun | None:
    """The run to work on: an unfinished one (resume), a new one, or None (done this week)."""
    with session_scope() as db:
        last = db.scalars(
            select(MaintenanceRun)
            .where(MaintenanceRun.namespace == namespace, MaintenanceRun.week == week)
            .order_by(MaintenanceRun.attempt.desc())
            .limit(1)
        ).first()
        if last is not None and last.status == "running":
            return last
        if last is not None and not force:
            return None
    steps = plan(namespace, now, config)
    with session_scope() as db:
        run = MaintenanceRun(
            namespace=namespace,
            week=week,
            attempt=(last.attempt + 1) if last is not None else 1,
            plan=steps,
            report={"planned": _tally(steps), "applied": {}},
        )
        db.add(run)
        db.flush()
        db.refresh(run)
        return run


def maintain(
    namespace: str,
    *,
    dry_run: bool = False,
    force: bool = False,
    now: datetime | None = None,
    config: MaintenanceConfig | None = None,
    max_steps: int | None = None,
) -> RunReport:
    """Run (or with `dry_run`, only plan) this week's maintenance of one tenant.
    `max_steps` stops early as an interruption would; the next call resumes."""
    config = config or MaintenanceConfig()
    now = now or datetime.now(UTC)
    week = iso_week(now)
    started = time.monotonic()
    if dry_run:
        steps = plan(namespace, now, config)
        return RunReport(namespace, week, "dry_run", plan=steps, planned=_tally(steps))
    lock = get_redis().lock(
        LOCK_KEY.format(namespace=namespace), timeout=config.lock_ttl_s, blocking=False
    )
    if not lock.acquire():
        return RunReport(namespace, week, "locked")
    try:
        run = _start(namespace, week, force, now, config)
        if run is None:
            return RunReport(namespace, week, "skipped")
        report = _apply(run, config, max_steps)
    finally:
        with contextlib.suppress(redis.exceptions.LockError):  # expired: nothing to release
            lock.release()
    report.seconds = round(time.monotonic() - started, 3)
    return report


def _apply(run: MaintenanceRun, config: MaintenanceConfig, max_steps: int | None) -> RunReport:
    applied: dict[str, int] = dict(run.report.get("applied", {}))
    position = run.applied
    end = len(run.plan) if max_steps is None else min(len(run.plan), position + max_steps)
    for index in range(position, end):
        action = run.plan[index]
        with session_scope() as db:
            changed = apply_step(db, run.namespace, action, config)
            name = _step_name(action)
            applied[name] = applied.get(name, 0) + changed
            progress = db.execute(
                text(
                    "UPDATE maintenance_runs SET applied = :next, report = jsonb_set(report, "
                    "'{applied}', CAST(:applied AS jsonb)) WHERE id = :id AND applied = :index"
                ),
                {"next": index + 1, "index": index, "id": run.id, "applied": json.dumps(applied)},
            )
            if not progress.rowcount:  # type: ignore[attr-defined]
                raise RuntimeError(f"maintenance run {run.id} advanced elsewhere; stopping")
        position = index + 1
    status = "done" if position == len(run.plan) else "interrupted"
    if status == "done":
        with session_scope() as db:
            db.execute(
                text(
                    "UPDATE maintenance_runs SET status = 'done', finished_at = now() WHERE id = :id"
                ),
                {"id": run.id},
            )
            db.add(
                MemoryLog(
                    namespace=run.namespace,
                    action="maintenance",
                    trigger=TRIGGER,
                    details={"run_id": run.id, "week": run.week, **run.report, "applied": applied},
                )
            )
    return RunReport(
        run.namespace,
        run.week,
        status,
        attempt=run.attempt,
        plan=run.plan,
        planned=run.report.get("planned", {}),
        applied=applied,
        steps_applied=position,
    )


def namespaces() -> list[str]:
    with session_scope() as db:
        return list(db.scalars(text("SELECT DISTINCT namespace FROM memories ORDER BY 1")))


def run_maintenance(
    namespace: str | None = None,
    *,
    dry_run: bool = False,
    force: bool = False,
    config: MaintenanceConfig | None = None,
) -> list[RunReport]:
    """Maintain one tenant, or every tenant that has memories."""
    targets = [namespace] if namespace else namespaces()
    return [maintain(ns, dry_run=dry_run, force=force, config=config) for ns in targets]
