"""LLM accounting against the fake endpoint: one `llm_calls` row per call with its tokens and
outcome, the same figures in `/metrics` and `continuum usage`, and the daily token budget."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from typer.testing import CliRunner

from continuum.api import create_app
from continuum.cli.main import app as cli
from continuum.inference.llm import LLMBadOutput, LLMError, LLMOverBudget, LLMUnavailable
from continuum.inference.prompts.chunk import PROMPT as JUDGE
from continuum.pipeline.extraction import extract_chunk
from continuum.pipeline.ingest import ingest_batch
from continuum.store import metrics
from continuum.store.engine import session_scope
from continuum.store.models import LlmCall
from tests.support.fake_llm import FakeLLM, fake_llm_server, llm_for
from tests.support.llm_answers import CHUNK, LINES, VERDICT
from tests.support.metrics import scrape

runner = CliRunner()


@pytest.fixture
def fake(db: Any) -> Iterator[FakeLLM]:
    with fake_llm_server() as server:
        server.answer = VERDICT
        yield server


def calls() -> list[LlmCall]:
    with session_scope() as db:
        return list(db.scalars(select(LlmCall).order_by(LlmCall.id)))


def test_usage_rows_and_metrics_match_the_calls_made(fake: FakeLLM) -> None:
    llm = llm_for(fake, timeout_s=0.5)
    invalid = {**VERDICT, "importance": 42}
    llm.ask(JUDGE, LINES, namespace="pearl", session_id="s1")  # ok
    fake.answers = [invalid, VERDICT]
    llm.ask(JUDGE, LINES, namespace="pearl", session_id="s1")  # repaired
    fake.answers = [invalid, invalid]
    with pytest.raises(LLMBadOutput):
        llm.ask(JUDGE, LINES, namespace="pearl")  # fallback
    fake.mode = "error500"
    with pytest.raises(LLMUnavailable):
        llm.ask(JUDGE, LINES, namespace="opal")  # error
    fake.mode, fake.delay_s = "slow", 2.0
    with pytest.raises(LLMUnavailable):
        llm.ask(JUDGE, LINES, namespace="opal")  # timeout

    rows = calls()
    assert [(r.namespace, r.outcome, r.requests) for r in rows] == [
        ("pearl", "ok", 1),
        ("pearl", "repaired", 2),
        ("pearl", "fallback", 2),
        ("opal", "error", 1),
        ("opal", "timeout", 1),
    ]
    assert len(fake.requests) == sum(r.requests for r in rows)
    assert {(r.model, r.prompt, r.prompt_version) for r in rows} == {
        ("fake-model", "chunk_judge", "1")
    }
    assert [r.session_id for r in rows[:2]] == ["s1", "s1"]
    assert "no complete answer within 0.5s" in (rows[-1].error or "")
    assert 400 <= rows[-1].latency_ms < 1500
    prompt_tokens = sum(u["prompt_tokens"] for u in fake.usages)
    completion_tokens = sum(u["completion_tokens"] for u in fake.usages)
    assert prompt_tokens > 0 and completion_tokens > 0
    assert sum(r.prompt_tokens for r in rows) == prompt_tokens
    assert sum(r.completion_tokens for r in rows) == completion_tokens

    with TestClient(create_app()) as api:
        samples = scrape(api)
    expected = {"calls": 5, "repairs": 2, "bad_output": 1, "errors": 1, "timeouts": 1,
                "fallbacks": 3, "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens}  # fmt: skip
    assert {name: samples[(f"continuum_llm_{name}_total", ())] for name in expected} == expected

    shown = runner.invoke(cli, ["usage", "--json"])
    assert shown.exit_code == 0, shown.output
    report = json.loads(shown.stdout)
    by_tenant = {row["namespace"]: row for row in report["usage"]}
    assert by_tenant["pearl"]["calls"] == 3 and by_tenant["opal"]["calls"] == 2
    assert (by_tenant["pearl"]["repaired"], by_tenant["pearl"]["fallback"]) == (1, 1)
    assert (by_tenant["opal"]["errors"], by_tenant["opal"]["timeouts"]) == (1, 1)
    assert sum(row["prompt_tokens"] for row in report["usage"]) == prompt_tokens
    table = runner.invoke(cli, ["usage", "--since", "1h"], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "pearl" in table.stdout and "fake-model" in table.stdout
    assert runner.invoke(cli, ["usage", "--since", "tuesday"]).exit_code == 2


def test_past_the_daily_budget_only_the_deterministic_path_runs(
    fake: FakeLLM, settings_env: Any
) -> None:
    ingest_batch(CHUNK)
    settings_env(llm_daily_token_budget=50)
    first = extract_chunk("pearl", "voice-1", ["m0", "m1", "m2"], llm=llm_for(fake))
    assert first.llm_status == "stored" and sum(fake.usages[0].values()) > 50
    second = extract_chunk("pearl", "voice-1", ["m0", "m1"], llm=llm_for(fake))
    assert second.llm_status == "over_budget" and len(fake.requests) == 1  # no call made
    with pytest.raises(LLMOverBudget):
        llm_for(fake).ask(JUDGE, LINES, namespace="pearl")
    llm_for(fake).ask(JUDGE, LINES, namespace="opal")  # another tenant has its own budget
    assert len(fake.requests) == 2 and len(calls()) == 2
    assert metrics.snapshot()[metrics.LLM_BUDGET_SKIPS] == 2
    report = json.loads(runner.invoke(cli, ["usage", "--json"]).stdout)
    budgets = {b["namespace"]: b for b in report["budgets"]}
    spent = [sum(usage.values()) for usage in fake.usages]
    assert [budgets[n]["used_today"] for n in ("pearl", "opal")] == spent
    assert all(budgets[n]["exhausted"] and budgets[n]["budget"] == 50 for n in budgets)
    table = runner.invoke(cli, ["usage"], env={"COLUMNS": "200"}).stdout
    assert "budget spent: deterministic path only" in table
    assert issubclass(LLMOverBudget, LLMError)
