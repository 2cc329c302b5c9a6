"""How the HTTP client talks: a request described once (`Call`), the retry rule (429 and 503
after `Retry-After`, else exponential backoff; a connection that never opened), and reading an
answer into its typed result or the error that names the refused fields. The sync and async
clients (`continuum.sdk.client`) share all of it and differ only in how they wait."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from functools import cache
from typing import Any, Generic, TypeVar

import httpx
from pydantic import TypeAdapter

from continuum.sdk.errors import api_error

T = TypeVar("T")
RETRIED_STATUSES = (429, 503)
# The request never reached the server, so even a write is safe to send again.
RETRIED_FAILURES = (httpx.ConnectError, httpx.ConnectTimeout)


@cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind)


def parse(kind: Any) -> Callable[[Any], Any]:
    """A reader of JSON into `kind` (a model, `list[Model]`, `Model | None`, ...)."""
    return _adapter(kind).validate_python


def _param(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_param(item) for item in value]
    return value


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request: method, path (relative to the base URL), query, body, and how its answer
    is read. `absent`: a 404 answers None instead of raising `NotFound`."""

    method: str
    path: str
    result: Callable[[Any], T]
    params: Mapping[str, Any] = field(default_factory=dict)
    body: Any = None
    absent: bool = False
    text: bool = False  # the answer is text (Prometheus metrics), not JSON
    content: bytes | None = None  # a body sent as it is (an archive), instead of `body`

    def payload(self) -> dict[str, Any]:
        """The request's body: JSON, or `content` as JSON Lines."""
        if self.content is None:
            return {"json": self.body}
        return {"content": self.content, "headers": {"Content-Type": "application/x-ndjson"}}

    def query(self, instance: str | None) -> dict[str, Any] | None:
        """The query parameters to send: set ones only, with the client's instance."""
        params = {name: _param(value) for name, value in self.params.items() if value is not None}
        if instance is not None and "?" not in self.path:  # a next link carries its own
            params.setdefault("instance", instance)
        return params or None

    def read(self, response: httpx.Response) -> T:
        """The result of a successful answer (or of a 404 for an `absent` call)."""
        if response.status_code == 404 and self.absent:
            return self.result(None)
        if self.text:
            return self.result(response.text)
        return self.result(response.json() if response.content else None)


@dataclass(frozen=True)
class Retries:
    """How often and how long to wait before sending a refused request again: `attempts`
    more times after a 429, a 503 or a connection that could not be opened, waiting what
    `Retry-After` says (up to `max_wait_s`), else `backoff_s` doubled each time."""

    attempts: int = 3
    backoff_s: float = 0.5
    max_wait_s: float = 30.0

    def wait(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before attempt `attempt + 1`; None: give up."""
        if attempt >= self.attempts:
            return None
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_wait_s)
        return min(self.backoff_s * 2**attempt, self.max_wait_s)


def retry_after(response: httpx.Response) -> float | None:
    """The `Retry-After` header in seconds (given as seconds or as an HTTP date)."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return (when - datetime.now(UTC)).total_seconds()


@dataclass(frozen=True)
class Wait:
    """Send the request again after `seconds`."""

    seconds: float


def outcome(call: Call[T], response: httpx.Response, attempt: int, retries: Retries) -> Wait | T:
    """What an answer means: the call's result, or (for a 429/503 that may be retried) how
    long to wait first. Raises the `APIError` that names the refused fields otherwise."""
    if response.is_success or (response.status_code == 404 and call.absent):
        return call.read(response)
    after = retry_after(response)
    if response.status_code in RETRIED_STATUSES:
        wait = retries.wait(attempt, after)
        if wait is not None:
            return Wait(wait)
    try:
        body = response.json()
    except ValueError:
        body = {"detail": response.text or response.reason_phrase}
    raise api_error(response.status_code, body, after)
