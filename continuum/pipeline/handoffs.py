"""Handoffs through the LLM (R5), when one is configured: a follow-up of ingest on the
`extract` queue.

Ingest sends the rule's handoff at once (`continuum.capture.handoffs`: precise, no wait on an
LLM) and, with an LLM configured, asks for this follow-up for every fresh user turn that
either announced a move by the rule or names another known channel (`mentioned_channel`: the
phrasings the rule leaves out, "let's take this to Telegram"). The follow-up reads the
session's last turns up to that one (Postgres, or the Redis transcript buffer for a tenant
in privacy mode: the task message carries ids, never text) and asks the `handoff` prompt:

- a move the rule found gets the LLM's summary (and its target, if it names one) in place,
  while the handoff is still pending; one already read stays read;
- a move only the LLM found is sent then, once (its id is the turn's event id, as the rule's);
- no answer (the endpoint down or slow, an invalid answer, the tenant's token budget spent)
  falls back to the rule: its handoff stands as sent, and a turn it did not match sends none.
  The handoff lives 10 minutes, so a failed call is not retried.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from continuum.domain.text import channel_family
from continuum.ephemeral.handoff import revise_handoff, send_handoff
from continuum.ephemeral.keys import HANDOFF_TTL_S
from continuum.inference.llm import LLMError, OpenAICompatibleLLM
from continuum.inference.prompts import handoff
from continuum.inference.prompts.base import numbered_lines
from continuum.pipeline.sessions import session_turns
from continuum.store.engine import session_scope

CONTEXT_TURNS = 12  # the turns up to the announcing one the LLM reads


@dataclass
class HandoffResult:
    # revised | sent | kept (the rule's stands) | none | fallback | skipped
    status: str
    reason: str = ""
    to_channel: str | None = None


def handoff_request(
    namespace: str,
    session_id: str,
    channel: str,
    user_id: str,
    event_id: str,
    message_id: str,
    at: datetime,
    rule_target: str | None,
) -> dict[str, Any]:
    """The follow-up's task payload: where the turn is and what the rule found, no text."""
    return {"namespace": namespace, "session_id": session_id, "channel": channel,
            "user_id": user_id, "event_id": event_id, "message_id": message_id,
            "at": at.isoformat(), "rule_target": rule_target}  # fmt: skip


def handoff_with_llm(request: dict[str, Any], llm: OpenAICompatibleLLM | None) -> HandoffResult:
    """Ask the LLM about the turn of `request` (a `handoff_request`) and revise or send its
    handoff; the rule's handoff stands whenever the LLM gives no usable answer."""
    namespace, session_id = request["namespace"], request["session_id"]
    at = datetime.fromisoformat(request["at"])
    rule_target: str | None = request["rule_target"]
    fallback = "kept" if rule_target else "none"
    if llm is None:
        return HandoffResult("skipped", "no LLM configured")
    if at <= datetime.now(UTC) - timedelta(seconds=HANDOFF_TTL_S):
        return HandoffResult("skipped", "older than a handoff lives")
    window = at - timedelta(seconds=HANDOFF_TTL_S)
    with session_scope() as db:
        turns = session_turns(db, namespace, session_id, window, request["channel"])
    ids = [turn.message_id for turn in turns]
    if request["message_id"] not in ids:  # a buffer session end cleared: the rule's stands
        return HandoffResult(fallback, "the turn is no longer readable")
    turns = turns[: ids.index(request["message_id"]) + 1][-CONTEXT_TURNS:]
    context = (
        f"The conversation is on the {channel_family(request['channel'])} channel. "
        f"The last line, [{len(turns) - 1}], is the user's turn to judge."
    )
    try:
        answer = llm.ask(handoff.PROMPT, numbered_lines(turns), namespace=namespace,
                         session_id=session_id, context=context)  # fmt: skip
    except LLMError as exc:
        return HandoffResult("fallback", str(exc)[:200], rule_target)
    target = answer.to_channel or rule_target
    here = channel_family(request["channel"])
    if not answer.moving or (target is not None and channel_family(target) == here):
        return HandoffResult(fallback, "the LLM finds no move", rule_target)
    user_id = request["user_id"]
    if rule_target is not None:
        revised = revise_handoff(namespace, user_id, request["event_id"], answer.summary, target)
        return HandoffResult("revised" if revised else "kept",
                             "" if revised else "no longer pending", target)  # fmt: skip
    send_handoff(namespace, user_id, request["channel"], target, answer.summary,
                 handoff_id=request["event_id"], at=at)  # fmt: skip
    return HandoffResult("sent", to_channel=target)
