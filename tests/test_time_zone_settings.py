"""CONTINUUM_TIMEZONE and CONTINUUM_TENANT_TIMEZONES: checked when the settings load, with an
error naming the variable, and resolved per tenant (a request's `tz` first)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from continuum.config import ConfigError, Settings, get_settings


def test_a_tenant_has_its_zone_else_the_default(settings_env: Any) -> None:
    settings_env(timezone="Europe/Paris",
                 tenant_timezones=" alpha=Asia/Tokyo , beta = America/New_York ,")  # fmt: skip
    settings = get_settings()
    assert settings.tenant_timezones == {"alpha": "Asia/Tokyo", "beta": "America/New_York"}
    assert settings.zone_for("alpha") == ZoneInfo("Asia/Tokyo")
    assert settings.zone_for("gamma") == ZoneInfo("Europe/Paris")
    assert settings.zone_for("alpha", "UTC") == ZoneInfo("UTC")  # a request's tz wins
    assert settings.local_time("alpha").tzinfo == ZoneInfo("Asia/Tokyo")
    with pytest.raises(ValueError, match=r"^tz: unknown time zone 'Asia/Tokio'"):
        settings.zone_for("alpha", "Asia/Tokio")


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("CONTINUUM_TIMEZONE", "Mars/Olympus", "CONTINUUM_TIMEZONE: unknown time zone 'Mars/Olympus'"),
        ("CONTINUUM_TIMEZONE", "", "CONTINUUM_TIMEZONE: unknown time zone ''"),
        ("CONTINUUM_TENANT_TIMEZONES", "alpha=Europe/Pariss",
         "CONTINUUM_TENANT_TIMEZONES: unknown time zone 'Europe/Pariss'"),
        ("CONTINUUM_TENANT_TIMEZONES", "alpha:Europe/Paris",
         "CONTINUUM_TENANT_TIMEZONES: 'alpha:Europe/Paris' is not tenant=Zone/Name"),
        ("CONTINUUM_TENANT_TIMEZONES", "Alpha Team=UTC",
         "CONTINUUM_TENANT_TIMEZONES: 'Alpha Team=UTC' is not tenant=Zone/Name"),
    ],
)  # fmt: skip
def test_a_bad_zone_is_refused_when_the_settings_load(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as refused:
        Settings()
    assert str(refused.value).startswith(message)
    assert "IANA name" in str(refused.value) or "e.g. alpha=Europe/Paris" in str(refused.value)


def test_the_command_line_says_which_setting_is_wrong(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "continuum.cli.main", "messages", "day", "2026-11-25", "-n", "x"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "CONTINUUM_HOME": str(tmp_path), "CONTINUUM_TIMEZONE": "Mars/Olympus"},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "error: CONTINUUM_TIMEZONE: unknown time zone 'Mars/Olympus'" in done.stderr
    assert "Traceback" not in done.stderr
