"""Query parameters shared by endpoints: the page, the date range (`since`, `until`, or one
`day`) and the time zone they are read in (`tz`, else the tenant's: a `day` is a local day,
and dates without a zone are local times)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, tzinfo
from typing import Annotated

from fastapi import Depends, Query

from continuum.api.auth import ScopeDep
from continuum.api.errors import field_error
from continuum.api.pagination import PageDep, PageParams
from continuum.config import get_settings, time_zone
from continuum.recall.listings import Window
from continuum.recall.timeparse import day_span


async def time_zone_param(
    tz: Annotated[
        str | None,
        Query(
            max_length=64,
            description="IANA time zone (e.g. Europe/Paris) of `day`, of dates without a zone "
            "and of time phrases such as 'yesterday'; default: the tenant's.",
        ),
    ] = None,
) -> tzinfo | None:
    """The request's `tz` (None: not given); 422 naming `query.tz` when it is no zone."""
    if tz is None:
        return None
    try:
        return time_zone(tz)
    except ValueError as exc:
        raise field_error(("query", "tz"), str(exc)) from None


TimeZoneDep = Annotated[tzinfo | None, Depends(time_zone_param)]


@dataclass(frozen=True)
class Listing:
    """A page of a list endpoint, the rows to fetch for it and the zone its days are in
    (None: the request's tenants keep different ones and it named none)."""

    page: PageParams
    window: Window
    zone: tzinfo | None


def _days_zone(namespaces: tuple[str, ...], tz: tzinfo | None) -> tzinfo | None:
    """`tz`, else the one time zone the tenants share (None if they differ)."""
    if tz is not None:
        return tz
    settings = get_settings()
    zones = {str(zone): zone for zone in map(settings.zone_for, namespaces)}
    return next(iter(zones.values())) if len(zones) == 1 else None


def _in_zone(value: datetime | None, zone: tzinfo) -> datetime | None:
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=zone)


async def listing(
    page: PageDep,
    scope: ScopeDep,
    tz: TimeZoneDep,
    since: Annotated[datetime | None, Query(description="From this time (inclusive).")] = None,
    until: Annotated[datetime | None, Query(description="Before this time (exclusive).")] = None,
    day: Annotated[
        date | None, Query(description="One day of `tz` or the tenant's (instead of since/until).")
    ] = None,
) -> Listing:
    if day is not None and (since or until):
        raise field_error(("query", "day"), "give either day or since/until, not both")
    zone = _days_zone(scope.namespaces, tz)
    if day is not None or any(t is not None and t.tzinfo is None for t in (since, until)):
        if zone is None:
            raise field_error(
                ("query", "tz"),
                f"required: the namespaces {', '.join(scope.namespaces)} keep different time "
                "zones; give tz (an IANA name), or instance to read one",
            )
        if day is not None:
            since, until = day_span(day, zone)
        since, until = _in_zone(since, zone), _in_zone(until, zone)
    if since and until and until <= since:
        raise field_error(("query", "until"), "must be after since")
    window = Window(limit=page.fetch, offset=page.offset, since=since, until=until)
    return Listing(page, window, zone)


ListingDep = Annotated[Listing, Depends(listing)]
