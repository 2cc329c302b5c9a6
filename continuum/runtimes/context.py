"""The context block a runtime gives a session as it starts: what the recall plane returns
for the session's user and channel with no seed (nothing has been said yet), within
CONTEXT_MAX_TOKENS. The Claude Code SessionStart hook and the Pipecat helpers both inject it;
a handoff pending for the channel is in it and is consumed by it. The read plane loads only
when it is asked for.

A live session reads its block again when its memories change (`LiveBlock`, R43): the
handoff the first block consumed stays in the blocks read after it."""

from __future__ import annotations

CONTEXT_MAX_TOKENS = 800
HANDOFF_SECTION = "## Pending handoff"  # the block's heading of its handoff (recall.render)


def session_context(namespace: str, *, user_id: str | None, channel: str) -> str:
    """The context block for a new session of `user_id` on `channel` ("" when empty)."""
    from continuum.recall.context import context

    return context(namespace, "", CONTEXT_MAX_TOKENS, user_id=user_id, channel=channel).block


class LiveBlock:
    """The context block of one live session, read as often as its memories change. The
    first read consumes a handoff pending for the channel, as `session_context` does; later
    reads keep its line, under its heading after the block's header, since it can be read
    only once (a newer handoff shown by a later read replaces it). The kept section's tokens
    come out of the later reads' budget: every block stays within CONTEXT_MAX_TOKENS."""

    def __init__(self, namespace: str, *, user_id: str | None, channel: str) -> None:
        self.namespace = namespace
        self.user_id = user_id
        self.channel = channel
        self.handoff: str | None = None  # the line of the handoff shown, once one was

    def read(self) -> str:
        """The block as of now ("" when there is nothing to tell)."""
        from continuum.inference.tokenizer import count_block_tokens
        from continuum.recall.context import context

        kept = f"{HANDOFF_SECTION}\n{self.handoff}" if self.handoff is not None else ""
        budget = CONTEXT_MAX_TOKENS - count_block_tokens(kept)
        result = context(self.namespace, "", budget, user_id=self.user_id, channel=self.channel)
        shown = next((item.text for item in result.items if item.ref == "handoff"), None)
        if shown is not None or self.handoff is None:
            self.handoff = shown or self.handoff
            return result.block
        header, _, rest = result.block.partition("\n\n")
        if not header:
            return kept
        return f"{header}\n\n{kept}" + (f"\n\n{rest}" if rest else "")
