"""The Python client of Continuum's HTTP API (docs/api.md): `Client` and `AsyncClient` on
httpx, every route a typed method, lists as iterators over their pages, errors as exceptions
naming the refused fields, 429/503 retried after `Retry-After`.

    from continuum.sdk import Client

    with Client("http://127.0.0.1:8000", token="ctm_...") as client:
        for hit in client.search("garden contractor", limit=5):
            print(hit.score, hit.content)

It imports only httpx, pydantic and these modules: no database, broker or model code (the
layer contract in pyproject.toml holds it to that). `MemoryClient`
(`continuum.contract.client`) remains the producer that writes to the broker directly.
"""

from continuum.sdk.calls import Retries
from continuum.sdk.client import AsyncClient, AsyncPaginator, Client, Paginator
from continuum.sdk.errors import (
    APIError,
    BadRequest,
    Conflict,
    ConnectionFailed,
    ContinuumError,
    FieldError,
    Forbidden,
    InvalidRequest,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServiceUnavailable,
    Unauthorized,
)

__all__ = [
    "APIError",
    "AsyncClient",
    "AsyncPaginator",
    "BadRequest",
    "Client",
    "Conflict",
    "ConnectionFailed",
    "ContinuumError",
    "FieldError",
    "Forbidden",
    "InvalidRequest",
    "NotFound",
    "Paginator",
    "PayloadTooLarge",
    "RateLimited",
    "Retries",
    "ServiceUnavailable",
    "Unauthorized",
]
