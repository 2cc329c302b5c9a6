"""`Client` and `AsyncClient`: the HTTP API from Python, on httpx.

Both expose the same methods, one per route (`continuum.sdk.routes` defines each once); the
sync client answers results, the async one awaitables. Lists answer iterators that fetch page
after page as they are consumed (`for hit in client.search("garden")`, `async for` on the
async client; `.pages()` gives the pages). A 429 or 503 is sent again after `Retry-After`
(else with exponential backoff), as is a request whose connection could not be opened;
other refusals raise the `continuum.sdk.errors` class of their status, naming each field.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import replace
from typing import Any, Generic, ParamSpec, TypeVar, overload

import httpx

from continuum.sdk import routes
from continuum.sdk.calls import RETRIED_FAILURES, Call, Retries, Wait, outcome
from continuum.sdk.errors import ConnectionFailed
from continuum.sdk.models import Page

P = ParamSpec("P")
T = TypeVar("T")
DEFAULT_TIMEOUT_S = 30.0


class Paginator(Generic[T]):
    """The items of a list, page after page, fetched as they are consumed."""

    def __init__(self, client: Client, call: Call[Page[T]]) -> None:
        self._client = client
        self._call = call

    def pages(self) -> Iterator[Page[T]]:
        page = self._client.send(self._call)
        yield page
        while page.next:
            page = self._client.send(replace(self._call, path=page.next, params={}))
            yield page

    def __iter__(self) -> Iterator[T]:
        for page in self.pages():
            yield from page.items


class AsyncPaginator(Generic[T]):
    """`Paginator` for the async client (`async for`)."""

    def __init__(self, client: AsyncClient, call: Call[Page[T]]) -> None:
        self._client = client
        self._call = call

    async def pages(self) -> AsyncIterator[Page[T]]:
        page = await self._client.send(self._call)
        yield page
        while page.next:
            page = await self._client.send(replace(self._call, path=page.next, params={}))
            yield page

    async def __aiter__(self) -> AsyncIterator[T]:
        async for page in self.pages():
            for item in page.items:
                yield item


class _Endpoint(Generic[P, T]):
    """A route as a method: sync on `Client`, a coroutine on `AsyncClient`."""

    def __init__(self, build: Callable[P, Call[T]]) -> None:
        self.build = build

    @overload
    def __get__(self, client: None, owner: type) -> _Endpoint[P, T]: ...
    @overload
    def __get__(self, client: Client, owner: type) -> Callable[P, T]: ...
    @overload
    def __get__(self, client: AsyncClient, owner: type) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, client: Any, owner: type) -> Any:
        if client is None:
            return self
        return _bound(self.build, client.send)


class _Listing(Generic[P, T]):
    """A list route as a method answering a `Paginator` (an `AsyncPaginator`)."""

    def __init__(self, build: Callable[P, Call[Page[T]]]) -> None:
        self.build = build

    @overload
    def __get__(self, client: None, owner: type) -> _Listing[P, T]: ...
    @overload
    def __get__(self, client: Client, owner: type) -> Callable[P, Paginator[T]]: ...
    @overload
    def __get__(self, client: AsyncClient, owner: type) -> Callable[P, AsyncPaginator[T]]: ...
    def __get__(self, client: Any, owner: type) -> Any:
        if client is None:
            return self
        pager = AsyncPaginator if isinstance(client, AsyncClient) else Paginator
        return _bound(self.build, functools.partial(pager, client))


def _bound(build: Callable[P, Call[Any]], run: Callable[[Call[Any]], Any]) -> Callable[P, Any]:
    @functools.wraps(build)
    def method(*args: P.args, **kwargs: P.kwargs) -> Any:
        return run(build(*args, **kwargs))

    return method


class _Routes:
    """The API's routes, shared by both clients (`continuum.sdk.routes` documents each)."""

    instance: str | None

    me = _Endpoint(routes.me)
    emit = _Endpoint(routes.emit)
    messages = _Listing(routes.messages)
    search = _Listing(routes.search)
    context = _Endpoint(routes.context)
    cron_reports = _Listing(routes.cron_reports)
    cron_names = _Endpoint(routes.cron_names)
    memories = _Listing(routes.memories)
    memory_kinds = _Endpoint(routes.memory_kinds)
    store_memory = _Endpoint(routes.store_memory)
    update_memory = _Endpoint(routes.update_memory)
    forget_memory = _Endpoint(routes.forget_memory)
    mark_private = _Endpoint(routes.mark_private)
    edit_memory = _Endpoint(routes.edit_memory)
    conflicts = _Listing(routes.conflicts)
    settle_conflict = _Endpoint(routes.settle_conflict)
    status = _Endpoint(routes.status)
    forget_user = _Endpoint(routes.forget_user)
    export_archive = _Endpoint(routes.export_archive)
    import_archive = _Endpoint(routes.import_archive)
    preferences = _Listing(routes.preferences)
    preference = _Endpoint(routes.preference)
    set_preference = _Endpoint(routes.set_preference)
    tasks = _Listing(routes.tasks)
    create_task = _Endpoint(routes.create_task)
    set_task_status = _Endpoint(routes.set_task_status)
    task_suggestions = _Listing(routes.task_suggestions)
    confirm_task = _Endpoint(routes.confirm_task)
    dismiss_task = _Endpoint(routes.dismiss_task)
    sessions = _Listing(routes.sessions)
    active_sessions = _Endpoint(routes.active_sessions)
    session = _Endpoint(routes.session)
    session_turns = _Listing(routes.session_turns)
    erase_session_turns = _Endpoint(routes.erase_session_turns)
    send_handoff = _Endpoint(routes.send_handoff)
    check_handoff = _Endpoint(routes.check_handoff)
    sync_problems = _Listing(routes.sync_problems)
    put_document = _Endpoint(routes.put_document)
    get_document = _Endpoint(routes.get_document)
    delete_document = _Endpoint(routes.delete_document)
    search_documents = _Endpoint(routes.search_documents)
    document_namespaces = _Endpoint(routes.document_namespaces)
    metrics = _Endpoint(routes.metrics)


def _options(token: str | None, timeout: float) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return {"headers": headers, "timeout": timeout}


class Client(_Routes):
    """The HTTP API, synchronously. `instance` picks one namespace of a token that covers
    several; `http` replaces the httpx client (its base URL and headers are then its own)."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        token: str | None = None,
        *,
        instance: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        retries: Retries | None = None,
        http: httpx.Client | None = None,
    ) -> None:
        self.instance = instance
        self.retries = retries or Retries()
        self._owned = http is None
        self.http = http or httpx.Client(base_url=base_url, **_options(token, timeout))

    def send(self, call: Call[T]) -> T:
        """Send one request, retried as `retries` says; its result, or the error raised."""
        attempt = 0
        while True:
            try:
                response = self.http.request(
                    call.method, call.path, params=call.query(self.instance), **call.payload()
                )
            except RETRIED_FAILURES as exc:
                wait = self.retries.wait(attempt, None)
                if wait is None:
                    raise ConnectionFailed(f"cannot reach {self.http.base_url}: {exc}") from exc
            else:
                result = outcome(call, response, attempt, self.retries)
                if not isinstance(result, Wait):
                    return result
                wait = result.seconds
            time.sleep(wait)
            attempt += 1

    def close(self) -> None:
        if self._owned:
            self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_Routes):
    """The HTTP API for asyncio: the methods of `Client`, awaited (lists: `async for`)."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        token: str | None = None,
        *,
        instance: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        retries: Retries | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.instance = instance
        self.retries = retries or Retries()
        self._owned = http is None
        self.http = http or httpx.AsyncClient(base_url=base_url, **_options(token, timeout))

    async def send(self, call: Call[T]) -> T:
        """`Client.send`, awaited."""
        attempt = 0
        while True:
            try:
                response = await self.http.request(
                    call.method, call.path, params=call.query(self.instance), **call.payload()
                )
            except RETRIED_FAILURES as exc:
                wait = self.retries.wait(attempt, None)
                if wait is None:
                    raise ConnectionFailed(f"cannot reach {self.http.base_url}: {exc}") from exc
            else:
                result = outcome(call, response, attempt, self.retries)
                if not isinstance(result, Wait):
                    return result
                wait = result.seconds
            await asyncio.sleep(wait)
            attempt += 1

    async def close(self) -> None:
        if self._owned:
            await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


__all__ = ["AsyncClient", "AsyncPaginator", "Client", "Paginator"]
