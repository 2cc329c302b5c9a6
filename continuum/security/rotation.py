"""Key rotation (R47), online: nothing stops while it runs.

- `rewrap`: every data key wrapped by another KEK is unwrapped (with one of
  `CONTINUUM_ENCRYPTION_OLD_KEYS`) and wrapped again under the current KEK, one key per
  transaction; readers unwrap with either meanwhile. Once it reports nothing left, the old
  KEK can be dropped from the configuration.
- `rotate_data`: a tenant's data keys are retired (new writes get new keys, created on first
  use; a process may keep sealing under a retired key for up to `OWNER_TTL_S`) and its rows
  are sealed again under the new keys, in batches of `batch` rows by id, table by table,
  each value bound to its row (values sealed before rows were bound, `enc1:`, are sealed
  again even under a current key), then the entries of its workspace files on this host.
  The
  position is saved with each batch in `system_state`, so an interrupted rotation (or one
  limited by `max_batches`) resumes where it stopped. Plaintext rows of a tenant that turned
  encryption on are sealed (and given keyed terms) on the way. Retired keys stay readable
  (Redis entries under them expire within hours); `destroy_retired` erases them after one
  more pass, refused while a rotation is under way or within `OWNER_TTL_S` of a retirement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Text, func, null, select, type_coerce, update
from sqlalchemy.dialects.postgresql import JSONB, insert
from sqlalchemy.orm import Session as DbSession

from continuum.config import ConfigError, get_settings
from continuum.pipeline.narrative import rewrite_locked, workspace_file
from continuum.sealing.entries import ENTRY_KIND, seal_entry
from continuum.sealing.envelope import (
    MESSAGE_DETAILS_KIND,
    PLAIN_DETAILS,
    SEALED_JSON,
    is_legacy,
    key_id_of,
    open_details,
    open_text,
    seal,
    seal_details,
)
from continuum.sealing.keys import (
    OWNER_TTL_S,
    current_kek,
    identity,
    kek_id,
    keyring,
    unwrap,
    wrap,
)
from continuum.sealing.terms import terms_for
from continuum.security.forget import workspace_files
from continuum.store.engine import session_scope
from continuum.store.models import (
    CronReport,
    DataKey,
    Memory,
    Message,
    SystemState,
    UserTask,
    is_sealed,
)


@dataclass
class RewrapReport:
    rewrapped: int = 0
    current: int = 0
    destroyed: int = 0


def rewrap() -> RewrapReport:
    """Wrap every live data key under the current KEK."""
    kek = current_kek()
    current = kek_id(kek)
    report = RewrapReport()
    with session_scope() as db:
        ids = list(db.scalars(select(DataKey.id).order_by(DataKey.id)))
    for key_id in ids:
        with session_scope() as db:
            row = db.scalar(select(DataKey).where(DataKey.id == key_id).with_for_update())
            if row is None or row.wrapped is None:
                report.destroyed += 1
                continue
            if row.kek_id == current:
                report.current += 1
                continue
            own = identity(row.namespace, row.user_id, row.purpose, row.version)
            row.wrapped = wrap(kek, unwrap(row), own)
            row.kek_id = current
            report.rewrapped += 1
    keyring.clear()
    return report


@dataclass(frozen=True)
class _Column:
    name: str
    kind: str
    deterministic: bool = False


@dataclass(frozen=True)
class _Table:
    model: Any
    columns: tuple[_Column, ...]
    terms: Callable[[dict[str, Any]], str] | None = None  # the text its keyed terms are made of
    details: str | None = None  # the kind of its sealed details, if it has them
    plain: frozenset[str] = PLAIN_DETAILS  # the keys of its details that stay plain
    row: str = "id"  # what its seals are bound to: its id, or its unique key where upserted


TABLES = (
    _Table(
        Message,
        (_Column("content", "messages.content"),),
        lambda row: row["content"],
        details=MESSAGE_DETAILS_KIND,
        plain=frozenset(),
    ),
    _Table(
        Memory,
        (
            _Column("content", "memories.content"),
            _Column("claim_value", "memories.claim_value"),
        ),
        lambda row: f"{row['key'] or ''} {row['content']}",
        details="memories.details",
    ),
    _Table(
        UserTask, (_Column("title", "tasks.title"), _Column("description", "tasks.description"))
    ),
    _Table(
        CronReport,
        (_Column("summary", "cron_reports.summary", deterministic=True),),
        lambda row: row["summary"],
        row="session_id",
    ),
)
STATE_KEY = "key-rotation:{namespace}"


@dataclass
class RotationReport:
    namespace: str
    retired_keys: list[int]
    resealed: dict[str, int] = field(default_factory=dict)
    done: bool = False
    destroyed: int = 0


def _stale(value: str | None, retired: set[int]) -> bool:
    """Whether `value` must be sealed again: plaintext, sealed under a retired key, or
    sealed before rows were bound."""
    if value is None:
        return False
    key_id = key_id_of(value)
    return key_id is None or key_id in retired or is_legacy(value)


def _resealed(
    db: DbSession, table: _Table, row: dict[str, Any], retired: set[int]
) -> dict[str, Any]:
    """The new values of a row (raw, as stored) whose seals are stale; empty if none is."""
    namespace, user, bound = row["namespace"], row["user_id"], row[table.row]
    changes: dict[str, Any] = {}
    opened = dict(row)
    for column in table.columns:
        value = row[column.name]
        if value is None:
            continue
        opened[column.name] = open_text(value, column.kind, bound)
        if _stale(value, retired):
            changes[column.name] = seal(
                namespace,
                user,
                column.kind,
                opened[column.name],
                bound,
                deterministic=column.deterministic,
            )
    details = row.get("details")
    if table.details is not None and isinstance(details, dict):
        sealed = details.get(SEALED_JSON) if is_sealed(details.get(SEALED_JSON)) else None
        if sealed is None or _stale(sealed, retired):
            plain = open_details(details, table.details, bound) if sealed is not None else details
            again = seal_details(
                namespace, user, plain, bound, kind=table.details, plain=table.plain
            )
            if again != details:
                changes["details"] = again
    first = table.columns[0].name
    if table.terms is not None and key_id_of(row[first]) is None and first in changes:
        changes["tsv_keyed"] = terms_for(db, namespace, [table.terms(opened)])[0]
    return changes


def _reseal_entries(namespace: str, retired: set[int]) -> int:
    """Seal again, under their owner's current key, the workspace entries of the tenant (on
    this host) sealed under a retired key; returns how many."""
    resealed = 0
    for path in workspace_files(namespace):
        file = workspace_file(namespace, path)

        def again(text: str, file: str = file) -> str:
            nonlocal resealed
            lines = text.splitlines(keepends=True)
            for i, line in enumerate(lines):
                key_id = key_id_of(line.strip()) if is_sealed(line) else None
                if key_id is not None and key_id in retired:
                    owner = keyring.by_id(key_id).user_id
                    plain = open_text(line.rstrip("\n"), ENTRY_KIND, file)
                    lines[i] = seal_entry(namespace, owner, file, plain)
                    resealed += 1
            return "".join(lines)

        rewrite_locked(path, again)
    return resealed


def _retire(namespace: str) -> list[int]:
    with session_scope() as db:
        retired = db.scalars(
            update(DataKey)
            .where(
                DataKey.namespace == namespace,
                DataKey.purpose == "data",
                DataKey.retired_at.is_(None),
            )
            .values(retired_at=func.now())
            .returning(DataKey.id)
        )
        ids = sorted(retired)
    keyring.forget(namespace)
    return ids


def _save(db: DbSession, namespace: str, state: dict[str, Any] | None) -> None:
    name = STATE_KEY.format(namespace=namespace)
    if state is None:
        db.query(SystemState).filter(SystemState.key == name).delete()
        return
    stmt = insert(SystemState).values(key=name, value=state)
    db.execute(
        stmt.on_conflict_do_update(
            index_elements=["key"], set_={"value": state, "updated_at": func.now()}
        )
    )


def _retired(namespace: str) -> set[int]:
    """Every retired data key of the tenant not destroyed yet (of this rotation or earlier)."""
    with session_scope() as db:
        return set(
            db.scalars(
                select(DataKey.id).where(
                    DataKey.namespace == namespace,
                    DataKey.purpose == "data",
                    DataKey.retired_at.is_not(None),
                    DataKey.wrapped.is_not(None),
                )
            )
        )


def _pass(
    namespace: str,
    state: dict[str, Any],
    retired: set[int],
    report: RotationReport,
    *,
    batch: int,
    max_batches: int | None,
    saved: bool,
) -> bool:
    """Seal again every row of the tenant from `state`'s position whose seal is stale, one
    batch per transaction (saving the position with it when `saved`); True once done."""
    batches = 0
    while state["table"] < len(TABLES):
        if max_batches is not None and batches >= max_batches:
            return False
        table = TABLES[state["table"]]
        model = table.model
        raw = [type_coerce(getattr(model, c.name), Text).label(c.name) for c in table.columns]
        extra: list[Any] = [getattr(model, table.row)] if table.row != "id" else []
        if table.details is not None:  # read raw, as the values are
            extra.append(type_coerce(model.details, JSONB).label("details"))
        if model is Memory:  # the key its terms are made with
            extra.append(model.key)
        owner = getattr(model, "user_id", type_coerce(null(), Text).label("user_id"))
        with session_scope() as db:
            rows = (
                db.execute(
                    select(model.id, model.namespace, owner, *raw, *extra)
                    .where(model.namespace == namespace, model.id > state["after"])
                    .order_by(model.id)
                    .limit(batch)
                    .with_for_update()
                )
                .mappings()
                .all()
            )
            for row in rows:
                changes = _resealed(db, table, dict(row), retired)
                if changes:
                    db.execute(
                        update(model.__table__)
                        .where(model.namespace == namespace, model.id == row["id"])
                        .values(**changes)
                    )
                    name = model.__tablename__
                    report.resealed[name] = report.resealed.get(name, 0) + 1
            if len(rows) < batch:
                state = {**state, "table": state["table"] + 1, "after": 0}
            else:
                state = {**state, "after": rows[-1]["id"]}
            if saved:
                _save(db, namespace, state if state["table"] < len(TABLES) else None)
        batches += 1
    if entries := _reseal_entries(namespace, retired):  # the workspace's, once the rows are
        report.resealed["workspace_files"] = entries
    return True


def rotate_data(
    namespace: str, *, batch: int = 500, max_batches: int | None = None
) -> RotationReport:
    """Retire the tenant's data keys (unless a rotation is under way: it resumes) and seal
    its rows again under new ones; stops after `max_batches` batches if given. Rows still
    under a key an earlier rotation retired are sealed again too."""
    if not get_settings().is_encrypted(namespace):
        raise ConfigError(f"{namespace!r} is not encrypted (CONTINUUM_ENCRYPTION_TENANTS)")
    with session_scope() as db:
        stored = db.get(SystemState, STATE_KEY.format(namespace=namespace))
        state: dict[str, Any] = dict(stored.value) if stored else {}
    if not state:
        state = {"retired": _retire(namespace), "table": 0, "after": 0}
        with session_scope() as db:
            _save(db, namespace, state)
    report = RotationReport(namespace, state["retired"])
    report.done = _pass(
        namespace,
        state,
        _retired(namespace),
        report,
        batch=batch,
        max_batches=max_batches,
        saved=True,
    )
    return report


def destroy_retired(namespace: str, *, batch: int = 500) -> RotationReport:
    """Erase the tenant's retired data keys, after one more pass sealing again any row still
    under one. Refused while a rotation is under way, or within `OWNER_TTL_S` of the last
    retirement (a process may still be sealing under a key it retired)."""
    with session_scope() as db:
        if db.get(SystemState, STATE_KEY.format(namespace=namespace)) is not None:
            raise ConfigError(f"a data-key rotation of {namespace!r} is still under way")
        settling = func.now() - func.make_interval(0, 0, 0, 0, 0, 0, OWNER_TTL_S)
        recent = db.scalar(
            select(func.count()).where(
                DataKey.namespace == namespace,
                DataKey.destroyed_at.is_(None),
                DataKey.retired_at > settling,
            )
        )
    if recent:
        raise ConfigError(
            f"keys of {namespace!r} were retired less than {OWNER_TTL_S:.0f} s ago: "
            "a process may still seal under them; try again shortly"
        )
    retired = _retired(namespace)
    report = RotationReport(namespace, sorted(retired))
    report.done = _pass(
        namespace,
        {"table": 0, "after": 0},
        retired,
        report,
        batch=batch,
        max_batches=None,
        saved=False,
    )
    with session_scope() as db:
        db.execute(
            update(DataKey)
            .where(DataKey.id.in_(retired))
            .values(wrapped=None, destroyed_at=func.now())
        )
    keyring.forget(namespace)
    report.destroyed = len(retired)
    return report
