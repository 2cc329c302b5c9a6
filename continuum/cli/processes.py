"""`continuum worker|beat|flower`: exec a Celery process with Continuum's configuration
(the command lines are `continuum.processes`, loaded by the command that runs: it reads the
settings, which `continuum --help` should not pay for)."""

from __future__ import annotations

import os

import typer

from continuum.cli.common import fail

app = typer.Typer()


def _exec(argv: list[str], env: dict[str, str] | None = None) -> None:
    from continuum.processes import child_env

    os.execvpe(argv[0], argv, env or child_env())


@app.command()
def worker(
    queues: str = typer.Option(
        None, "--queues", "-Q", help="Comma separated; default: every queue, in separate groups."
    ),
    concurrency: int = typer.Option(None, "--concurrency", "-c"),
    pool: str = typer.Option("prefork", "--pool", "-P"),
    events: bool = typer.Option(False, "--events", "-E", help="Send task events (Flower)."),
    loglevel: str = typer.Option("INFO", "--loglevel", "-l"),
) -> None:
    """Run Celery workers with Continuum's configuration: with -Q one worker on those queues;
    without, one worker per group (ingest: events; embed; background: extract, maintenance,
    narrative), so slow work never holds back ingestion."""
    from continuum.config import ConfigError
    from continuum.processes import WORKER_GROUPS, group_argv, supervise, worker_argv

    try:
        if queues:
            _exec(worker_argv(queues.split(","), concurrency, pool, loglevel, events=events))
        argvs = [
            group_argv(name, concurrency, pool=pool, loglevel=loglevel, events=events)
            for name, _, _ in WORKER_GROUPS
        ]
    except ConfigError as exc:
        fail(str(exc))
    raise typer.Exit(supervise(argvs))


@app.command()
def beat(loglevel: str = typer.Option("INFO", "--loglevel", "-l")) -> None:
    """Run Celery beat (periodic sync, sweeps, weekly maintenance)."""
    from continuum.config import get_settings
    from continuum.processes import beat_argv

    settings = get_settings()
    settings.home.mkdir(parents=True, exist_ok=True)
    _exec(beat_argv(settings.home / "celerybeat-schedule", loglevel))


@app.command()
def flower(port: int = typer.Option(None, "--port")) -> None:
    """Run Flower with basic auth (CONTINUUM_FLOWER_USER / _PASSWORD) on
    CONTINUUM_FLOWER_ADDRESS (default 127.0.0.1)."""
    from continuum.config import ConfigError
    from continuum.processes import flower_argv, flower_env

    try:
        argv, env = flower_argv(port), flower_env()
    except ConfigError as exc:
        fail(str(exc))
    _exec(argv, env)
