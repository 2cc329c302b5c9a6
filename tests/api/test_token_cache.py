"""Authentication without Postgres per request: a token an API process has checked is
answered from memory, a revocation (from any process) is refused on the very next request,
and `last_used_at` is written once a minute, not per request."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from continuum.api import create_app
from continuum.security import tokens
from continuum.security.tokens import create_token, revoke_token
from continuum.store.engine import session_scope, statements_run


@pytest.fixture
def api(db: Any) -> Iterator[TestClient]:
    tokens.token_cache.clear()
    with TestClient(create_app()) as client:
        yield client


def _me(api: TestClient, token: str) -> int:
    return api.get("/v1/me", headers={"Authorization": f"Bearer {token}"}).status_code


def _last_used(token_id: int) -> Any:
    with session_scope() as db:
        return db.scalar(text("SELECT last_used_at FROM api_tokens WHERE id = :i"), {"i": token_id})


def test_a_checked_token_is_answered_without_a_database_round_trip(api: TestClient) -> None:
    token, _ = create_token(["pearl"])
    assert _me(api, token) == 200
    with statements_run() as sent:
        assert [_me(api, token) for _ in range(5)] == [200] * 5
    assert sent == []
    assert _me(api, "ctm_unknown") == 401  # a wrong token is still looked up, and refused


def test_a_token_revoked_by_another_process_is_refused_on_the_next_request(
    api: TestClient,
) -> None:
    token, info = create_token(["pearl"])
    other, _ = create_token(["pearl"])
    assert _me(api, token) == 200 and _me(api, other) == 200  # both remembered now
    revoked = subprocess.run(
        [sys.executable, "-m", "continuum.cli.main", "tokens", "revoke", str(info.id)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert revoked.returncode == 0, revoked.stderr
    assert _me(api, token) == 401
    assert _me(api, other) == 200  # read again from Postgres: still live


def test_a_token_revoked_in_this_process_is_refused_at_once(api: TestClient) -> None:
    token, info = create_token(["pearl"])
    assert _me(api, token) == 200
    assert revoke_token(info.id)
    assert _me(api, token) == 401


def test_last_used_is_written_once_a_minute_not_per_request(
    api: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    token, info = create_token(["pearl"])
    assert _me(api, token) == 200
    first = _last_used(info.id)
    assert first is not None
    with statements_run() as sent:
        for _ in range(20):
            assert _me(api, token) == 200
    assert not [s for s in sent if "api_tokens" in s.sql] and _last_used(info.id) == first
    monkeypatch.setattr(tokens, "LAST_USED_RESOLUTION", timedelta(0))
    with statements_run() as sent:
        assert _me(api, token) == 200
    assert len([s for s in sent if s.sql.startswith("UPDATE api_tokens")]) == 1
    assert _last_used(info.id) > first
