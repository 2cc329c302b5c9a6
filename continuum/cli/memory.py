"""The memory lifecycle: `continuum preferences`, `tasks add|done|status|list` and the
suggested tasks' `tasks suggestions|confirm|dismiss`, `memory`
(a memory tool called as the user), `tools`, `conflicts` and `maintenance`. `--json` prints
machine-readable output for runtimes."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from continuum.cli.common import (
    JsonOption,
    NamespaceOption,
    UserOption,
    console,
    escape,
    fail,
    print_json,
    read_stdin,
)

if TYPE_CHECKING:
    from continuum.domain.records import TaskView

app = typer.Typer()
tasks_app = typer.Typer(help="The user's tasks, shared by every channel.", no_args_is_help=True)
app.add_typer(tasks_app, name="tasks")
TaskIdArgument = typer.Argument(..., help="Task id or a unique prefix of it.")


@app.command()
def preferences(
    namespace: str = NamespaceOption,
    user_id: str = UserOption,
    category: str = typer.Option(None, "--category", help="Only this category."),
    as_json: bool = JsonOption,
) -> None:
    """The user's active preferences (key → value), by category."""
    from rich.table import Table

    from continuum.memory.preferences import get_preferences

    found = get_preferences(namespace, user_id, category)
    if as_json:
        print_json([p.model_dump(mode="json") for p in found])
        return
    table = Table("category", "key", "value", "confidence", "last confirmed", "from")
    for p in found:
        table.add_row(p.category, p.key, escape(p.value), f"{p.confidence:.2f}",
                      f"{p.last_confirmed:%Y-%m-%d}", p.learned_from["provenance"])  # fmt: skip
    console().print(table)


def _print_tasks(tasks: list[TaskView], as_json: bool) -> None:

    if as_json:
        print_json([t.model_dump(mode="json") for t in tasks])
        return
    for t in tasks:
        due = f" due {t.due_at:%Y-%m-%d %H:%M}" if t.due_at else ""
        console().print(f"[dim]{t.task_id[:8]}[/] [cyan]{t.status:<11}[/] {escape(t.title)}"
                        f"[dim]{due} ({t.created_channel or '-'})[/]", highlight=False)  # fmt: skip


@tasks_app.command("add")
def tasks_add(
    title: str,
    namespace: str = NamespaceOption,
    user_id: str = typer.Option(None, "--user"),
    description: str = typer.Option(None, "--description", "-d"),
    channel: str = typer.Option("cli", "--channel"),
    as_json: bool = JsonOption,
) -> None:
    """Create a task."""
    from continuum.memory.user_tasks import create_task

    try:
        task = create_task(
            namespace, title, user_id=user_id, description=description, channel=channel
        )
    except ValueError as exc:
        fail(str(exc))
    _print_tasks([task], as_json)


@tasks_app.command("done")
def tasks_done(
    task_id: str = TaskIdArgument, namespace: str = NamespaceOption, as_json: bool = JsonOption
) -> None:
    """Mark a task done."""
    tasks_status(task_id, "done", namespace, as_json)


@tasks_app.command("status")
def tasks_status(
    task_id: str = TaskIdArgument,
    status: str = typer.Argument(..., help="pending|in_progress|blocked|done|cancelled"),
    namespace: str = NamespaceOption,
    as_json: bool = JsonOption,
) -> None:
    """Change a task's status."""
    from continuum.memory.user_tasks import TaskNotFound, set_status

    try:
        task = set_status(namespace, task_id, status)
    except (TaskNotFound, ValueError) as exc:
        fail(str(exc))
    _print_tasks([task], as_json)


@tasks_app.command("list")
def tasks_list(
    namespace: str = NamespaceOption,
    user_id: str = UserOption,
    show_all: bool = typer.Option(False, "--all", help="Include done and cancelled."),
    as_json: bool = JsonOption,
) -> None:
    """Active tasks (every channel), oldest first."""
    from continuum.memory.user_tasks import list_tasks

    _print_tasks(list_tasks(namespace, user_id, active_only=not show_all), as_json)


@tasks_app.command("suggestions")
def tasks_suggestions(
    namespace: str = NamespaceOption, user_id: str = UserOption, as_json: bool = JsonOption
) -> None:
    """Suggested tasks waiting for the user's answer (CONTINUUM_CONFIRM_TASKS)."""
    from continuum.memory.user_tasks import list_tasks

    _print_tasks(list_tasks(namespace, user_id, suggested=True), as_json)


def _answer(task_id: str, namespace: str, as_json: bool, confirm: bool) -> None:
    from continuum.memory.user_tasks import SuggestionAnswered, TaskNotFound, answer_suggestion

    try:
        task = answer_suggestion(namespace, task_id, confirm=confirm)
    except (TaskNotFound, SuggestionAnswered) as exc:
        fail(str(exc))
    _print_tasks([task], as_json)


@tasks_app.command("confirm")
def tasks_confirm(
    task_id: str = TaskIdArgument, namespace: str = NamespaceOption, as_json: bool = JsonOption
) -> None:
    """Make a suggested task a task (pending)."""
    _answer(task_id, namespace, as_json, confirm=True)


@tasks_app.command("dismiss")
def tasks_dismiss(
    task_id: str = TaskIdArgument, namespace: str = NamespaceOption, as_json: bool = JsonOption
) -> None:
    """Dismiss a suggested task: it never becomes a task."""
    _answer(task_id, namespace, as_json, confirm=False)


@app.command()
def memory(
    tool: str = typer.Argument(
        ..., help="store_memory | update_memory | forget_memory | mark_private | list_memories"
    ),
    arguments: str = typer.Argument(None, help="JSON arguments; read from stdin if omitted."),
    namespace: str = NamespaceOption,
    user_id: str = typer.Option(None, "--user"),
    session_id: str = typer.Option(None, "--session", help="Live session to notify."),
) -> None:
    """Call a memory tool as the user (provenance user_explicit); prints its JSON answer."""
    from continuum.memory.tool_calls import MemoryTools

    tools = MemoryTools(namespace, user_id=user_id, session_id=session_id,
                        provenance="user_explicit", main_context=True)  # fmt: skip
    response = tools.call(tool, arguments if arguments is not None else read_stdin())
    print_json(response)
    if not response.get("success"):
        raise typer.Exit(1)


@app.command()
def tools(
    fmt: str = typer.Option("openai", "--format", help="openai | anthropic"),
) -> None:
    """Print the memory tools' JSON definitions for an LLM API."""
    from continuum.memory.tool_schemas import tool_definitions

    if fmt not in ("openai", "anthropic"):
        fail(f"unknown format {fmt!r}: use openai or anthropic")
    print_json(tool_definitions(fmt))  # type: ignore[arg-type]


@app.command()
def conflicts(
    namespace: str = NamespaceOption, user_id: str = UserOption, as_json: bool = JsonOption
) -> None:
    """Quarantined memories beside the trusted ones they contradict, for review."""
    from rich.table import Table

    from continuum.memory.claims import conflicts as open_conflicts
    from continuum.store.engine import session_scope

    with session_scope() as db:
        found = open_conflicts(db, namespace, user_id)
    if as_json:
        print_json([c.model_dump(mode="json") for c in found])
        return
    table = Table("quarantined", "says", "from", "contradicts", "which says", "from")
    for c in found:
        table.add_row(str(c.quarantined_id), escape(c.quarantined), c.quarantined_provenance,
                      str(c.active_id or "-"), escape(c.active or "-"), c.active_provenance or "-")  # fmt: skip
    console().print(table)


@app.command()
def maintenance(
    namespace: str = typer.Option(None, "--namespace", "-n", help="One tenant; default all."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan, change nothing."),
    force: bool = typer.Option(False, "--force", help="Run again this ISO week."),
    as_json: bool = JsonOption,
) -> None:
    """Weekly consolidation: merge, supersede, compress, decay, prune, archive, MEMORY.md."""
    from rich.table import Table

    from continuum.maintenance.run import run_maintenance

    reports = run_maintenance(namespace, dry_run=dry_run, force=force)
    if as_json:
        print_json([{**r.summary(), **({"plan": r.plan} if dry_run else {})} for r in reports])
        return
    for report in reports:
        console().print(f"[bold]{report.namespace}[/] {report.week} [cyan]{report.status}[/] "
                        f"steps {report.steps_applied}/{len(report.plan)} in {report.seconds}s")  # fmt: skip
        table = Table("step", "planned", "applied")
        for name, count in report.planned.items():
            table.add_row(name, str(count), str(report.applied.get(name, "-")))
        if report.planned:
            console().print(table)
        if dry_run:
            for action in report.plan:
                console().print(f"  {escape(json.dumps(action)[:160])}", highlight=False)
