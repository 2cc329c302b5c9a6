"""Every message of a transcript tree stored exactly once: what the parsers find in the
complete lines of its files against the rows of `messages` and the sessions' counts."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import func, select

from continuum.store.engine import session_scope
from continuum.store.models import Message, Session
from continuum.sync import namespace_for
from continuum.transcripts import discover, parser_for, read_complete_lines

Key = tuple[str, str, str]  # (namespace, session id, message id)


def expected_keys(home: Path) -> set[Key]:
    """Every message the parsers find in the complete lines of every source."""
    keys: set[Key] = set()
    for source in discover(None, home).sources:
        parser = parser_for(source)
        result = parser.feed(read_complete_lines(source.path))
        session_id = parser.state.session_id or source.session_id
        assert session_id is not None
        namespace = namespace_for(source.instance)
        keys |= {(namespace, session_id, m.message_id) for m in result.messages}
    return keys


def stored_keys() -> list[Key]:
    with session_scope() as db:
        rows = db.execute(select(Message.namespace, Message.session_id, Message.message_id))
        return [(ns, sid, mid) for ns, sid, mid in rows]


def assert_exactly_once(home: Path) -> None:
    keys = stored_keys()
    assert len(keys) == len(set(keys))
    assert set(keys) == expected_keys(home)
    with session_scope() as db:
        counts = dict(
            db.execute(select(Message.session_id, func.count()).group_by(Message.session_id)).all()
        )
        sessions = {s.session_id: s.message_count for s in db.scalars(select(Session))}
    assert {sid: n for sid, n in sessions.items() if n} == counts
