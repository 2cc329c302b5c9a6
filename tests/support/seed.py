"""Realistic rows for the API and Mission Control tests: two instances, sessions with their
messages and extracted memories, and cron reports, written straight to Postgres."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from continuum.store.engine import session_scope
from continuum.store.models import CronReport, Memory, Message, Session

T0 = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
CHATTER = [
    ("user", "Can you remind me what we decided about the garden renovation?"),
    ("assistant", "We decided to go with Hoffmann; they start on December 2nd."),
    ("user", "I prefer morning appointments, never after 4 pm."),
    ("assistant", "Noted: mornings only for appointments."),
]


def seed(namespace: str = "pearl", sessions: int = 3, turns: int = 20) -> None:
    """`sessions` sessions of `turns` messages each (one per minute, sessions a day apart),
    two memories per session and one cron report a day."""
    with session_scope() as db:
        for s in range(sessions):
            session_id = f"{namespace}-voice-{s}"
            start = T0 + timedelta(days=s)
            db.add(
                Session(
                    namespace=namespace,
                    session_id=session_id,
                    channel="voice",
                    user_id="jason",
                    started_at=start,
                    last_activity_at=start + timedelta(minutes=turns),
                    message_count=turns,
                )
            )
            for t in range(turns):
                role, content = CHATTER[t % len(CHATTER)]
                db.add(
                    Message(
                        namespace=namespace,
                        session_id=session_id,
                        message_id=f"m{t}",
                        role=role,
                        content=f"{content} (turn {t})",
                        channel="voice",
                        user_id="jason",
                        created_at=start + timedelta(minutes=t),
                    )
                )
            for k, (kind, content, importance) in enumerate(
                [
                    ("decision", f"Garden renovation goes to Hoffmann (session {s})", 9),
                    ("preference", f"Prefers morning appointments (session {s})", 7),
                ]
            ):
                db.add(
                    Memory(
                        namespace=namespace,
                        user_id="jason",
                        kind=kind,
                        key=f"{kind}-{s}",
                        content=content,
                        tags=[f"session:{session_id}", "topic:garden"],
                        importance=importance,
                        provenance="user_explicit",
                        session_id=session_id,
                        channel="voice",
                        source_message_ids=[f"m{k + 1}"],
                        idempotency_key=f"{session_id}-{k}",
                        created_at=start + timedelta(minutes=k + 1),
                    )
                )
            db.add(
                CronReport(
                    namespace=namespace,
                    cron_name="morning-brief" if s % 2 == 0 else "inbox-sweep",
                    session_id=f"{namespace}-cron-{s}",
                    summary=f"Daily report {s}: 3 new emails, weather sunny.",
                    event_at=start + timedelta(hours=1),
                )
            )
