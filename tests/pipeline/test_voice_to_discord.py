"""The story the product exists for, through real workers on the real broker: a user talks to
the assistant by voice, decides something, hangs up; ten minutes later in Discord the
assistant knows what was decided, has the call's summary, and sees the pending handoff."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from continuum.ephemeral.handoff import peek_handoff, send_handoff
from continuum.recall.context import context
from continuum.store.engine import session_scope
from continuum.store.models import Memory, Session
from tests.support.events import session_end, turn
from tests.support.wait import wait_for

CALL = [
    ("user", "Can we go over the garden renovation before the contractor calls?"),
    ("assistant", "Sure. You have two quotes: Greenline at 14,200 and Hoffmann at 12,800."),
    ("user", "Let's go with Hoffmann. Their quote is lower and they can start on December 2nd."),
    ("assistant", "Got it: Hoffmann Landscaping, starting December 2nd."),
    ("user", "I'm still waiting for Hoffmann to confirm whether the price includes drainage."),
    ("user", "I have to go, talk later on Discord."),
]


def finished(session_id: str) -> bool:
    with session_scope() as db:
        row = db.scalar(select(Session).where(Session.session_id == session_id))
        return bool(row and row.details.get("finished"))


def test_voice_decision_is_known_in_discord(
    db: Any, worker: Any, client: Any, tmp_path: Any, settings_env: Any
) -> None:
    settings_env(workspace_dir=str(tmp_path))
    for i, (role, text) in enumerate(CALL):
        client.emit(turn(text, role=role, message_id=f"v{i}", at=i * 15, session_id="voice-9"))
    send_handoff("pearl", "jason", "voice", "discord", "Chose Hoffmann; drainage open.")
    client.emit({**session_end(session_id="voice-9", at=95), "user_id": "jason",
                 "message_count": len(CALL)})  # fmt: skip
    wait_for(lambda: finished("voice-9"), timeout=60)
    activity = tmp_path / "pearl" / "activity-log.md"
    wait_for(activity.exists, timeout=30)  # the narrative queue's single consumer wrote it

    # Ten minutes later, a Discord session starts.
    with session_scope() as db:
        found = list(db.scalars(select(Memory).where(Memory.namespace == "pearl")))
    summaries = [m for m in found if m.kind == "conversation_summary"]
    assert len(summaries) == 1 and summaries[0].channel == "voice"
    assert any("Hoffmann" in d for d in summaries[0].details["key_decisions"])
    assert (
        [m.content for m in found if m.kind == "decision"]
        == [m.content for m in found if m.kind == "decision" and "Hoffmann" in m.content]
        != []
    )
    assert any(m.kind == "open_thread" and "drainage" in m.content for m in found)
    # What the Discord runtime injects at session start.
    block = context("pearl", "What did we decide?", 400, user_id="jason", channel="discord").block
    assert "Hoffmann" in block and "voice" in block.lower()
    assert "drainage" in block and "handoff" in block.lower()
    assert peek_handoff("pearl", "jason") is None  # read once: the Discord block consumed it
    assert "[voice] — Voice conversation (6 messages)" in activity.read_text()
