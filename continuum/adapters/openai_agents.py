"""The OpenAI Agents SDK on Continuum, over the HTTP API: `ContinuumSession`, a `Session` that
keeps a conversation's items as turns of one Continuum session, and `memory_tools()`, the
memory tools (`search`, `remember`, `forget`) as function tools.

Items become turns (`POST /v1/events`), so capture, search and the context block see the
conversation like any other channel's (channel `openai-agents`):
- a message whose content is text (a string, or one text part) is a turn of its role
  (`developer` is stored as `system`) with that text, the rest of the item (ids, types,
  annotations) in the turn's metadata;
- any other item (function calls and their outputs, reasoning, several parts) is a turn whose
  content is the item as JSON, marked as tool output (capture skips it).
Reading back (`GET /v1/sessions/{id}/messages`) rebuilds each item; turns of the session that
came from elsewhere read as plain messages. Secrets in the text are redacted on the way in,
as everywhere (`CONTINUUM_REDACT_SECRETS`).

Ingestion is asynchronous (a worker stores the turns), so a session remembers the items it
added until it reads them back from the server: `get_items` right after `add_items` sees
them. `pop_item` and `clear_session` first wait (up to `settle_timeout_s`) for those to be
stored, then erase turns (`DELETE /v1/sessions/{id}/messages`); their statement memories go
with them, other memories already derived from them stay. A privacy-mode tenant stores no turns: its sessions read back nothing.
"""

from __future__ import annotations

import asyncio
import copy
import json
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, cast

from agents import FunctionTool, function_tool
from agents.items import TResponseInputItem
from agents.memory.session_settings import SessionSettings

from continuum.sdk import AsyncClient, NotFound
from continuum.sdk.models import Turn

CHANNEL = "openai-agents"
META = "openai_agents"  # the key of the turn metadata this adapter writes
TEXT_PARTS = ("input_text", "output_text", "text")
TURN_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
PAGE = 200


def _plain(item: Any) -> dict[str, Any]:
    dump = getattr(item, "model_dump", None)
    return dict(dump(exclude_unset=True, mode="json") if dump else item)


def to_turn(item: TResponseInputItem) -> tuple[str, str, dict[str, Any]]:
    """An item as a turn: role, content and metadata (see the module docstring)."""
    data = _plain(item)
    role, content = data.get("role"), data.get("content")
    if role in TURN_ROLES and data.get("type", "message") == "message":
        if isinstance(content, str) and content.strip():
            return (
                TURN_ROLES[role],
                content,
                {META: {"form": "text", "item": {**data, "content": None}}},
            )
        parts = content if isinstance(content, list) else []
        if (
            len(parts) == 1
            and parts[0].get("type") in TEXT_PARTS
            and str(parts[0].get("text", "")).strip()
        ):
            template = copy.deepcopy(data)
            template["content"][0]["text"] = None
            return TURN_ROLES[role], parts[0]["text"], {META: {"form": "part", "item": template}}
    as_json = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return "assistant", as_json, {"source": "tool", META: {"form": "json"}}


def from_turn(turn: Turn) -> TResponseInputItem:
    """The item a turn was made from (a plain message for turns written elsewhere)."""
    meta = turn.metadata.get(META) or {}
    form, template = meta.get("form"), meta.get("item")
    item: dict[str, Any] = {"role": turn.role, "content": turn.content}
    if form == "text" and isinstance(template, dict):
        item = {**template, "content": turn.content}
    elif form == "part" and isinstance(template, dict):
        item = copy.deepcopy(template)
        item["content"][0]["text"] = turn.content
    elif form == "json":
        try:
            item = json.loads(turn.content)
        except ValueError:  # redaction cut through the JSON: keep what is left as text
            item = {"role": "assistant", "content": turn.content}
    return cast(TResponseInputItem, item)


class ContinuumSession:
    """A `Session` of the Agents SDK whose items are turns of Continuum session `session_id`
    (see the module docstring). `user_id` owns the turns (and the memories derived)."""

    def __init__(
        self,
        session_id: str,
        client: AsyncClient,
        *,
        user_id: str | None = None,
        channel: str = CHANNEL,
        settle_timeout_s: float = 30.0,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = session_id
        self.client = client
        self.user_id = user_id
        self.channel = channel
        self.settle_timeout_s = settle_timeout_s
        self.session_settings = session_settings or SessionSettings()
        self._pending: dict[str, TResponseInputItem] = {}  # added, not yet read back
        self._last_ts = datetime.fromtimestamp(0, UTC)

    async def _turns(self, order: Literal["oldest", "newest"], limit: int | None) -> list[Turn]:
        if limit == 0:
            return []
        pager = self.client.session_turns(
            self.session_id, order=order, limit=min(limit or PAGE, PAGE)
        )
        turns: list[Turn] = []
        async for turn in pager:
            turns.append(turn)
            if limit is not None and len(turns) >= limit:
                break
        return turns if order == "oldest" else turns[::-1]

    async def _history(self, limit: int | None) -> list[tuple[str, TResponseInputItem]]:
        """(message id, item) of the session in order, the items not yet stored last."""
        window = None if limit is None else limit + len(self._pending)
        turns = await self._turns("oldest" if window is None else "newest", window)
        stored = [(turn.message_id, from_turn(turn)) for turn in turns]
        for message_id, _ in stored:
            self._pending.pop(message_id, None)
        history = stored + list(self._pending.items())
        return history if limit is None else history[-limit:] if limit else []

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The conversation in order; with `limit`, its last `limit` items."""
        limit = limit if limit is not None else self.session_settings.limit
        return [item for _, item in await self._history(limit)]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        events = []
        for item in items:
            role, content, metadata = to_turn(item)
            message_id = uuid.uuid4().hex
            # Strictly increasing event times keep the items' order within and across calls.
            self._last_ts = max(datetime.now(UTC), self._last_ts + timedelta(microseconds=1))
            events.append({"kind": "turn", "session_id": self.session_id, "channel": self.channel,
                           "user_id": self.user_id, "ts": self._last_ts.isoformat(), "role": role,
                           "content": content, "message_id": message_id, "metadata": metadata})  # fmt: skip
            self._pending[message_id] = item
        if events:
            await self.client.emit(events)

    async def _settle(self) -> None:
        """Wait until every item this session added is stored (so it can be erased)."""
        deadline = time.monotonic() + self.settle_timeout_s
        while self._pending:
            await self._history(0)
            if not self._pending:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{len(self._pending)} item(s) of session {self.session_id!r} not stored after "
                    f"{self.settle_timeout_s:g}s: are the workers running (`continuum status`)? A "
                    "privacy-mode tenant stores no turns."
                )
            await asyncio.sleep(0.1)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the last item and return it (None when the session is empty)."""
        await self._settle()
        last = await self._history(1)
        if not last:
            return None
        message_id, item = last[0]
        await self.client.erase_session_turns(self.session_id, [message_id])
        return item

    async def clear_session(self) -> None:
        """Erase every turn of the session."""
        await self._settle()
        await self.client.erase_session_turns(self.session_id)


def memory_tools(
    client: AsyncClient, *, user_id: str | None = None, session_id: str | None = None
) -> list[FunctionTool]:
    """`search`, `remember` and `forget` as function tools for an agent, acting for `user_id`
    (and `session_id`, so what it remembers is not extracted again from that session)."""

    async def search(query: str, limit: int = 5) -> list[dict[str, Any]]:
        """Search the user's long-term memory and past conversations.

        Args:
            query: What to look for, in words.
            limit: How many results, at most.
        """
        hits = client.search(query, user_id=user_id, limit=max(1, min(limit, 20)))
        found = []
        async for hit in hits:
            found.append({"source": hit.source, "kind": hit.kind, "content": hit.content,
                          "when": hit.created_at.isoformat(), "score": round(hit.score, 4)})  # fmt: skip
            if len(found) >= limit:
                break
        return found

    async def remember(key: str, value: str, memory_type: str = "fact") -> dict[str, Any]:
        """Remember something about the user for future conversations.

        Args:
            key: Short name of what is remembered, e.g. favorite_color.
            value: What to remember.
            memory_type: One of preference, fact, follow_up, context, history, wellbeing.
        """
        stored = await client.store_memory(memory_type, key, value, user_id=user_id,
                                           session_id=session_id, channel=CHANNEL,
                                           provenance="user_explicit")  # fmt: skip
        return stored.model_dump()

    async def forget(key: str) -> dict[str, Any]:
        """Forget what is remembered under a key, when the user asks to.

        Args:
            key: The key of the memory, e.g. favorite_color.
        """
        try:
            result = await client.forget_memory(key, user_id=user_id, session_id=session_id,
                                                channel=CHANNEL)  # fmt: skip
        except NotFound:
            return {"success": False, "message": f"nothing is remembered under {key!r}"}
        return result.model_dump()

    return [function_tool(search), function_tool(remember), function_tool(forget)]


__all__: Sequence[str] = ["ContinuumSession", "from_turn", "memory_tools", "to_turn"]
