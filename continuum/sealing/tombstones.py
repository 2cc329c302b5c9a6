"""Tombstones of forgotten users: `continuum forget` records one before it deletes anything,
and writers of a user's rows check it, so a row arriving while (or after) a forget runs is
refused.

The check and the tombstone meet on a transaction-level advisory lock per (tenant, user):
a writer holds it shared from its check to its commit, the forget takes it exclusively to
record the tombstone. So either the writer commits first (and the forget, waiting on the
lock, then deletes what it wrote) or the forget does (and the writer sees the tombstone).
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select, text
from sqlalchemy.orm import Session as DbSession

from continuum.store.models import ForgetTombstone


class UserForgotten(RuntimeError):
    """The user was forgotten (`continuum forget`): nothing of theirs is stored again."""


def forgotten_users(db: DbSession, namespace: str, user_ids: Iterable[str | None]) -> set[str]:
    """Which of `user_ids` of `namespace` have a tombstone."""
    wanted = sorted({user for user in user_ids if user})
    if not wanted:
        return set()
    rows = db.scalars(
        select(ForgetTombstone.user_id).where(
            ForgetTombstone.namespace == namespace, ForgetTombstone.user_id.in_(wanted)
        )
    )
    return set(rows)


_LOCK = "pg_advisory_xact_lock{mode}(hashtextextended(:ns || chr(31) || :uid, 47))"


def lock_user(db: DbSession, namespace: str, user_id: str, *, exclusive: bool) -> None:
    """Take the (tenant, user) forget lock until the caller's transaction ends."""
    sql = "SELECT " + _LOCK.format(mode="" if exclusive else "_shared")
    db.execute(text(sql), {"ns": namespace, "uid": user_id})


_GUARD_LOCKS = (
    "SELECT " + _LOCK.format(mode="_shared").replace(":uid", "u")
    + " FROM (SELECT u FROM unnest(CAST(:uids AS text[])) AS u ORDER BY u) AS users"
)  # fmt: skip


def guard_users(db: DbSession, namespace: str, user_ids: Iterable[str | None]) -> set[str]:
    """Hold the forget lock of each of `user_ids` shared and return those forgotten (their
    rows must not be written). The locks are taken in one statement, in a fixed order (no
    deadlock with another writer), and the tombstones read in the next, so its snapshot is
    taken once the locks are held. A user already guarded in this transaction is not asked
    again: the lock held since keeps the answer true."""
    transaction = db.get_transaction()
    if db.info.get("guarded_in") is not transaction:
        db.info.update(guarded_in=transaction, guarded={})
    guarded: dict[tuple[str, str], bool] = db.info["guarded"]
    wanted = sorted({user for user in user_ids if user})
    new = [user for user in wanted if (namespace, user) not in guarded]
    if new:
        db.execute(text(_GUARD_LOCKS), {"ns": namespace, "uids": new})
        gone = forgotten_users(db, namespace, new)
        guarded.update({(namespace, user): user in gone for user in new})
    return {user for user in wanted if guarded[(namespace, user)]}
