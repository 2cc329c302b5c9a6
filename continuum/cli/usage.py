"""`continuum usage`: what the LLM cost, per tenant and model (calls, tokens, outcomes), and
each tenant's tokens today against the daily budget."""

from __future__ import annotations

from dataclasses import asdict

import typer

from continuum.cli.common import JsonOption, console, escape, parse_since, print_json

app = typer.Typer()


@app.command("usage")
def usage_command(
    since: str = typer.Option(
        "24h", "--since", help="Calls since: 24h, 7d, or an ISO date/time (default 24h)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """LLM calls per tenant and model: calls, tokens, repairs and failures; and each tenant's
    tokens today against CONTINUUM_LLM_DAILY_TOKEN_BUDGET (past it: deterministic only)."""
    from rich.table import Table

    from continuum.inference.usage import budgets, usage_since
    from continuum.store.engine import session_scope

    start = parse_since(since)
    with session_scope() as db:
        rows = usage_since(db, start)
        tenants = budgets(db, [row.namespace for row in rows])
    if as_json:
        print_json(
            {
                "since": start.isoformat(),
                "usage": [asdict(row) for row in rows],
                "budgets": [{**asdict(b), "exhausted": b.exhausted} for b in tenants],
            }
        )
        return
    table = Table("tenant", "model", "calls", "prompt tok", "completion tok", "ok", "repaired",
                  "fallback", "errors", "timeouts", "avg ms", title=f"LLM usage since {start:%Y-%m-%d %H:%M} UTC")  # fmt: skip
    for row in rows:
        numbers = (row.calls, row.prompt_tokens, row.completion_tokens, row.ok, row.repaired,
                   row.fallback, row.errors, row.timeouts, row.latency_ms_avg)  # fmt: skip
        table.add_row(escape(row.namespace), escape(row.model), *(f"{n:,}" for n in numbers))
    console().print(table)
    for tenant in tenants:
        if tenant.budget is None:
            continue
        spent = f"{tenant.used_today:,} / {tenant.budget:,} tokens today"
        state = "[red]budget spent: deterministic path only[/]" if tenant.exhausted else "ok"
        console().print(f"{escape(tenant.namespace)}: {spent}, {state}", highlight=False)
