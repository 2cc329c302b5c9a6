"""Every public route of the HTTP API (docs/api.md) as one typed function that describes its
request (`Call`): the single definition both clients (`continuum.sdk.client`) serve, sync and
async. `ROUTES` maps each (method, path) of the OpenAPI document to its function; a test holds
it equal to the document, parameters included.

Lists answer a `Page`; the clients wrap those in iterators that follow `next` to the end, so
`limit` is the page size. `instance` is the client's, never an argument.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from typing import Any, Literal, TypeVar
from urllib.parse import quote

from pydantic import BaseModel

from continuum.sdk.calls import Call, parse
from continuum.sdk.models import (
    ActiveSession,
    Conflict,
    ContextBlock,
    CronReport,
    Document,
    Enqueued,
    ForgetReport,
    ImportReport,
    Me,
    Memory,
    MemoryKind,
    MemoryVersion,
    Message,
    Page,
    Preference,
    SearchHit,
    Session,
    Settled,
    StoredMemory,
    SyncProblem,
    TargetedMemories,
    Task,
    Turn,
)

F = TypeVar("F", bound=Callable[..., Any])
ROUTES: dict[tuple[str, str], Callable[..., Call[Any]]] = {}
Provenance = Literal["system", "user_explicit"]
MemoryStatus = Literal[
    "active", "superseded", "merged", "quarantined", "forgotten", "archived", "any"
]
TaskStatus = Literal["pending", "in_progress", "blocked", "done", "cancelled"]
Event = Mapping[str, Any] | BaseModel


def route(method: str, path: str) -> Callable[[F], F]:
    """Register the function that builds requests for `method path`."""

    def register(build: F) -> F:
        ROUTES[(method, path)] = build
        return build

    return register


def _segment(value: str) -> str:
    return quote(value, safe="")


def _dates(
    since: datetime | None, until: datetime | None, day: date | None, tz: str | None
) -> dict[str, Any]:
    return {"since": since, "until": until, "day": day, "tz": tz}


def _writer(
    user_id: str | None, session_id: str | None, channel: str | None, provenance: Provenance
) -> dict[str, Any]:
    return {"user_id": user_id, "session_id": session_id, "channel": channel,
            "provenance": provenance}  # fmt: skip


def _event(event: Event) -> Any:
    if isinstance(event, BaseModel):
        return event.model_dump(mode="json", exclude_none=True)
    return dict(event)


@route("GET", "/v1/me")
def me() -> Call[Me]:
    """The token's id, name and namespaces."""
    return Call("GET", "/v1/me", parse(Me))


@route("POST", "/v1/events")
def emit(events: Event | Sequence[Event]) -> Call[Enqueued]:
    """Validate and enqueue one event or a batch (202: workers process them later)."""
    body = (
        _event(events) if isinstance(events, Mapping | BaseModel) else [_event(e) for e in events]
    )
    return Call("POST", "/v1/events", parse(Enqueued), body=body)


@route("GET", "/v1/messages")
def messages(
    q: str | None = None,
    *,
    role: str | None = None,
    session_id: str | None = None,
    channel: str | None = None,
    user_id: str | None = None,
    order: Literal["newest", "oldest"] = "newest",
    since: datetime | None = None,
    until: datetime | None = None,
    day: date | None = None,
    tz: str | None = None,
    limit: int = 50,
) -> Call[Page[Message]]:
    """Raw messages: full text (`q`), by session, role, channel, user, dates."""
    params = {"q": q, "role": role, "session_id": session_id, "channel": channel,
              "user_id": user_id, "order": order, "limit": limit, **_dates(since, until, day, tz)}  # fmt: skip
    return Call("GET", "/v1/messages", parse(Page[Message]), params)


@route("GET", "/v1/search")
def search(
    q: str,
    *,
    kind: Sequence[str] | None = None,
    tag: Sequence[str] | None = None,
    source: Sequence[Literal["memory", "message"]] | None = None,
    session_id: str | None = None,
    channel: str | None = None,
    user_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    day: date | None = None,
    tz: str | None = None,
    limit: int = 10,
) -> Call[Page[SearchHit]]:
    """Hybrid search (vectors and full text) over memories and messages, best first."""
    params = {"q": q, "kind": kind, "tag": tag, "source": source, "session_id": session_id,
              "channel": channel, "user_id": user_id, "limit": limit,
              **_dates(since, until, day, tz)}  # fmt: skip
    return Call("GET", "/v1/search", parse(Page[SearchHit]), params)


@route("GET", "/v1/context")
def context(
    seed_text: str = "",
    *,
    max_tokens: int = 800,
    user_id: str | None = None,
    channel: str | None = None,
    explain: bool = False,
    tz: str | None = None,
) -> Call[ContextBlock]:
    """The context block for a system prompt (and, with `explain`, what was left out)."""
    params = {"seed_text": seed_text, "max_tokens": max_tokens, "user_id": user_id,
              "channel": channel, "explain": explain, "tz": tz}  # fmt: skip
    return Call("GET", "/v1/context", parse(ContextBlock), params)


@route("GET", "/v1/cron-reports")
def cron_reports(
    cron_name: str | None = None,
    *,
    q: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    day: date | None = None,
    tz: str | None = None,
    limit: int = 50,
) -> Call[Page[CronReport]]:
    """Cron reports, newest run first."""
    params = {"cron_name": cron_name, "q": q, "limit": limit, **_dates(since, until, day, tz)}
    return Call("GET", "/v1/cron-reports", parse(Page[CronReport]), params)


@route("GET", "/v1/cron-reports/names")
def cron_names() -> Call[list[str]]:
    """Every cron name that has a report."""
    return Call("GET", "/v1/cron-reports/names", parse(list[str]))


@route("GET", "/v1/memories")
def memories(
    q: str | None = None,
    *,
    kind: str | None = None,
    status: MemoryStatus = "active",
    min_importance: int | None = None,
    tag: Sequence[str] | None = None,
    session_id: str | None = None,
    channel: str | None = None,
    user_id: str | None = None,
    include_private: bool = False,
    since: datetime | None = None,
    until: datetime | None = None,
    day: date | None = None,
    tz: str | None = None,
    limit: int = 50,
) -> Call[Page[Memory]]:
    """Memories, newest first (private ones only with `user_id` + `include_private`)."""
    params = {"q": q, "kind": kind, "status": status, "min_importance": min_importance,
              "tag": tag, "session_id": session_id, "channel": channel, "user_id": user_id,
              "include_private": include_private, "limit": limit,
              **_dates(since, until, day, tz)}  # fmt: skip
    return Call("GET", "/v1/memories", parse(Page[Memory]), params)


@route("GET", "/v1/memories/kinds")
def memory_kinds() -> Call[list[MemoryKind]]:
    """Every memory kind and whether the memory tools store it."""
    return Call("GET", "/v1/memories/kinds", parse(list[MemoryKind]))


@route("POST", "/v1/memories/store")
def store_memory(
    memory_type: str,
    key: str,
    value: str,
    *,
    confidence: float | None = None,
    suggest_reminder: bool | None = None,
    user_id: str | None = None,
    session_id: str | None = None,
    channel: str | None = None,
    provenance: Provenance = "system",
) -> Call[StoredMemory]:
    """Remember something under a key: `{success, memoryId, ...}`."""
    body = {"memory_type": memory_type, "key": key, "value": value, "confidence": confidence,
            "suggest_reminder": suggest_reminder}  # fmt: skip
    return Call("POST", "/v1/memories/store", parse(StoredMemory),
                _writer(user_id, session_id, channel, provenance), _set(body))  # fmt: skip


@route("POST", "/v1/memories/update")
def update_memory(
    existing_key: str,
    new_value: str,
    *,
    memory_type: str | None = None,
    confidence: float | None = None,
    user_id: str | None = None,
    session_id: str | None = None,
    channel: str | None = None,
    provenance: Provenance = "system",
) -> Call[MemoryVersion]:
    """A new version under a key (created when unknown): `action: created|updated`."""
    body = {"existing_key": existing_key, "new_value": new_value, "memory_type": memory_type,
            "confidence": confidence}  # fmt: skip
    return Call("POST", "/v1/memories/update", parse(MemoryVersion),
                _writer(user_id, session_id, channel, provenance), _set(body))  # fmt: skip


@route("POST", "/v1/memories/forget")
def forget_memory(
    key: str | None = None,
    *,
    memory_id: int | None = None,
    user_id: str | None = None,
    session_id: str | None = None,
    channel: str | None = None,
    provenance: Provenance = "system",
) -> Call[TargetedMemories]:
    """Forget every version under `key`, or one `memory_id` (`NotFound` when none)."""
    return Call("POST", "/v1/memories/forget", parse(TargetedMemories),
                _writer(user_id, session_id, channel, provenance),
                _set({"key": key, "memory_id": memory_id}))  # fmt: skip


@route("POST", "/v1/memories/mark-private")
def mark_private(
    key: str | None = None,
    *,
    memory_id: int | None = None,
    private: bool = True,
    user_id: str | None = None,
    session_id: str | None = None,
    channel: str | None = None,
    provenance: Provenance = "system",
) -> Call[TargetedMemories]:
    """Mark memories private (`private=False` undoes it)."""
    return Call("POST", "/v1/memories/mark-private", parse(TargetedMemories),
                _writer(user_id, session_id, channel, provenance),
                _set({"key": key, "memory_id": memory_id, "private": private}))  # fmt: skip


@route("PATCH", "/v1/memories/{memory_id}")
def edit_memory(
    memory_id: int,
    content: str,
    *,
    user_id: str | None = None,
    session_id: str | None = None,
    channel: str | None = None,
    provenance: Provenance = "system",
) -> Call[MemoryVersion]:
    """A new version of one active memory saying `content` supersedes it:
    `{success, memoryId, previousMemoryId, version}`."""
    return Call("PATCH", f"/v1/memories/{memory_id}", parse(MemoryVersion),
                _writer(user_id, session_id, channel, provenance), {"content": content})  # fmt: skip


@route("GET", "/v1/conflicts")
def conflicts(user_id: str | None = None, *, limit: int = 50) -> Call[Page[Conflict]]:
    """Open conflicts (quarantined memories and what they contradict), oldest first."""
    return Call("GET", "/v1/conflicts", parse(Page[Conflict]), {"user_id": user_id, "limit": limit})


@route("POST", "/v1/conflicts/{memory_id}/settle")
def settle_conflict(memory_id: int, keep: Literal["quarantined", "active"]) -> Call[Settled]:
    """Settle the conflict of quarantined memory `memory_id`: `{namespace, kept, superseded}`."""
    return Call("POST", f"/v1/conflicts/{memory_id}/settle", parse(Settled),
                body={"keep": keep})  # fmt: skip


@route("GET", "/v1/status")
def status() -> Call[dict[str, Any]]:
    """What the tenant's pipeline is doing: embeddings pending, dead letters, sync, LLM use."""
    return Call("GET", "/v1/status", parse(dict[str, Any]))


@route("POST", "/v1/forget")
def forget_user(user_id: str) -> Call[ForgetReport]:
    """Forget a user everywhere; answers the verification report."""
    return Call("POST", "/v1/forget", parse(ForgetReport), body={"user_id": user_id})


@route("GET", "/v1/export")
def export_archive(user_id: str | None = None, *, plaintext: bool = False) -> Call[str]:
    """The tenant's archive (JSON Lines; only `user_id`'s rows if given). An encrypted
    tenant's needs `plaintext=True`: the archive holds its text opened."""
    params = {"user_id": user_id, "plaintext": plaintext or None}
    return Call("GET", "/v1/export", str, params=params, text=True)


@route("POST", "/v1/import")
def import_archive(archive: str | bytes) -> Call[ImportReport]:
    """Import an archive into the tenant: all of it or nothing, twice is once; answers what
    was inserted, already there or not written, per record type."""
    content = archive.encode() if isinstance(archive, str) else archive
    return Call("POST", "/v1/import", parse(ImportReport), content=content)


@route("GET", "/v1/preferences")
def preferences(
    user_id: str | None = None,
    *,
    category: str | None = None,
    include_private: bool = False,
    limit: int = 50,
) -> Call[Page[Preference]]:
    """The newest active preference per key."""
    params = {"user_id": user_id, "category": category, "include_private": include_private,
              "limit": limit}  # fmt: skip
    return Call("GET", "/v1/preferences", parse(Page[Preference]), params)


@route("GET", "/v1/preferences/{key}")
def preference(
    key: str, *, user_id: str | None = None, include_private: bool = False
) -> Call[Preference | None]:
    """One preference (key in any case); None when there is none."""
    params = {"user_id": user_id, "include_private": include_private}
    return Call("GET", f"/v1/preferences/{_segment(key)}", parse(Preference | None), params,
                absent=True)  # fmt: skip


@route("PUT", "/v1/preferences/{key}")
def set_preference(
    key: str,
    value: str,
    *,
    user_id: str | None = None,
    category: str | None = None,
    confidence: float | None = None,
    channel: str | None = None,
    session_id: str | None = None,
) -> Call[Preference]:
    """Set a preference as the user stated it."""
    body = {"value": value, "user_id": user_id, "category": category, "confidence": confidence,
            "channel": channel, "session_id": session_id}  # fmt: skip
    return Call("PUT", f"/v1/preferences/{_segment(key)}", parse(Preference), body=_set(body))


@route("GET", "/v1/tasks")
def tasks(
    user_id: str | None = None, *, active_only: bool = True, limit: int = 50
) -> Call[Page[Task]]:
    """Tasks, most pressing first (by default only the open ones)."""
    params = {"user_id": user_id, "active_only": active_only, "limit": limit}
    return Call("GET", "/v1/tasks", parse(Page[Task]), params)


@route("POST", "/v1/tasks")
def create_task(
    title: str,
    *,
    description: str | None = None,
    user_id: str | None = None,
    channel: str | None = None,
    due_at: datetime | None = None,
    tags: Sequence[str] = (),
) -> Call[Task]:
    """Create a task, visible from every channel."""
    body = {"title": title, "description": description, "user_id": user_id, "channel": channel,
            "due_at": due_at.isoformat() if due_at else None, "tags": list(tags)}  # fmt: skip
    return Call("POST", "/v1/tasks", parse(Task), body=_set(body))


@route("POST", "/v1/tasks/{task_id}/status")
def set_task_status(task_id: str, status: TaskStatus) -> Call[Task]:
    """Move a task (its id or a unique prefix of at least 4 characters) to `status`."""
    return Call("POST", f"/v1/tasks/{_segment(task_id)}/status", parse(Task),
                body={"status": status})  # fmt: skip


@route("GET", "/v1/tasks/suggestions")
def task_suggestions(user_id: str | None = None, *, limit: int = 50) -> Call[Page[Task]]:
    """Suggested tasks waiting for the user's answer (CONTINUUM_CONFIRM_TASKS)."""
    return Call("GET", "/v1/tasks/suggestions", parse(Page[Task]),
                {"user_id": user_id, "limit": limit})  # fmt: skip


@route("POST", "/v1/tasks/{task_id}/confirm")
def confirm_task(task_id: str) -> Call[Task]:
    """Accept a suggested task."""
    return Call("POST", f"/v1/tasks/{_segment(task_id)}/confirm", parse(Task))


@route("POST", "/v1/tasks/{task_id}/dismiss")
def dismiss_task(task_id: str) -> Call[Task]:
    """Decline a suggested task."""
    return Call("POST", f"/v1/tasks/{_segment(task_id)}/dismiss", parse(Task))


@route("GET", "/v1/sessions")
def sessions(
    channel: str | None = None,
    *,
    source: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    day: date | None = None,
    tz: str | None = None,
    limit: int = 50,
) -> Call[Page[Session]]:
    """Stored sessions, most recently active first."""
    params = {"channel": channel, "source": source, "limit": limit,
              **_dates(since, until, day, tz)}  # fmt: skip
    return Call("GET", "/v1/sessions", parse(Page[Session]), params)


@route("GET", "/v1/sessions/active")
def active_sessions() -> Call[list[ActiveSession]]:
    """Sessions active in the last hour across channels, with their topic."""
    return Call("GET", "/v1/sessions/active", parse(list[ActiveSession]))


@route("GET", "/v1/sessions/{session_id}")
def session(session_id: str) -> Call[Session | None]:
    """One stored session; None when there is none."""
    return Call("GET", f"/v1/sessions/{_segment(session_id)}", parse(Session | None),
                absent=True)  # fmt: skip


@route("GET", "/v1/sessions/{session_id}/messages")
def session_turns(
    session_id: str, *, order: Literal["oldest", "newest"] = "oldest", limit: int = 50
) -> Call[Page[Turn]]:
    """A session's turns whole (metadata included), oldest first (`order="newest"`: last
    first)."""
    return Call("GET", f"/v1/sessions/{_segment(session_id)}/messages", parse(Page[Turn]),
                {"order": order, "limit": limit})  # fmt: skip


@route("DELETE", "/v1/sessions/{session_id}/messages")
def erase_session_turns(session_id: str, message_id: Sequence[str] | None = None) -> Call[int]:
    """Delete a session's turns (only `message_id` ones when given); answers how many went.
    Their statement memories go with them; other memories derived from them stay."""
    return Call("DELETE", f"/v1/sessions/{_segment(session_id)}/messages",
                lambda body: int(body["erased"]), {"message_id": message_id})  # fmt: skip


@route("POST", "/v1/handoff")
def send_handoff(
    user_id: str, from_channel: str, context_summary: str, *, to_channel: str | None = None
) -> Call[dict[str, str]]:
    """Announce a channel switch (kept 10 minutes, read once)."""
    body = {"user_id": user_id, "from_channel": from_channel, "to_channel": to_channel,
            "context_summary": context_summary}  # fmt: skip
    return Call("POST", "/v1/handoff", parse(dict[str, str]), body=_set(body))


@route("GET", "/v1/handoff")
def check_handoff(
    user_id: str, *, channel: str | None = None, consume: bool = True
) -> Call[dict[str, str] | None]:
    """The user's pending handoff (consumed unless `consume=False`); None when there is none."""
    params = {"user_id": user_id, "channel": channel, "consume": consume}
    return Call("GET", "/v1/handoff", parse(dict[str, str] | None), params)


@route("GET", "/v1/sync/problems")
def sync_problems(
    *,
    resolved: bool = False,
    since: datetime | None = None,
    until: datetime | None = None,
    day: date | None = None,
    tz: str | None = None,
    limit: int = 50,
) -> Call[Page[SyncProblem]]:
    """Bad input transcript sync found, most recently seen first."""
    params = {"resolved": resolved, "limit": limit, **_dates(since, until, day, tz)}
    return Call("GET", "/v1/sync/problems", parse(Page[SyncProblem]), params)


@route("PUT", "/v1/documents/item")
def put_document(
    namespace: Sequence[str],
    key: str,
    value: Mapping[str, Any],
    *,
    text: str | None = None,
    user_id: str | None = None,
) -> Call[Document]:
    """Store `value` under (`namespace` path, `key`), found by `text` (None: only by its path
    and filters); replaces what was there."""
    body = {"namespace": list(namespace), "key": key, "value": dict(value), "text": text,
            "user_id": user_id}  # fmt: skip
    return Call("PUT", "/v1/documents/item", parse(Document), body=body)


@route("GET", "/v1/documents/item")
def get_document(namespace: Sequence[str], key: str) -> Call[Document | None]:
    """The document under (`namespace` path, `key`); None when there is none."""
    return Call("GET", "/v1/documents/item", parse(Document | None),
                {"namespace": list(namespace), "key": key}, absent=True)  # fmt: skip


@route("DELETE", "/v1/documents/item")
def delete_document(namespace: Sequence[str], key: str) -> Call[bool]:
    """Remove a document; False when there was none."""
    return Call("DELETE", "/v1/documents/item", lambda body: bool(body["deleted"]),
                {"namespace": list(namespace), "key": key})  # fmt: skip


@route("POST", "/v1/documents/search")
def search_documents(
    namespace_prefix: Sequence[str] = (),
    *,
    query: str | None = None,
    filter: Mapping[str, Any] | None = None,
    limit: int = 10,
    offset: int = 0,
) -> Call[list[Document]]:
    """Documents under a path prefix: by hybrid search with `query` (best first, scored), else
    most recently updated first; `filter` keeps those whose value matches."""
    body = {"namespace_prefix": list(namespace_prefix), "query": query,
            "filter": dict(filter) if filter else None, "limit": limit, "offset": offset}  # fmt: skip
    return Call("POST", "/v1/documents/search", lambda answer: parse(list[Document])(answer["items"]),
                body=body)  # fmt: skip


@route("POST", "/v1/documents/namespaces")
def document_namespaces(
    *,
    prefix: Sequence[str] = (),
    suffix: Sequence[str] = (),
    max_depth: int | None = None,
    limit: int = 100,
    offset: int = 0,
) -> Call[list[tuple[str, ...]]]:
    """The paths holding documents that match `prefix` and `suffix` (`*`: any one label),
    cut to `max_depth` labels, sorted."""
    body = {"prefix": list(prefix), "suffix": list(suffix), "max_depth": max_depth,
            "limit": limit, "offset": offset}  # fmt: skip
    return Call("POST", "/v1/documents/namespaces",
                lambda answer: [tuple(path) for path in answer["namespaces"]], body=body)  # fmt: skip


@route("GET", "/metrics")
def metrics() -> Call[str]:
    """The Prometheus metrics, as text (no token needed)."""
    return Call("GET", "/metrics", str, text=True)


def _set(body: dict[str, Any]) -> dict[str, Any]:
    """The body without the fields left unset (the server's defaults apply)."""
    return {name: value for name, value in body.items() if value is not None}
