"""Reminders and commitments that wait for the user's yes (CONTINUUM_CONFIRM_TASKS): with the
setting on, a commitment turn leaves a suggestion and no task, shown in the context block;
confirming makes exactly one task, dismissing none; off, nothing changes. Through the
library, the HTTP API, the CLI and the MCP server, on real Postgres and Redis."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from sqlalchemy import select
from typer.testing import CliRunner

from continuum.api.app import create_app
from continuum.cli.memory import app as cli
from continuum.domain.records import TaskView
from continuum.memory.user_tasks import (
    SuggestionAnswered,
    answer_suggestion,
    list_tasks,
    task_view,
)
from continuum.pipeline.ingest import ingest_batch
from continuum.recall.context import context
from continuum.recall.items import SUGGESTED_TASKS
from continuum.security.tokens import create_token
from continuum.store.engine import session_scope
from continuum.store.models import UserTask
from tests.support.events import turn

COMMITMENT = "I'll call the pharmacy on Monday."
TITLE = "User committed to call the pharmacy on Monday"
PASSPORT = "I'll renew my passport next week."


def said(message_id: str = "m1", at: float = 0, namespace: str = "pearl") -> None:
    ingest_batch([turn(COMMITMENT, message_id=message_id, at=at, namespace=namespace)])


def suggestions(namespace: str = "pearl") -> list[TaskView]:
    return list_tasks(namespace, suggested=True)


def rows() -> list[tuple[str, str]]:
    """(title, status as shown) of every row of `tasks`, suggestions included."""
    with session_scope() as db:
        query = select(UserTask).order_by(UserTask.id)
        return [(t.title, t.status) for t in map(task_view, db.scalars(query))]


def test_off_a_commitment_becomes_a_task_at_once(db: Any) -> None:
    said()
    assert [(t.title, t.status) for t in list_tasks("pearl")] == [(TITLE, "pending")]
    assert suggestions() == []
    assert SUGGESTED_TASKS not in context("pearl", "", 800, user_id="jason").block


def test_on_a_commitment_waits_as_a_suggestion_until_confirmed_once(
    db: Any, settings_env: Any
) -> None:
    settings_env(confirm_tasks="true")
    said()
    said(message_id="m9", at=50)  # said again: the same suggestion, not a second
    assert list_tasks("pearl", active_only=False) == []  # no task
    [suggested] = suggestions()
    assert (suggested.title, suggested.status) == (TITLE, "suggested")

    block = context("pearl", "", 800, user_id="jason").block
    assert f"## {SUGGESTED_TASKS}\n- [{suggested.task_id[:8]}] {TITLE}" in block
    assert "## Active tasks" not in block

    confirmed = answer_suggestion("pearl", suggested.task_id[:8], confirm=True)
    assert (confirmed.task_id, confirmed.status) == (suggested.task_id, "pending")
    again = answer_suggestion("pearl", suggested.task_id, confirm=True)  # a retried answer
    assert again.status == "pending"
    assert [(t.title, t.status) for t in list_tasks("pearl")] == [(TITLE, "pending")]
    assert rows() == [(TITLE, "pending")]  # exactly one task
    assert suggestions() == []
    with pytest.raises(SuggestionAnswered, match="is a task already"):
        answer_suggestion("pearl", suggested.task_id, confirm=False)
    assert "## Active tasks" in context("pearl", "", 800, user_id="jason").block


def test_the_assistant_confirming_a_reminder_joins_its_suggestion(
    db: Any, settings_env: Any
) -> None:
    settings_env(confirm_tasks="true")
    asked = "I have a doctor's appointment on Tuesday at 10, remind me the day before."
    confirmed = "I'll remind you on Monday about the doctor's appointment on Tuesday at 10."
    ingest_batch([turn(asked, message_id="m1")])
    ingest_batch([turn(confirmed, role="assistant", message_id="m2", at=5)])
    [suggested] = suggestions()
    assert suggested.title.startswith("Remind user on Monday about the doctor's appointment")
    assert sum(tag.startswith("memory:") for tag in suggested.tags) == 2
    assert list_tasks("pearl", active_only=False) == []


def test_a_dismissed_suggestion_is_never_a_task(db: Any, settings_env: Any) -> None:
    settings_env(confirm_tasks_tenants="pearl")  # this tenant only
    said()
    said(message_id="a1", namespace="acme")
    assert [t.title for t in list_tasks("acme")] == [TITLE]  # other tenants: as before
    [suggested] = suggestions()
    assert answer_suggestion("pearl", suggested.task_id, confirm=False).status == "dismissed"
    assert list_tasks("pearl", active_only=False) == [] and suggestions() == []
    with pytest.raises(SuggestionAnswered, match="was dismissed"):
        answer_suggestion("pearl", suggested.task_id, confirm=True)
    assert rows() == [(TITLE, "dismissed"), (TITLE, "pending")]  # acme's is its own
    assert SUGGESTED_TASKS not in context("pearl", "", 800, user_id="jason").block


@pytest.fixture
def api(db: Any) -> Iterator[TestClient]:
    with TestClient(create_app()) as client:
        token, _ = create_token(["pearl"])
        client.headers["Authorization"] = f"Bearer {token}"
        yield client


def test_the_api_lists_confirms_and_dismisses(api: TestClient, settings_env: Any) -> None:
    settings_env(confirm_tasks="true")
    said()
    ingest_batch([turn(PASSPORT, message_id="m3", at=70)])
    listed = api.get("/v1/tasks/suggestions").json()["items"]
    assert [t["status"] for t in listed] == ["suggested", "suggested"]
    first, second = (t["task_id"] for t in listed)
    assert api.post(f"/v1/tasks/{first}/confirm").json()["status"] == "pending"
    assert api.post(f"/v1/tasks/{second}/dismiss").json()["status"] == "dismissed"
    assert api.post(f"/v1/tasks/{second}/confirm").status_code == 409
    assert api.post("/v1/tasks/ffffffff/confirm").status_code == 404
    assert api.get("/v1/tasks/suggestions").json()["items"] == []
    assert [t["task_id"] for t in api.get("/v1/tasks?active_only=false").json()["items"]] == [first]


def test_the_cli_lists_confirms_and_dismisses(db: Any, settings_env: Any) -> None:
    runner = CliRunner()
    settings_env(confirm_tasks="true")
    said()
    listed = runner.invoke(cli, ["tasks", "suggestions", "-n", "pearl", "--json"])
    [suggested] = json.loads(listed.stdout)
    prefix = suggested["task_id"][:8]
    done = runner.invoke(cli, ["tasks", "confirm", prefix, "-n", "pearl", "--json"])
    assert json.loads(done.stdout)[0]["status"] == "pending"
    refused = runner.invoke(cli, ["tasks", "dismiss", prefix, "-n", "pearl"])
    assert refused.exit_code == 2 and "is a task already" in refused.stderr
    assert json.loads(runner.invoke(cli, ["tasks", "list", "-n", "pearl", "--json"]).stdout)


def test_an_agent_answers_through_the_mcp_server(db: Any, settings_env: Any) -> None:
    settings_env(confirm_tasks="true")
    said()
    ingest_batch([turn(PASSPORT, message_id="m3", at=70)])
    env = {**os.environ, "CONTINUUM_MCP_NAMESPACE": "pearl", "CONTINUUM_MCP_USER": "jason"}
    server = StdioServerParameters(command=sys.executable,
                                   args=["-m", "continuum.cli.main", "mcp"], env=env)  # fmt: skip
    pharmacy, passport = sorted(suggestions(), key=lambda t: t.title != TITLE)

    async def session() -> None:
        async with Client(server) as client:
            block = (await client.call_tool("recall", {"seed": ""})).content[0].text
            assert SUGGESTED_TASKS in block and f"[{pharmacy.task_id[:8]}]" in block
            confirmed = await client.call_tool("confirm_task", {"task_id": pharmacy.task_id[:8]})
            assert confirmed.structured_content["status"] == "pending"
            dismissed = await client.call_tool("dismiss_task", {"task_id": passport.task_id})
            assert dismissed.structured_content["status"] == "dismissed"
            late = await client.call_tool("confirm_task", {"task_id": passport.task_id})
            assert late.is_error and "was dismissed" in late.content[0].text

    anyio.run(session)
    assert [t.title for t in list_tasks("pearl", active_only=False)] == [TITLE]
