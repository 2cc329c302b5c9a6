"""The errors the HTTP client raises: one class per kind of refusal, each carrying the fields
the API named (`loc`, `msg`, `type` of its error body, FastAPI's shape) so a caller finds the
bad field without parsing text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FieldError:
    """One thing the API refused: where (`["body", "role"]`, `["query", "limit"]`), why."""

    loc: tuple[str | int, ...]
    msg: str
    type: str = "value_error"

    @property
    def field(self) -> str:
        """The location as one dotted name: `body.role`, `body.3.content`, `query.limit`."""
        return ".".join(str(part) for part in self.loc)

    def __str__(self) -> str:
        return f"{self.field}: {self.msg}" if self.loc else self.msg


class ContinuumError(Exception):
    """Every error of the client."""


class ConnectionFailed(ContinuumError):
    """The API could not be reached (after the retries)."""


class APIError(ContinuumError):
    """The API refused a request. `status` is the HTTP status, `errors` what it named."""

    def __init__(self, status: int, errors: list[FieldError], retry_after: float | None = None):
        self.status = status
        self.errors = errors
        self.retry_after = retry_after
        hint = _HINTS.get(status, "")
        super().__init__(f"HTTP {status}: " + "; ".join(map(str, errors)) + hint)

    @property
    def fields(self) -> list[str]:
        """The dotted names of the fields the API named."""
        return [error.field for error in self.errors if error.loc]


class BadRequest(APIError):
    """400: the body is not JSON."""


class Unauthorized(APIError):
    """401: no token, a wrong one or a revoked one."""


class Forbidden(APIError):
    """403: an event for a namespace the token does not cover."""


class NotFound(APIError):
    """404: not found, or outside the token's namespaces."""


class Conflict(APIError):
    """409: the request contradicts what is stored (a document of a forgotten user)."""


class PayloadTooLarge(APIError):
    """413: the body is over the server's limit."""


class InvalidRequest(APIError):
    """422: a field is invalid; `errors` names each."""


class RateLimited(APIError):
    """429: too many requests (retried first, after `Retry-After`)."""


class ServiceUnavailable(APIError):
    """503: Redis or the broker is unreachable (retried first, after `Retry-After`)."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    422: InvalidRequest,
    429: RateLimited,
    503: ServiceUnavailable,
}
_HINTS = {
    401: " (create a token with `continuum tokens create --namespace NS`)",
    413: " (send smaller batches)",
    503: " (the server's Redis or broker is down: retry later, `continuum check` says which)",
}


def field_errors(body: Any) -> list[FieldError]:
    """The errors of an API error body (`{"detail": [...]}` or `{"detail": "text"}`)."""
    detail = body.get("detail") if isinstance(body, dict) else body
    if isinstance(detail, list):
        return [
            FieldError(
                tuple(item.get("loc") or ()), str(item.get("msg", "")), str(item.get("type", ""))
            )
            if isinstance(item, dict)
            else FieldError((), str(item))
            for item in detail
        ]
    return [FieldError((), str(detail if detail is not None else body))]


def api_error(status: int, body: Any, retry_after: float | None = None) -> APIError:
    """The exception for an error answer."""
    return _BY_STATUS.get(status, APIError)(status, field_errors(body), retry_after)
