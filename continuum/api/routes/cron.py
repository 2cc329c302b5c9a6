"""Cron reports (R74, R77): by day or date range, by cron name, searchable."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from continuum.api.auth import ScopeDep
from continuum.api.pagination import Page
from continuum.api.params import ListingDep
from continuum.api.schemas import CronReportOut
from continuum.recall import listings

router = APIRouter(prefix="/v1/cron-reports", tags=["cron reports"])


@router.get("")
def list_cron_reports(
    scope: ScopeDep,
    listing: ListingDep,
    cron_name: Annotated[str | None, Query(max_length=200)] = None,
    q: Annotated[str | None, Query(max_length=500, description="Full-text query.")] = None,
) -> Page[CronReportOut]:
    """Cron reports, newest run first."""
    rows = listings.cron_reports(scope.namespaces, listing.window, cron_name, q)
    return listing.page.page([CronReportOut.model_validate(row) for row in rows])


@router.get("/names")
def list_cron_names(scope: ScopeDep) -> list[str]:
    """Every cron name with a report (for filters)."""
    return listings.cron_names(scope.namespaces)
