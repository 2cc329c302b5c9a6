"""Query parameters shared by list endpoints: the page and the date range (`since`, `until`,
or one `day`). Dates without a zone are read as UTC."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated

from fastapi import Depends, Query

from continuum.api.errors import field_error
from continuum.api.pagination import PageDep, PageParams
from continuum.recall.listings import Window


@dataclass(frozen=True)
class Listing:
    """A page of a list endpoint and the rows to fetch for it."""

    page: PageParams
    window: Window


def _utc(value: datetime | None) -> datetime | None:
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def listing(
    page: PageDep,
    since: Annotated[datetime | None, Query(description="From this time (inclusive).")] = None,
    until: Annotated[datetime | None, Query(description="Before this time (exclusive).")] = None,
    day: Annotated[date | None, Query(description="One UTC day (instead of since/until).")] = None,
) -> Listing:
    if day is not None:
        if since or until:
            raise field_error(("query", "day"), "give either day or since/until, not both")
        since = datetime.combine(day, time.min, tzinfo=UTC)
        until = since + timedelta(days=1)
    since, until = _utc(since), _utc(until)
    if since and until and until <= since:
        raise field_error(("query", "until"), "must be after since")
    return Listing(page, Window(limit=page.fetch, offset=page.offset, since=since, until=until))


ListingDep = Annotated[Listing, Depends(listing)]
