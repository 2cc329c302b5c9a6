"""What the export and import tests share: the demo conversations through the real pipeline
into any tenant, with a record of every archive type added (a memory superseded by a newer
version, a document, a task, a cron report); a second, empty database on the same servers;
the `continuum` command run against it; and row counts to prove a refused import wrote
nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select

from continuum.dev.demo import sample_events
from continuum.memory.documents import put_document
from continuum.memory.tool_calls import MemoryTools
from continuum.memory.user_tasks import create_task
from continuum.store import migrate
from continuum.store.engine import session_scope
from continuum.store.models import CronReport, Memory, Message, ProcessedEvent, Session, UserTask
from continuum.sync.cron import upsert_report
from continuum.transcripts import CronReport as CronRun
from tests.support.paths import ROOT
from tests.support.wait import wait_for

FRESH_DATABASE = "continuum_test_fresh"
USER = "jason"
GATE = "The gate code is "
GATE_CODE = f"{GATE}9072"  # the newer version of a memory: a phrase to look for
PHRASES = (GATE_CODE, "Four Hue lamps", "Backed up the garden photos")  # one of each table
TABLES = (Session, Message, Memory, UserTask, CronReport)


def load_demo(client: Any, namespace: str) -> None:
    """The demo's conversations emitted into `namespace` and processed by the worker, then
    one record of each kind the conversations may not give."""
    _, batches = sample_events()
    events = [{**event, "namespace": namespace, "event_id": str(uuid.uuid4())}
              for batch in batches for event in batch]  # fmt: skip
    for event in events:
        client.emit(event)
    ids = [uuid.UUID(event["event_id"]) for event in events]

    def processed() -> bool:
        with session_scope() as db:
            done = db.scalar(select(func.count()).where(ProcessedEvent.event_id.in_(ids)))
            finished = db.scalar(
                select(func.count()).where(
                    Session.namespace == namespace, Session.details.has_key("finished")
                )
            )
        return done == len(ids) and finished == len(batches)

    wait_for(processed, timeout=120)
    add_every_kind(namespace)


def add_every_kind(namespace: str) -> None:
    """A memory superseded by its newer version, a document, a task and a cron report."""
    tools = MemoryTools(namespace, user_id=USER, provenance="user_explicit")
    tools.store_memory(memory_type="fact", key="garden_gate", value=f"{GATE}4411")
    tools.update_memory(existing_key="garden_gate", new_value=GATE_CODE)
    put_document(namespace, ("notes", "garden"), "lights", {"brand": "Hue", "lamps": 4},
                 "garden lights from Hue", user_id=USER)  # fmt: skip
    create_task(namespace, "Order the garden lights", user_id=USER,
                description="Four Hue lamps for the path", tags=["garden"])  # fmt: skip
    run = datetime(2026, 11, 20, 3, 0, tzinfo=UTC)
    report = CronRun(job_id="nightly", name="nightly", text="Backed up the garden photos",
                     message_id="r1", run_started_at=run, run_ended_at=run)  # fmt: skip
    with session_scope() as db:
        upsert_report(db, namespace, "cron-nightly-1", report, run)


def fresh_database(database_url: str) -> str:
    """A new, empty, migrated database beside the test database; its URL."""
    import psycopg
    from sqlalchemy.engine import make_url

    with psycopg.connect(plain_url(database_url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{FRESH_DATABASE}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{FRESH_DATABASE}"')
    fresh = make_url(database_url).set(database=FRESH_DATABASE).render_as_string(False)
    migrate.upgrade(fresh)
    return fresh


def cli(*args: str, database_url: str | None = None) -> subprocess.CompletedProcess[bytes]:
    """`continuum …` in a process of its own (on `database_url` if given)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if database_url is not None:
        env["CONTINUUM_DATABASE_URL"] = database_url
    return subprocess.run(
        [sys.executable, "-m", "continuum.cli.main", *args], capture_output=True, env=env
    )


def plain_url(database_url: str) -> str:
    """A SQLAlchemy database URL as libpq takes it."""
    from sqlalchemy.engine import make_url

    return make_url(database_url).set(drivername="postgresql").render_as_string(False)


def counts(database_url: str) -> dict[str, int]:
    """Rows per table of the tenants' data."""
    import psycopg

    with psycopg.connect(plain_url(database_url)) as conn:
        return {
            table.__tablename__: int(
                conn.execute(f"SELECT count(*) FROM {table.__tablename__}").fetchone()[0]  # type: ignore[index]
            )
            for table in TABLES
        }
