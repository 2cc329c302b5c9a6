"""The narrative files keep the tenant's local days: a session that ends late on a UTC
evening is filed under the next day's note for a tenant in Tokyo, and MEMORY.md dates its
lines on the same clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from continuum.maintenance.workspace import render_memory_md
from continuum.pipeline import narrative
from continuum.store.engine import session_scope
from tests.support.local_days import LATE_TUESDAY_UTC
from tests.support.memories import NOW, remember


def test_a_session_is_filed_under_the_tenants_local_day(tmp_path: Path, settings_env: Any) -> None:
    settings_env(workspace_dir=tmp_path, tenant_timezones="tokyo=Asia/Tokyo")
    for namespace in ("tokyo", "pearl"):
        narrative.record_session(namespace, LATE_TUESDAY_UTC, "voice", "Booked the ferry",
                                 "Booked the ferry to Naoshima.")  # fmt: skip
    tokyo = tmp_path / "tokyo"
    assert [p.name for p in (tokyo / "memory").iterdir()] == ["2026-11-25.md"]
    note = (tokyo / "memory" / "2026-11-25.md").read_text()
    assert note.startswith("# 2026-11-25\n\n## 08:30 · voice\n\nBooked the ferry to Naoshima.")
    assert (
        tokyo / "activity-log.md"
    ).read_text() == "[2026-11-25 08:30] [voice] — Booked the ferry\n"
    utc = tmp_path / "pearl"
    assert [p.name for p in (utc / "memory").iterdir()] == ["2026-11-24.md"]
    assert (utc / "activity-log.md").read_text().startswith("[2026-11-24 23:30]")


def test_memory_md_dates_a_memory_on_the_tenants_clock(db: Any, settings_env: Any) -> None:
    settings_env(tenant_timezones="tokyo=Asia/Tokyo")
    late = (NOW - LATE_TUESDAY_UTC).total_seconds() / 86400  # negative: after NOW
    for namespace in ("tokyo", "pearl"):
        remember("Decided to take the Naoshima ferry.", "decision", namespace=namespace,
                 days_ago=late, importance=9)  # fmt: skip
    with session_scope() as db_session:
        tokyo = render_memory_md(db_session, "tokyo", 10)
        utc = render_memory_md(db_session, "pearl", 10)
    assert "- Decided to take the Naoshima ferry. (2026-11-25)" in tokyo
    assert "- Decided to take the Naoshima ferry. (2026-11-24)" in utc
