"""The context block a runtime gives a session as it starts: what the recall plane returns
for the session's user and channel with no seed (nothing has been said yet), within
CONTEXT_MAX_TOKENS. The Claude Code SessionStart hook and the Pipecat helpers both inject it;
a handoff pending for the channel is in it and is consumed by it. The read plane loads only
when it is asked for."""

from __future__ import annotations

CONTEXT_MAX_TOKENS = 800


def session_context(namespace: str, *, user_id: str | None, channel: str) -> str:
    """The context block for a new session of `user_id` on `channel` ("" when empty)."""
    from continuum.recall.context import context

    return context(namespace, "", CONTEXT_MAX_TOKENS, user_id=user_id, channel=channel).block
