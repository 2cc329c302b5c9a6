"""Limit/offset pagination with a `next` link, the same on every list endpoint.

Queries are asked for one row more than the page; when it comes back there is a next page
and `next` holds the relative URL that fetches it (same filters, offset moved on).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Generic, TypeVar

from fastapi import Depends, Query, Request
from pydantic import BaseModel

MAX_PAGE_SIZE = 200
MAX_OFFSET = 100_000

T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    items: list[T]
    limit: int
    offset: int
    next: str | None = None


@dataclass(frozen=True)
class PageParams:
    request: Request
    limit: int
    offset: int

    @property
    def fetch(self) -> int:
        """How many rows to ask a query for: the page and one more."""
        return self.limit + 1

    @property
    def fetch_from_start(self) -> int:
        """How many rows to ask a query without an offset for: up to this page, and one more."""
        return self.offset + self.fetch

    def page(self, rows: list[T]) -> Page[T]:
        """The page of `rows` (fetched with `fetch`, from `offset`) and its next link."""
        next_url = None
        if len(rows) > self.limit:
            url = self.request.url.include_query_params(offset=self.offset + self.limit)
            next_url = f"{url.path}?{url.query}"
        return Page[T](
            items=rows[: self.limit], limit=self.limit, offset=self.offset, next=next_url
        )

    def window(self, rows: list[T]) -> Page[T]:
        """The page of `rows` fetched with `fetch_from_start` (queries without an offset)."""
        return self.page(rows[self.offset :])


async def page_params(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE, description="Page size.")] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Rows to skip.")] = 0,
) -> PageParams:
    return PageParams(request, limit, offset)


PageDep = Annotated[PageParams, Depends(page_params)]
