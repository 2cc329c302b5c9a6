"""Local days: a tenant's days are those of its time zone (CONTINUUM_TENANT_TIMEZONES), and a
request's `tz` overrides it. "Yesterday" in a query, the block's day headings, a day's
messages and a day's cron reports all follow it. Real ingest, embeddings and Postgres."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from continuum.pipeline.outbox import embed_pending
from continuum.recall.context import context
from continuum.recall.namespace_queries import day_messages
from continuum.recall.search import search
from continuum.sync.cron import cron_reports
from tests.support.local_days import LATE_TUESDAY_UTC, cron_report, said

WEDNESDAY_EVENING_UTC = datetime(2026, 11, 25, 20, 0, tzinfo=UTC)
ASKED = datetime(2026, 11, 26, 1, 0, tzinfo=UTC)  # Thursday: 10:00 in Tokyo, 01:00 in UTC
WEDNESDAY = date(2026, 11, 25)
NAOSHIMA = "I booked the ferry to Naoshima for the art museum trip."
SHODOSHIMA = "I booked the ferry to Shodoshima for the olive farm visit."
YESTERDAY = "which ferry did I book yesterday?"


@pytest.fixture
def ferries(db: Any, settings_env: Any) -> None:
    """The same two turns for `tokyo` (Asia/Tokyo) and `pearl` (UTC, the default)."""
    settings_env(tenant_timezones="tokyo=Asia/Tokyo")
    for namespace in ("tokyo", "pearl"):
        said(namespace, "naoshima", NAOSHIMA, LATE_TUESDAY_UTC)
        said(namespace, "shodoshima", SHODOSHIMA, WEDNESDAY_EVENING_UTC)  # Thu 05:00 in Tokyo
    embed_pending()


def top(namespace: str, query: str, **options: Any) -> tuple[list[str], bool]:
    """The best hit's source turns, and whether the query's time window lifted it."""
    best = search(namespace, query, limit=3, sources=("message",), now=ASKED, **options)[0]
    return best.source_message_ids, any("in_window" in part for part in best.parts)


def heading_of(block: str, needle: str) -> str:
    """The day heading the first line holding `needle` stands under."""
    lines = block.splitlines()
    at = next(i for i, line in enumerate(lines) if needle in line and line.startswith("- "))
    return next(line for line in reversed(lines[:at]) if line.startswith("### "))


def test_yesterday_is_the_tenants_local_yesterday(ferries: None) -> None:
    """Asked on Thursday morning in Tokyo, "yesterday" is Wednesday there, which holds the
    turn said at 23:30 UTC on Tuesday; for a UTC tenant asked at the same instant that turn
    is the day before yesterday, and yesterday holds the other."""
    assert top("tokyo", YESTERDAY) == (["naoshima"], True)
    assert top("pearl", YESTERDAY) == (["shodoshima"], True)
    assert top("pearl", "which ferry did I book the day before yesterday?") == (["naoshima"], True)


def test_the_block_heads_a_turn_with_its_local_day(ferries: None) -> None:
    tokyo = context("tokyo", "ferry booking", 800, user_id="jason", now=ASKED).block
    assert tokyo.startswith("# Memory context (now 2026-11-26 Thu 10:00 Asia/Tokyo)")
    assert heading_of(tokyo, "Naoshima") == "### 2026-11-25 (Wed, yesterday)"
    assert heading_of(tokyo, "Shodoshima") == "### 2026-11-26 (Thu, today)"
    utc = context("pearl", "ferry booking", 800, user_id="jason", now=ASKED).block
    assert utc.startswith("# Memory context (now 2026-11-26 Thu 01:00 UTC)")
    assert heading_of(utc, "Naoshima") == "### 2026-11-24 (Tue, 2 days ago)"
    assert heading_of(utc, "Shodoshima") == "### 2026-11-25 (Wed, yesterday)"


def test_a_day_is_the_tenants_local_day(ferries: None) -> None:
    assert [m.message_id for m in day_messages("tokyo", WEDNESDAY)] == ["naoshima"]
    assert [m.message_id for m in day_messages("pearl", WEDNESDAY)] == ["shodoshima"]
    for namespace in ("tokyo", "pearl"):
        cron_report(namespace, "cron-1", LATE_TUESDAY_UTC)
    assert [r.session_id for r in cron_reports("tokyo", WEDNESDAY)] == ["cron-1"]
    assert cron_reports("tokyo", WEDNESDAY - timedelta(days=1)) == []
    assert cron_reports("pearl", WEDNESDAY) == []


def test_a_requests_time_zone_overrides_the_tenants(ferries: None) -> None:
    assert top("pearl", YESTERDAY, tz="Asia/Tokyo") == (["naoshima"], True)
    assert top("tokyo", YESTERDAY, tz="UTC") == (["shodoshima"], True)
    block = context("pearl", "ferry booking", 800, user_id="jason", now=ASKED, tz="Asia/Tokyo")
    assert heading_of(block.block, "Naoshima") == "### 2026-11-25 (Wed, yesterday)"
    assert [m.message_id for m in day_messages("pearl", WEDNESDAY, tz="Asia/Tokyo")] == ["naoshima"]
    assert [m.message_id for m in day_messages("tokyo", WEDNESDAY, tz="UTC")] == ["shodoshima"]


def test_an_unknown_time_zone_is_refused_naming_tz(db: Any) -> None:
    refused = "tz: unknown time zone 'Mars/Olympus': give an IANA name"
    with pytest.raises(ValueError, match=refused):
        context("pearl", "ferry", 400, tz="Mars/Olympus")
    with pytest.raises(ValueError, match=refused):
        search("pearl", YESTERDAY, tz="Mars/Olympus")
    with pytest.raises(ValueError, match=refused):
        day_messages("pearl", WEDNESDAY, tz="Mars/Olympus")
    with pytest.raises(ValueError, match=refused):
        cron_reports("pearl", WEDNESDAY, tz="Mars/Olympus")
