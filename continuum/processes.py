"""The Celery processes Continuum runs (workers, beat, Flower): their command lines and
environments, and spawning, stopping and supervising them. `continuum worker|beat|flower`,
the demo, the fault tests and the benchmarks all start processes through here."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from continuum.config import ConfigError, get_settings
from continuum.contract.queues import ALL_QUEUES, EMBED, EVENTS, EXTRACT, MAINTENANCE, NARRATIVE

PROJECT_ROOT = Path(__file__).resolve().parents[1]
# `continuum worker` without -Q: one Celery worker per group, so ingesting events never waits
# behind slow work (an LLM call that hangs to its deadline, a sync, an embedding batch).
# docker/compose.yml runs four groups, one service each, so a deployment scales them apart
# (it splits `background` into extract and maintenance + narrative); on one host three do.
WORKER_GROUPS: tuple[tuple[str, tuple[str, ...], int | None], ...] = (
    ("ingest", (EVENTS,), None),  # (name, queues, fixed concurrency or None for -c)
    ("embed", (EMBED,), 1),  # CPU-bound, one model in memory
    ("background", (EXTRACT, MAINTENANCE, NARRATIVE), None),
)


# Queues whose tasks call the LLM: each attempt may hold a pool process for up to
# CONTINUUM_LLM_TIMEOUT_S, and a failing LLM makes them retry.
LLM_QUEUES = (EXTRACT,)


def shared_ingest_warning(queues: list[str]) -> str | None:
    """What to tell the operator of one worker on `events` and an LLM queue (None if this
    worker does not mix them): its pool is shared, so ingestion can wait behind LLM calls."""
    llm = [queue for queue in LLM_QUEUES if queue in queues]
    if EVENTS not in queues or not llm:
        return None
    return (
        f"this worker consumes `{EVENTS}` and `{'`, `'.join(llm)}` with one pool: while the "
        "LLM fails or hangs, its calls and retries (up to CONTINUUM_LLM_TIMEOUT_S each) can "
        "hold every pool process, and events wait behind them. Run `continuum worker` "
        f"without -Q (one worker per group), or give `{EVENTS}` a worker of its own."
    )


def worker_argv(
    queues: list[str] | None = None,
    concurrency: int | None = None,
    pool: str = "prefork",
    loglevel: str = "INFO",
    hostname: str | None = None,
    events: bool = False,
) -> list[str]:
    unknown = set(queues or []) - set(ALL_QUEUES)
    if unknown:
        raise ConfigError(
            f"unknown queue(s) {', '.join(sorted(unknown))}; choose from {', '.join(ALL_QUEUES)}"
        )
    argv = [sys.executable, "-m", "celery", "-A", "workers", "worker"]
    argv += ["-Q", ",".join(queues or ALL_QUEUES), "-P", pool, "--loglevel", loglevel]
    # Gossip makes every worker consume every other worker's events (each host's cost grows
    # with the number of hosts: idle, three hosts of `continuum worker` spent 0.71 CPU-s in
    # 20 s with it, 0.35 without, one host 0.17); mingle syncs revoked task ids at start.
    # Nothing here uses either (no revokes, no elections); Flower reads the heartbeats,
    # which stay.
    argv += ["--without-gossip", "--without-mingle"]
    if concurrency:
        argv += ["-c", str(concurrency)]
    if hostname:
        argv += ["-n", hostname]
    if events:
        argv.append("-E")
    return argv


def group_argv(
    name: str, concurrency: int | None = None, hostname: str | None = None, **options: Any
) -> list[str]:
    """The command line of worker group `name` (WORKER_GROUPS) as `continuum worker` runs it:
    its queues, its fixed concurrency (else `concurrency`), hostname `<name>@%h` by default;
    `options` (pool, loglevel, events) as `worker_argv` takes them."""
    groups = {group: (queues, fixed) for group, queues, fixed in WORKER_GROUPS}
    if name not in groups:
        raise ConfigError(f"unknown worker group {name!r}; choose from {', '.join(groups)}")
    queues, fixed = groups[name]
    return worker_argv(
        list(queues), fixed or concurrency, hostname=hostname or f"{name}@%h", **options
    )


def beat_argv(schedule_file: Path, loglevel: str = "INFO", app: str = "workers") -> list[str]:
    return [sys.executable, "-m", "celery", "-A", app, "beat",
            "--schedule", str(schedule_file), "--loglevel", loglevel]  # fmt: skip


def flower_argv(port: int | None = None) -> list[str]:
    """Flower on CONTINUUM_FLOWER_ADDRESS (loopback unless widened). Its credentials are not
    here: they travel in the environment (`flower_env`), never in a command line `ps` shows."""
    settings = get_settings()
    flower_credentials()  # refuse a bad configuration before anything starts
    return [sys.executable, "-m", "celery", "-A", "workers", "flower",
            f"--address={settings.flower_address}", f"--port={port or settings.flower_port}"]  # fmt: skip


def flower_credentials() -> str:
    """`user:password` for Flower's basic auth. Flower splits its setting on commas (several
    users), so a comma would let the part before it log in alone: refused, as is a colon in
    the user name."""
    settings = get_settings()
    if not settings.flower_password:
        raise ConfigError(
            "Flower runs with basic auth: set CONTINUUM_FLOWER_PASSWORD "
            "(and optionally CONTINUUM_FLOWER_USER, default 'admin')."
        )
    if "," in settings.flower_user + settings.flower_password or ":" in settings.flower_user:
        raise ConfigError(
            "CONTINUUM_FLOWER_USER and CONTINUUM_FLOWER_PASSWORD may not contain a comma "
            "(and the user no colon): Flower would split them; choose others."
        )
    return f"{settings.flower_user}:{settings.flower_password}"


def flower_env() -> dict[str, str]:
    """The environment Flower runs with: ours plus its basic auth."""
    return {**child_env(), "FLOWER_BASIC_AUTH": flower_credentials()}


def child_env() -> dict[str, str]:
    """The environment for a child Celery process: importable project, offline model hub."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH", "")) if p
    )
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    return env


def spawn(
    argv: list[str], log_file: Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start a process in its own group (environment `env`, default `child_env()`; working
    directory `cwd`, default ours), output appended to `log_file`."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("ab") as out:
        return subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env or child_env(),
            cwd=cwd,
            start_new_session=True,
        )


def kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL a process started by `spawn` and every process of its group (a worker's pool
    children): no warm shutdown, nothing acknowledged, as the OOM killer or a crash."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def stop(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> int:
    """Warm shutdown (SIGTERM: finish running tasks), then SIGKILL after `timeout`."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return int(proc.returncode)


def supervise(argvs: list[list[str]]) -> int:
    """Run the workers together: a signal (SIGTERM, SIGINT) goes to all of them, and when
    one ends the others are stopped. Returns the first exit code that was not 0."""
    procs = [subprocess.Popen(argv, env=child_env()) for argv in argvs]

    def forward(signum: int, _frame: object) -> None:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, forward)
    while all(proc.poll() is None for proc in procs):
        time.sleep(0.5)
    forward(signal.SIGTERM, None)
    codes = [proc.wait() for proc in procs]
    return next((code for code in codes if code), 0)
