"""The HTTP API reads days in the tenant's time zone, or in the request's `tz`: a `day` of
messages or cron reports is a local day, dates without a zone are local times, the context
block names its clock, and an unknown zone is a 422 naming `query.tz`. The real app against
the real servers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from continuum.api import create_app
from continuum.security.tokens import create_token
from tests.support.local_days import LATE_TUESDAY_UTC, cron_report, said


@pytest.fixture
def api(db: Any, settings_env: Any) -> Iterator[TestClient]:
    """`tokyo` (Asia/Tokyo) and `pearl` (UTC) each with a turn and a cron report said at
    23:30 UTC on Tuesday."""
    settings_env(tenant_timezones="tokyo=Asia/Tokyo")
    for namespace in ("tokyo", "pearl"):
        said(namespace, "late", "I booked the ferry to Naoshima.", LATE_TUESDAY_UTC)
        cron_report(namespace, "cron-1", LATE_TUESDAY_UTC)
    with TestClient(create_app()) as client:
        yield client


def bearer(*namespaces: str) -> dict[str, str]:
    token, _ = create_token(list(namespaces))
    return {"Authorization": f"Bearer {token}"}


def listed(api: TestClient, path: str, headers: dict[str, str]) -> list[str]:
    response = api.get(path, headers=headers)
    assert response.status_code == 200, response.text
    return [item["namespace"] for item in response.json()["items"]]


def test_a_day_is_the_tenants_local_day_unless_tz_says(api: TestClient) -> None:
    tokyo, pearl = bearer("tokyo"), bearer("pearl")
    for path in ("/v1/messages", "/v1/cron-reports"):
        assert listed(api, f"{path}?day=2026-11-25", tokyo) == ["tokyo"]
        assert listed(api, f"{path}?day=2026-11-24", tokyo) == []
        assert listed(api, f"{path}?day=2026-11-24", pearl) == ["pearl"]
        assert listed(api, f"{path}?day=2026-11-25&tz=Asia/Tokyo", pearl) == ["pearl"]
        assert listed(api, f"{path}?day=2026-11-25&tz=UTC", tokyo) == []
    # A time without a zone is a local time too: 08:00 in Tokyo is before the turn.
    assert listed(api, "/v1/messages?since=2026-11-25T08:00", tokyo) == ["tokyo"]
    assert listed(api, "/v1/messages?since=2026-11-25T09:00", tokyo) == []


def test_tenants_of_different_zones_need_tz_for_a_day(api: TestClient) -> None:
    both = bearer("tokyo", "pearl")
    mixed = api.get("/v1/messages?day=2026-11-25", headers=both)
    assert mixed.status_code == 422
    [error] = mixed.json()["detail"]
    assert error["loc"] == ["query", "tz"] and "give tz" in error["msg"]
    # One zone for both: the turn each said at 23:30 UTC on Tuesday is on Wednesday in Tokyo.
    assert sorted(listed(api, "/v1/messages?day=2026-11-25&tz=Asia/Tokyo", both)) == [
        "pearl",
        "tokyo",
    ]
    assert listed(api, "/v1/messages?day=2026-11-24&tz=Asia/Tokyo", both) == []
    assert listed(api, "/v1/messages?day=2026-11-24&instance=pearl", both) == ["pearl"]
    assert sorted(listed(api, "/v1/messages", both)) == ["pearl", "tokyo"]  # no day: no zone


def test_the_context_block_is_on_the_tenants_clock_or_tz(api: TestClient) -> None:
    def header(namespace: str, query: str = "") -> str:
        response = api.get(f"/v1/context?seed_text=ferry{query}", headers=bearer(namespace))
        assert response.status_code == 200, response.text
        return str(response.json()["block"]).splitlines()[0]

    assert header("tokyo").endswith(" Asia/Tokyo)")
    assert header("pearl").endswith(" UTC)")
    assert header("pearl", "&tz=America/New_York").endswith(" America/New_York)")


@pytest.mark.parametrize(
    "path",
    ["/v1/context?tz=Mars/Olympus", "/v1/search?q=ferry&tz=Mars/Olympus",
     "/v1/messages?day=2026-11-25&tz=Mars/Olympus", "/v1/cron-reports?tz=Mars/Olympus"],
)  # fmt: skip
def test_an_unknown_zone_is_a_422_naming_tz(api: TestClient, path: str) -> None:
    response = api.get(path, headers=bearer("pearl"))
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["query", "tz"]
    assert error["msg"].startswith("unknown time zone 'Mars/Olympus': give an IANA name")
