"""The MCP server (`continuum mcp`): Continuum's memory as tools for any agent that speaks
the Model Context Protocol, over stdio or streamable HTTP, on the official `mcp` SDK.

Tools: `remember` (enqueue a turn, answer its event id at once), `memory_status` (has that
event landed, what was derived from it), `recall` (the context block for a seed), `search`
(hits with their source message ids) — both read days in the user's time zone, `tz`, or the
tenant's — and the memory tools `list_memories`, `update_memory`, `forget_memory` (answers
what was removed) and `mark_private`, whose arguments are `continuum.memory.tool_schemas`'
own models, and `confirm_task` / `dismiss_task`, the user's answer to a task capture
suggested (CONTINUUM_CONFIRM_TASKS).

Who is calling is never a tool argument. Over stdio the tenant and user are the server's
configuration (`CONTINUUM_MCP_NAMESPACE`, `CONTINUUM_MCP_USER`). Over HTTP every request
needs a bearer token from `continuum tokens create` (401 otherwise), and each call runs in
the token's namespace (`CONTINUUM_MCP_NAMESPACE` picks one of a token bound to several).
"""

from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from functools import cache
from typing import Annotated, Any, Literal

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field
from sqlalchemy import any_, literal, select
from starlette.types import ASGIApp, Receive, Scope, Send

from continuum.config import ConfigError, get_settings, time_zone
from continuum.contract.client import EnqueueError, MemoryClient
from continuum.contract.events import EventError
from continuum.memory.tool_calls import MemoryTools
from continuum.memory.tool_schemas import TOOLS
from continuum.recall.context import context
from continuum.recall.scope import SearchFilters
from continuum.recall.search import search
from continuum.security.tokens import TokenInfo, authenticate
from continuum.store.models import DeadLetter, Memory, Message, ProcessedEvent
from continuum.store.reads import read_scope

CHANNEL = "mcp"
Transport = Literal["stdio", "http"]
INSTRUCTIONS = (
    "Long-term memory of the user across sessions and channels. Call `recall` at the start "
    "of a task for what you should already know; `search` when you need a specific past "
    "fact or conversation; `remember` whatever the user would expect you to know next "
    "time. Memories are the user's: `forget_memory` and `mark_private` when they ask. "
    "Suggested tasks in `recall` wait for the user's yes: ask, then `confirm_task` or "
    "`dismiss_task` with the id shown."
)


TimeZoneArg = Annotated[
    str | None,
    Field(
        description="The user's IANA time zone (e.g. Europe/Paris): whose 'yesterday' and "
        "days; default: the tenant's."
    ),
]


@dataclass(frozen=True)
class Caller:
    """The tenant and user every tool call runs as."""

    namespace: str
    user_id: str | None


def configured_caller() -> Caller:
    """The caller of a stdio server: CONTINUUM_MCP_NAMESPACE / CONTINUUM_MCP_USER."""
    settings = get_settings()
    if not settings.mcp_namespace:
        raise ConfigError("No tenant for the MCP server: set CONTINUUM_MCP_NAMESPACE.")
    settings.check_namespace(settings.mcp_namespace)
    return Caller(settings.mcp_namespace, settings.mcp_user)


def _bearer(authorization: str | None) -> str | None:
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def token_caller(token: TokenInfo) -> Caller:
    """The caller of an HTTP request: the token's namespace (CONTINUUM_MCP_NAMESPACE chooses
    among several), the configured user."""
    settings = get_settings()
    if len(token.namespaces) == 1:
        return Caller(token.namespaces[0], settings.mcp_user)
    if settings.mcp_namespace in token.namespaces:
        return Caller(settings.mcp_namespace, settings.mcp_user)
    raise ToolError(
        f"this token covers {', '.join(token.namespaces)}: use a token of one namespace, or "
        "start the server with CONTINUUM_MCP_NAMESPACE naming one of them"
    )


class BearerGate:
    """ASGI wrapper of the HTTP app: a request without a live bearer token gets 401."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {key.decode("latin-1"): value.decode("latin-1")
                       for key, value in scope["headers"]}  # fmt: skip
            token = _bearer(headers.get("authorization"))
            info = await anyio.to_thread.run_sync(authenticate, token) if token else None
            if info is None:
                body = json.dumps({"error": "missing or invalid bearer token"}).encode()
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})  # fmt: skip
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


@cache
def _client() -> MemoryClient:
    return MemoryClient()


def _remember(caller: Caller, text: str, session_id: str) -> dict[str, Any]:
    event = {"kind": "turn", "namespace": caller.namespace, "user_id": caller.user_id,
             "session_id": session_id, "channel": CHANNEL, "role": "user", "content": text,
             "ts": datetime.now(UTC).isoformat()}  # fmt: skip
    try:
        event_id = _client().emit(event)
    except (EventError, EnqueueError) as exc:
        raise ToolError(str(exc)) from None
    return {"event_id": event_id, "session_id": session_id, "status": "enqueued"}


def _memory_status(caller: Caller, event_id: str) -> dict[str, Any]:
    try:
        key = uuid.UUID(event_id)
    except ValueError:
        raise ToolError(f"{event_id!r} is not an event id (a UUID from `remember`)") from None
    with read_scope(caller.namespace) as db:
        landed = db.get(ProcessedEvent, (caller.namespace, key))
        if landed is None:
            failed = db.scalar(select(DeadLetter.reason).where(
                DeadLetter.namespace == caller.namespace,
                DeadLetter.payload.contains({"event_id": event_id})).limit(1))  # fmt: skip
            status = "failed" if failed else "pending"
            return {
                "event_id": event_id,
                "status": status,
                **({"reason": failed} if failed else {}),
            }
        stored = db.scalar(select(Message.id).where(
            Message.namespace == caller.namespace, Message.session_id == landed.session_id,
            Message.message_id == event_id))  # fmt: skip
        memories = db.scalars(select(Memory).where(
            Memory.namespace == caller.namespace,
            literal(event_id) == any_(Memory.source_message_ids)).order_by(Memory.id))  # fmt: skip
        return {
            "event_id": event_id,
            "status": "landed",
            "processed_at": landed.processed_at.isoformat(),
            "message_stored": stored is not None,
            "memories": [
                {
                    "memoryId": m.id,
                    "type": m.kind,
                    "key": m.key,
                    "content": m.content,
                    "status": m.status,
                }
                for m in memories
            ],
        }


def _zone(tz: str | None) -> tzinfo | None:
    """A tool's `tz` argument as a zone (None: the tenant's); a ToolError naming it if unknown."""
    try:
        return None if tz is None else time_zone(tz)
    except ValueError as exc:
        raise ToolError(f"tz: {exc}") from None


def _search(
    caller: Caller, query: str, limit: int, memories_only: bool, tz: str | None
) -> dict[str, Any]:
    sources: tuple[Literal["memory", "message"], ...] = (
        ("memory",) if memories_only else ("memory", "message")
    )
    hits = search(caller.namespace, query, limit=limit, sources=sources,
                  filters=SearchFilters(user_id=caller.user_id), tz=_zone(tz))  # fmt: skip
    return {"hits": [{"source": hit.source, "id": hit.id, "kind": hit.kind,
                      "content": hit.content, "created_at": hit.created_at.isoformat(),
                      "session_id": hit.session_id, "channel": hit.channel,
                      "source_message_ids": hit.source_message_ids, "score": round(hit.score, 4)}
                     for hit in hits]}  # fmt: skip


SuggestedTaskId = Annotated[
    str, Field(description="The suggested task's id (or its first 8 characters, as shown).")
]


def _answer_task(caller: Caller, task_id: str, confirm: bool) -> dict[str, Any]:
    from continuum.memory import user_tasks

    try:
        task = user_tasks.answer_suggestion(caller.namespace, task_id, confirm=confirm)
    except (user_tasks.TaskNotFound, user_tasks.SuggestionAnswered) as exc:
        raise ToolError(str(exc)) from None
    return {"task_id": task.task_id, "title": task.title, "status": task.status,
            "due_at": task.due_at.isoformat() if task.due_at else None}  # fmt: skip


def _memory_tool(caller: Caller, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    tools = MemoryTools(caller.namespace, user_id=caller.user_id, channel=CHANNEL)
    result = tools.call(name, {k: v for k, v in arguments.items() if v is not None})
    if not result["success"]:
        raise ToolError(result["message"])
    if name == "forget_memory":
        with read_scope(caller.namespace) as db:
            removed = db.execute(select(Memory.id, Memory.kind, Memory.key, Memory.content)
                                 .where(Memory.namespace == caller.namespace,
                                        Memory.id.in_(result["memoryIds"]))).all()  # fmt: skip
        result["removed"] = [{"memoryId": row.id, "type": row.kind, "key": row.key,
                              "content": row.content} for row in removed]  # fmt: skip
    return result


_MEMORY_TOOL_DESCRIPTIONS = {
    "list_memories": "List what is remembered about the user, newest first (optionally one "
    "kind, or one channel: `conversation_summary` from `voice` is what was said in calls). Use it to review memories before changing or forgetting one; for a question "
    "about the past, `search` is better.",
    "update_memory": "Replace what is remembered under a key with a new value, keeping the "
    "old one as history (creates the memory when the key is unknown). Use it when the user "
    "corrects or changes something you remembered, e.g. a new preference.",
    "forget_memory": "Forget a memory by key (every version) or by id, when the user asks "
    "you to. It is hidden at once and purged by the next maintenance; the answer lists "
    "what was removed.",
    "mark_private": "Mark a memory private (by key or id): it is never shown in group or "
    "shared contexts. `private: false` makes it visible again.",
}


def _memory_tool_function(
    caller_of: Callable[[Context], Awaitable[Caller]], name: str
) -> Callable[..., Awaitable[dict[str, Any]]]:
    """An async tool function whose parameters are the memory tool's argument model's
    fields, so the MCP schema and the tool's validation come from one definition."""

    async def call(ctx: Context, **arguments: Any) -> dict[str, Any]:
        caller = await caller_of(ctx)
        return await anyio.to_thread.run_sync(_memory_tool, caller, name, arguments)

    keyword = inspect.Parameter.KEYWORD_ONLY
    parameters = [inspect.Parameter("ctx", keyword, annotation=Context)]
    for field, info in TOOLS[name].args.model_fields.items():
        default = inspect.Parameter.empty if info.is_required() else info.default
        described = Field(description=info.description)  # its default goes to the parameter
        annotation = Annotated[(info.annotation, *info.metadata, described)]  # type: ignore[name-defined]  # fmt: skip
        parameters.append(inspect.Parameter(field, keyword, default=default, annotation=annotation))
    call.__signature__ = inspect.Signature(parameters, return_annotation=dict[str, Any])  # type: ignore[attr-defined]
    call.__name__ = name
    return call


def build_server(transport: Transport, caller: Caller | None = None) -> MCPServer:
    """The server with every tool; over stdio each call runs as `caller` (default: the
    configured one), over HTTP as its bearer token's caller."""
    fixed = (caller or configured_caller()) if transport == "stdio" else None
    run_session = f"mcp-{uuid.uuid4()}"  # the session of turns remembered without one

    async def caller_of(ctx: Context) -> Caller:
        if fixed is not None:
            return fixed
        token = _bearer((ctx.headers or {}).get("authorization"))
        info = await anyio.to_thread.run_sync(authenticate, token) if token else None
        if info is None:
            raise ToolError("missing or invalid bearer token")
        return token_caller(info)

    server = MCPServer("continuum", instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool()
    async def remember(
        ctx: Context,
        text: Annotated[
            str,
            Field(
                description="What to remember, in the user's words or as "
                "a plain statement (one fact, decision, preference, plan)."
            ),
        ],
        session_id: Annotated[
            str | None, Field(description="Conversation this belongs to; default: this server run.")
        ] = None,
    ) -> dict[str, Any]:
        """Save something the user said or decided to long-term memory. Returns at once with
        an `event_id`: the text is stored and analysed in the background (decisions,
        preferences, facts, commitments become memories). Call `memory_status` with the
        event id to see what was derived."""
        caller = await caller_of(ctx)
        return await anyio.to_thread.run_sync(_remember, caller, text, session_id or run_session)

    @server.tool()
    async def memory_status(
        ctx: Context,
        event_id: Annotated[str, Field(description="The event id `remember` returned.")],
    ) -> dict[str, Any]:
        """Whether something sent with `remember` has been stored yet (`pending`, `landed`
        or `failed`) and which memories were derived from it."""
        caller = await caller_of(ctx)
        return await anyio.to_thread.run_sync(_memory_status, caller, event_id)

    @server.tool(structured_output=False)  # the block itself is the answer, as plain text
    async def recall(
        ctx: Context,
        seed: Annotated[
            str, Field(description="The task or first message; empty for a general briefing.")
        ] = "",
        max_tokens: Annotated[
            int, Field(ge=50, le=8000, description="Size budget of the block in tokens.")
        ] = 800,
        tz: TimeZoneArg = None,
    ) -> str:
        """What you should know before you start: a compact briefing from long-term memory
        (recent conversations across channels, decisions, open threads, active tasks,
        preferences, and memories relevant to `seed`), packed into `max_tokens`."""
        caller = await caller_of(ctx)
        zone = _zone(tz)
        result = await anyio.to_thread.run_sync(lambda: context(
            caller.namespace, seed, max_tokens, user_id=caller.user_id, channel=CHANNEL,
            tz=zone))  # fmt: skip
        return result.block

    @server.tool(name="search")
    async def search_tool(
        ctx: Context,
        query: Annotated[
            str,
            Field(
                description="What to look for: words, a phrase, a "
                "question; time phrases like 'last week' narrow it."
            ),
        ],
        limit: Annotated[int, Field(ge=1, le=50, description="At most this many hits.")] = 10,
        memories_only: Annotated[
            bool, Field(description="Only derived memories, not raw conversation turns.")
        ] = False,
        tz: TimeZoneArg = None,
    ) -> dict[str, Any]:
        """Search long-term memory and past conversations (meaning and exact words). Each
        hit is a memory or a raw message, with its kind, time, channel and the ids of the
        source messages it came from."""
        caller = await caller_of(ctx)
        return await anyio.to_thread.run_sync(_search, caller, query, limit, memories_only, tz)

    @server.tool()
    async def confirm_task(ctx: Context, task_id: SuggestedTaskId) -> dict[str, Any]:
        """The user said yes to a suggested task: it becomes one of their tasks (pending)."""
        caller = await caller_of(ctx)
        return await anyio.to_thread.run_sync(_answer_task, caller, task_id, True)

    @server.tool()
    async def dismiss_task(ctx: Context, task_id: SuggestedTaskId) -> dict[str, Any]:
        """The user said no to a suggested task: it is dropped, never a task."""
        caller = await caller_of(ctx)
        return await anyio.to_thread.run_sync(_answer_task, caller, task_id, False)

    for name, description in _MEMORY_TOOL_DESCRIPTIONS.items():
        server.add_tool(_memory_tool_function(caller_of, name), name=name, description=description)
    return server


def serve(transport: Transport, host: str, port: int, caller: Caller | None = None) -> None:
    """Run the server until interrupted (stdio: on this process's stdin/stdout, as `caller`
    or the configured one)."""
    server = build_server(transport, caller)
    if transport == "stdio":
        server.run("stdio")
        return
    import uvicorn

    from continuum.security.logs import server_log_config

    uvicorn.run(BearerGate(server.streamable_http_app(host=host)), host=host, port=port,
                log_level="warning", log_config=server_log_config())  # fmt: skip
