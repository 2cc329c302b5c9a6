"""`continuum tokens create|list|revoke`: a token is shown once and works until revoked."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from continuum.cli.api import tokens_app
from continuum.config import ConfigError
from continuum.security.tokens import authenticate, hash_token, list_tokens

runner = CliRunner()


def test_tokens_are_created_listed_and_revoked(db: Any) -> None:
    created = runner.invoke(
        tokens_app, ["create", "-n", "pearl", "-n", "entrepreneur", "--name", "fleet", "--json"]
    )
    assert created.exit_code == 0, created.output
    token = json.loads(created.stdout)
    assert token["namespaces"] == ["pearl", "entrepreneur"] and token["token"].startswith("ctm_")
    info = authenticate(token["token"])
    assert info is not None and info.name == "fleet"
    assert token["token"] not in {t.name for t in list_tokens()}
    assert hash_token(token["token"]) != token["token"]

    listed = runner.invoke(tokens_app, ["list", "--json"])
    row = next(r for r in json.loads(listed.stdout) if r["id"] == token["id"])
    assert row["revoked_at"] is None and row["last_used_at"] is not None and "token" not in row

    assert runner.invoke(tokens_app, ["revoke", str(token["id"])]).exit_code == 0
    assert authenticate(token["token"]) is None
    again = runner.invoke(tokens_app, ["revoke", str(token["id"])])
    assert again.exit_code == 1 and "no live token" in again.stderr


def test_a_token_needs_valid_namespaces(db: Any) -> None:
    bad = runner.invoke(tokens_app, ["create", "-n", "Not Valid"])
    assert bad.exit_code == 2 and "invalid namespace" in bad.stderr
    human = runner.invoke(tokens_app, ["create", "-n", "pearl"])
    assert human.exit_code == 0 and "Shown once" in human.output


def test_api_runs_one_worker_per_core_unless_told(monkeypatch: Any) -> None:
    """`continuum api` serves with CONTINUUM_API_WORKERS processes, by default one per CPU
    core it may use (one process uses about one core); `--workers` wins over both."""
    from continuum import config
    from continuum.api import serving
    from continuum.cli.api import app as api_app
    from continuum.config import get_settings

    served: list[int] = []
    # records the worker processes it was asked for, starts none
    monkeypatch.setattr(
        serving, "serve", lambda host, port, workers, log_config: served.append(workers) or 0
    )
    monkeypatch.setattr(config, "usable_cpus", lambda: 6)
    monkeypatch.delenv("CONTINUUM_API_WORKERS", raising=False)
    monkeypatch.setenv("CONTINUUM_API_MAX_BODY_BYTES", "1048576")  # `api` sets it
    get_settings.cache_clear()
    try:
        assert runner.invoke(api_app, ["api"]).exit_code == 0
        monkeypatch.setenv("CONTINUUM_API_WORKERS", "3")
        get_settings.cache_clear()
        assert runner.invoke(api_app, ["api"]).exit_code == 0
        assert runner.invoke(api_app, ["api", "--workers", "2"]).exit_code == 0
    finally:
        get_settings.cache_clear()
    assert served == [6, 3, 2]


def test_api_worker_connections_send_without_delay() -> None:
    """The sockets `continuum api`'s worker processes listen on hand out connections with
    TCP_NODELAY (without it a kept-alive request waited 40 ms for a delayed ACK)."""
    import socket

    from continuum.api.serving import listening_socket

    for shared in (False, True):
        with listening_socket("127.0.0.1", 0, shared=shared) as server:
            server.listen()  # as each worker's server does
            with socket.create_connection(server.getsockname()[:2]):
                accepted, _ = server.accept()
                with accepted:
                    assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def test_an_address_in_use_is_refused_with_what_to_do(db: Any) -> None:
    from continuum.api.serving import listening_socket
    from continuum.cli.main import app as main_app

    with listening_socket("127.0.0.1", 0) as taken:
        taken.listen()
        port = taken.getsockname()[1]
        for workers in ("1", "2"):
            refused = runner.invoke(main_app, ["api", "--port", str(port), "--workers", workers])
            assert refused.exit_code != 0
            assert isinstance(refused.exception, ConfigError)
            assert f"cannot listen on 127.0.0.1:{port}" in str(refused.exception)
            assert "choose another --port" in str(refused.exception)


def test_a_token_in_the_query_string_never_reaches_the_access_log(db: Any, tmp_path: Any) -> None:
    """`continuum api` logs every request line; a token a client put in the query string
    (`?token=`) is written there as [redacted] (it was written whole)."""
    import sys
    from pathlib import Path

    import httpx

    from continuum.processes import spawn, stop
    from continuum.security.tokens import create_token
    from tests.support.net import answers, free_port
    from tests.support.wait import wait_for

    token, _ = create_token(["pearl"])
    port = free_port()
    log = tmp_path / "api.log"
    continuum = str(Path(sys.executable).parent / "continuum")
    server = spawn([continuum, "api", "--port", str(port), "--workers", "1"], log)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: answers(f"{base}/v1/me"), timeout=60, interval=0.2)
        refused = httpx.get(f"{base}/v1/me?token={token}&instance=pearl")
        assert refused.status_code == 401
        assert httpx.get(f"{base}/v1/me", headers={"Authorization": f"Bearer {token}"}).is_success
        wait_for(lambda: log.read_text().count("/v1/me") >= 3)
    finally:
        stop(server, timeout=10)
    written = log.read_text()
    assert token not in written and token.removeprefix("ctm_") not in written
    assert "/v1/me?token=[redacted]&instance=pearl" in written
