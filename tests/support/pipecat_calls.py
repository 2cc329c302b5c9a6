"""A Pipecat call as the observer sees it: frames as Pipecat's STT and LLM services push them,
run through a real pipeline with Pipecat's own test utilities (no audio), and what landed."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from pipecat.frames.frames import (
    Frame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    TranscriptionFrame,
)
from pipecat.processors.filters.identity_filter import IdentityFilter
from pipecat.tests.utils import run_test
from pipecat.utils.time import time_now_iso8601
from sqlalchemy import select

from continuum.runtimes.pipecat import ContinuumObserver
from continuum.store.engine import session_scope
from continuum.store.models import Message, Session

PARTICIPANT = "participant-7"  # the transport's id of the caller, not Continuum's user id


def heard(text: str) -> TranscriptionFrame:
    """A final transcription as an STT service pushes it."""
    return TranscriptionFrame(text, PARTICIPANT, time_now_iso8601())


def answer(*tokens: str) -> list[Frame]:
    """An LLM response as an LLM service streams it."""
    return [LLMFullResponseStartFrame(), *(LLMTextFrame(t) for t in tokens),
            LLMFullResponseEndFrame()]  # fmt: skip


def call(observer: ContinuumObserver, frames: Sequence[Frame]) -> None:
    """Run the frames, the last an EndFrame or CancelFrame, through a pipeline the observer
    watches; returns once the pipeline and the observer are done."""
    down, _ = asyncio.run(run_test(IdentityFilter(), frames_to_send=frames,
                                   observers=[observer], send_end_frame=False))  # fmt: skip
    assert type(down[-1]) is type(frames[-1])  # every frame went through: nothing held them


def stored(namespace: str, session_id: str) -> list[tuple[str, str, str, str | None, Any]]:
    """(role, content, message id, user id, details) of the call's stored turns, in order."""
    with session_scope() as s:
        rows = s.execute(select(Message.role, Message.content, Message.message_id,
                                Message.user_id, Message.details)
                         .where(Message.namespace == namespace, Message.session_id == session_id,
                                Message.channel == "voice")
                         .order_by(Message.created_at)).all()  # fmt: skip
    return [tuple(row) for row in rows]


def ended(namespace: str, session_id: str) -> tuple[str | None, str] | None:
    """(end reason, why session end did or did not extract) once the session is finished."""
    with session_scope() as s:
        row = s.scalar(select(Session).where(Session.namespace == namespace,
                                             Session.session_id == session_id))  # fmt: skip
        if row is None or not row.details.get("finished"):
            return None
        return row.end_reason, row.details["reason"]
