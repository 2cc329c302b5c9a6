"""`sync()`: discover every transcript source and bring the database up to date with it.

One run at a time per deployment (a Redis lock; a run that finds it held returns at once
with `locked=True`), and per-source advisory locks in Postgres in case that lock expires.
A run of named sources (`paths`: the watcher's, `continuum.sync.watch`) takes no run lock:
the per-source locks alone serialize it with a full run reading the same source.
Bad input never stops a run: each problem is counted by kind in the `SyncSummary`, good
lines are kept, and a source that cannot be read is retried on the next run.
"""

from __future__ import annotations

import logging
import multiprocessing
import re
import sqlite3
import time
import uuid
from collections import deque
from collections.abc import Callable, Collection
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psycopg
import redis
from redis.lock import Lock
from sqlalchemy.exc import DBAPIError, StatementError

from continuum.config import get_settings
from continuum.conversations.writer import SessionRaced
from continuum.redis_client import get_quick_redis, redacted
from continuum.store.engine import session_scope
from continuum.sync import cursors, ending, feed, problems
from continuum.sync.run_report import SyncProgress, SyncSummary, save_last_run
from continuum.sync.sources import (
    DEFAULT_BATCH_LINES,
    READERS,
    Options,
    Outcome,
    SourceReport,
)
from continuum.sync.views import ensure_views
from continuum.transcripts import (
    Discovery,
    StoreLayoutError,
    TranscriptSource,
    TranscriptVanished,
    discover,
    enabled_kinds,
    format_of,
)

log = logging.getLogger(__name__)

LOCK_NAME = "continuum:sync"
LOCK_TIMEOUT_S = 600
DEADLOCK_ATTEMPTS = 3  # runs of a source after a deadlock, serialization failure or race
# A deadlock or serialization failure: the transaction is safe to run again.
_CONFLICTS = (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure)
# A statement refused for its data (not a connection fault): skip the source.
_BAD_DATA = (psycopg.DataError, psycopg.IntegrityError, psycopg.ProgrammingError)
_NAMESPACE_UNSAFE = re.compile(r"[^a-z0-9_.-]+")
# Above this many bytes to read, sources are read in worker processes instead of threads:
# parsing is Python and holds the GIL, so threads overlap it only with database time. A
# process costs about a second to start (imports), which this much reading repays.
PROCESS_MIN_BYTES = 16 * 2**20

ProgressCallback = Callable[[SyncProgress], None]


def namespace_for(instance: str) -> str:
    """The tenant name of an instance: `My Team` → `my-team` (a valid namespace)."""
    name = _NAMESPACE_UNSAFE.sub("-", instance.lower()).strip("-._")[:64]
    return name or "default"


def _take_lock(timeout_s: int, summary: SyncSummary) -> Lock | None:
    """The run lock. Sets `summary.locked` if another run has it; None if Redis does not
    answer within `CONTINUUM_SYNC_REDIS_TIMEOUT_S` (the run goes ahead on the per-source
    locks alone, and says so once)."""
    client = get_quick_redis(get_settings().sync_redis_timeout_s)
    lock = client.lock(LOCK_NAME, timeout=timeout_s, blocking=False)
    try:
        summary.locked = not lock.acquire()
    except redis.RedisError as exc:
        log.warning("Redis unreachable, sync relies on the Postgres per-source locks: %s", exc)
        summary.record_error("lock_unavailable", LOCK_NAME, str(exc))
        return None
    return lock


def _broker_answers(summary: SyncSummary) -> bool:
    """True when the broker answers within `CONTINUUM_SYNC_REDIS_TIMEOUT_S`; otherwise the
    run feeds no capture (the rows are stored, session end extracts from them later)."""
    settings = get_settings()
    url = settings.resolved_broker_url()
    try:
        get_quick_redis(settings.sync_redis_timeout_s, url).ping()
    except redis.RedisError as exc:
        log.warning("broker unreachable, this sync feeds no capture: %s", exc)
        summary.record_error("capture_dispatch", redacted(url), f"broker unreachable: {exc}")
        return False
    return True


@dataclass(frozen=True)
class _Problem:
    kind: str
    detail: str
    failed: bool = True


def _read_source(
    options: Options, source: TranscriptSource, namespace: str, known: cursors.Cursor | None
) -> tuple[SourceReport, _Problem | None]:
    """Sync one source (in a worker thread); input problems are returned, never raised."""
    report = SourceReport()
    handler = READERS[format_of(source.kind).reader]
    for attempt in range(1, DEADLOCK_ATTEMPTS + 1):
        try:
            handler(options, source, namespace, known, report)
            return report, None
        except SessionRaced as exc:  # its batch meets the other writer's rows when run again
            if attempt < DEADLOCK_ATTEMPTS:
                continue
            return report, _Problem("db_error", str(exc))
        except (TranscriptVanished, FileNotFoundError) as exc:
            return report, _Problem("vanished", str(exc), failed=False)
        except StoreLayoutError as exc:
            return report, _Problem("store_layout", str(exc))
        except sqlite3.Error as exc:
            return report, _Problem("store_error", str(exc))
        except OSError as exc:
            return report, _Problem("unreadable_file", exc.strerror or str(exc))
        except (DBAPIError, psycopg.Error) as exc:
            orig = exc.orig if isinstance(exc, DBAPIError) else exc
            if isinstance(orig, _CONFLICTS) and attempt < DEADLOCK_ATTEMPTS:
                continue
            if not isinstance(orig, _CONFLICTS + _BAD_DATA):
                raise  # the database itself is in trouble: the caller retries the run
            return report, _Problem("db_error", str(exc).splitlines()[0])
        except StatementError as exc:
            return report, _Problem("db_error", str(exc).splitlines()[0])
    raise AssertionError("unreachable")


class _Engine:
    """Accounting of a run (main thread only): summary, capture feed, lock renewal."""

    def __init__(
        self, summary: SyncSummary, feed: bool, lock: Lock | None, lock_timeout_s: int
    ) -> None:
        self.summary = summary
        self.feed = feed
        self.lock = lock
        self.lock_timeout_s = lock_timeout_s
        self.lock_renewed = time.monotonic()
        self.sessions: set[tuple[str, str]] = set()
        self.source_problems: list[tuple[str, str, problems.Found]] = []
        self.read_fine: list[str] = []

    def source_problem(
        self, namespace: str, path: Path | str, kind: str, detail: str, line_no: int | None = None
    ) -> None:
        """A problem with a whole source (or a directory, an index file): counted, and kept
        at the end of the run."""
        found = problems.for_tenant(namespace, problems.Found(kind, detail, line_no=line_no))
        self.summary.record_error(kind, path, found.detail, line_no=line_no)
        self.source_problems.append((namespace, str(path), found))

    def keep_record(self, last_run: bool = True) -> None:
        """Store the run's source problems, close those of sources read fine this time, and
        remember the run as the last sync (`continuum status`) unless `last_run` is False."""
        summary = self.summary
        with session_scope() as db:
            problems.resolve(db, self.read_fine, whole_source=True, not_run=summary.run_id)
            for namespace, path, found in self.source_problems:
                problems.record(db, summary.run_id, namespace, path, [found])
            if last_run:
                save_last_run(db, summary)

    def end_sessions(self, idle_ms: int) -> None:
        """Send session end for the synced sessions that ended or went idle (only when
        capture is fed: the same broker, and `--no-capture` means no pipeline work)."""
        if not self.feed:
            return
        try:
            self.summary.sessions_ended = ending.end_synced_sessions(
                self.summary.instances, idle_ms
            )
        except Exception as exc:  # the broker refused: the sessions are ended next run
            log.warning("session end for synced sessions failed: %s", exc)
            self.summary.record_error("capture_dispatch", "session end", str(exc))

    def renew_lock(self) -> None:
        if self.lock is None or time.monotonic() - self.lock_renewed < self.lock_timeout_s / 3:
            return
        try:
            self.lock.extend(self.lock_timeout_s, replace_ttl=True)
            self.lock_renewed = time.monotonic()
        except redis.RedisError as exc:  # includes LockError: per-source locks still hold
            log.warning("could not renew the sync lock: %s", exc)

    def account(
        self, path: Path, namespace: str, report: SourceReport, problem: _Problem | None
    ) -> None:
        """Count what one source did and feed capture with its new messages."""
        summary = self.summary
        summary.files_seen += 1
        summary.files_restarted += report.restarted
        summary.partial_lines += report.partial_tail
        if problem is not None and problem.failed:
            self.source_problem(namespace, path, problem.kind, problem.detail)
            summary.files_failed += 1
        elif problem is not None:  # vanished: read next run, under its new name
            summary.record_error(problem.kind, path, problem.detail)
        elif report.read:
            self.read_fine.append(str(path))
        if problem is None or not problem.failed:
            summary.files_read += report.read
            summary.files_skipped += not report.read
        for outcome in report.outcomes:
            self._batch(path, namespace, outcome)

    def _batch(self, path: Path, namespace: str, outcome: Outcome) -> None:
        summary = self.summary
        summary.messages_parsed += outcome.parsed
        summary.messages_inserted += len(outcome.inserted)
        summary.messages_withheld += outcome.withheld
        summary.duplicates += outcome.parsed - outcome.withheld - len(outcome.inserted)
        summary.cron_reports += outcome.cron_reports
        summary.skipped_entries.update(outcome.skipped)
        for error in outcome.errors:
            summary.record_error(
                error.kind,
                path,
                error.detail,
                error.byte_offset,
                line_no=error.line_no,
                session_id=error.session_id,
                seq=error.seq,
            )
        self.sessions.update((namespace, m.session_id) for m in outcome.inserted)
        summary.sessions = len(self.sessions)
        if not (self.feed and outcome.inserted):
            return
        try:
            summary.chunks_dispatched += feed.feed_capture(namespace, outcome.inserted)
        except Exception as exc:  # rows are committed; a broker fault must not stop the sync
            log.warning("capture feed for %s failed, none for the rest of the run: %s", path, exc)
            summary.record_error("capture_dispatch", path, str(exc))
            self.feed = False


def _allowed(namespace: str, path: Path, engine: _Engine) -> bool:
    try:
        get_settings().check_namespace(namespace)
    except ValueError as exc:
        engine.source_problem(namespace, path, "namespace_not_allowed", str(exc))
        return False
    return True


def sync(
    home: Path | None = None,
    *,
    roots: list[Path] | None = None,
    instance: str | None = None,
    backfill: bool = False,
    progress: ProgressCallback | None = None,
    feed_capture: bool = True,
    kinds: Collection[str] | None = None,
    max_line_bytes: int | None = None,
    batch_lines: int = DEFAULT_BATCH_LINES,
    time_budget_s: float | None = None,
    workers: int | None = None,
    lock_timeout_s: int = LOCK_TIMEOUT_S,
    paths: Collection[Path] | None = None,
    discovered: Discovery | None = None,
) -> SyncSummary:
    """Sync every transcript source under `home` (default: the user's home directory).

    `roots` overrides the OpenClaw instance directories (default `home/.openclaw*`);
    `instance` limits the run to one namespace; `backfill` ignores stored cursors and
    re-reads every source from the start (idempotent: only missing rows are added);
    `feed_capture` sends new messages to capture in chunks; `kinds` are the transcript
    formats to read (`TranscriptSource.kind`s); `time_budget_s` stops between
    sources once spent (`incomplete=True`, the next run continues); `workers` sources
    are read at once, each on its own connection. Arguments left None take their
    `CONTINUUM_SYNC_*` settings (`kinds`: the formats they switch on, `enabled_kinds`),
    so beat and `continuum sync` read the same sources.

    `paths` limits the run to the sources at those paths (a SQLite store also by its `-wal`
    or `-journal` file), as the watcher runs it: no run lock (each source's advisory lock
    serializes its batches with any other run's), no discovery-wide problems, no session
    ending and not kept as the last sync: the full runs do those. `discovered` is a look over
    `home` taken already (the watcher's, reused while its writes touch known sources only).
    """
    started = time.monotonic()
    settings = get_settings()
    summary = SyncSummary(run_id=uuid.uuid4().hex)
    named = None if paths is None else source_keys(paths)
    lock = _take_lock(lock_timeout_s, summary) if named is None else None
    if summary.locked:
        return summary
    try:
        options = Options(
            backfill, max_line_bytes or settings.sync_max_line_bytes, batch_lines, summary.run_id
        )
        engine = _Engine(summary, feed_capture and _broker_answers(summary), lock, lock_timeout_s)
        found = discovered or discover(
            settings.sync_roots if roots is None else roots,
            home or settings.sync_home or Path.home(),
            enabled_kinds(settings) if kinds is None else kinds,
        )
        sources = _select(engine, found, instance, named)
        deadline = None if time_budget_s is None else started + time_budget_s
        _run(engine, options, sources, workers or settings.sync_workers, deadline, progress)
        if named is None:
            engine.end_sessions(settings.idle_ms)
        summary.seconds = time.monotonic() - started
        engine.keep_record(last_run=named is None)
    finally:
        if lock is not None:
            try:
                lock.release()
            except redis.RedisError as exc:  # expired or Redis gone: nothing to release
                log.warning("could not release the sync lock: %s", exc)
        summary.seconds = time.monotonic() - started
    return summary


# Files beside a SQLite store that change when it is written.
_STORE_SIDE_FILES = ("-wal", "-journal", "-shm")


def source_keys(paths: Collection[Path]) -> set[str]:
    """The source paths that writes to `paths` concern: each path, and for a SQLite store's
    write-ahead log or journal, the store itself."""
    keys = set()
    for path in map(str, paths):
        keys.add(path)
        keys.update(path.removesuffix(side) for side in _STORE_SIDE_FILES if path.endswith(side))
    return keys


def _select(
    engine: _Engine, found: Discovery, instance: str | None, named: set[str] | None = None
) -> list[tuple[TranscriptSource, str, cursors.Cursor | None]]:
    """The discovered sources to sync (those at `named` paths only, when given), with their
    instances' views ensured and known cursors."""
    summary = engine.summary
    for error in found.errors + found.bad_files if named is None else ():
        namespace = namespace_for(error.instance) if error.instance else ""
        engine.source_problem(namespace, error.path, error.kind, error.detail, error.line_no)
    chosen = [
        (source, namespace_for(source.instance))
        for source in found.sources
        if named is None or str(source.path) in named
    ]
    selected = [
        (s, ns)
        for s, ns in chosen
        if (instance is None or ns == instance) and _allowed(ns, s.path, engine)
    ]
    summary.instances = sorted({ns for _, ns in selected})
    with session_scope() as db:
        summary.views_created = ensure_views(db, summary.instances)
        known = cursors.load_all(db, None if named is None else [str(s.path) for s, _ in selected])
    return [(source, ns, known.get(str(source.path))) for source, ns in selected]


def _bytes_to_read(
    options: Options, sources: list[tuple[TranscriptSource, str, cursors.Cursor | None]]
) -> int:
    """About how many bytes the run will read: nothing of a source unchanged since its
    cursor, whole files on a backfill or without a cursor, else what grew past the cursor
    (a SQLite store's cursor keeps no offset: all of it)."""
    total = 0
    for source, _, known in sources:
        try:
            stat = cursors.FileStat.of(source.path)
        except OSError:
            continue  # reported when the source is read
        if options.skips(known, stat):
            continue
        offset = known.byte_offset if known is not None and not options.backfill else 0
        total += stat.size - offset if offset <= stat.size else stat.size
    return total


def _readers(
    options: Options,
    sources: list[tuple[TranscriptSource, str, cursors.Cursor | None]],
    workers: int,
) -> Executor:
    """Threads, or `workers` spawned processes for a large read when this process may have
    children (not a daemon, e.g. a Celery prefork child: beat's runs stay on threads, and
    never stat their sources for it)."""
    if (
        workers > 1
        and not multiprocessing.current_process().daemon
        and _bytes_to_read(options, sources) >= PROCESS_MIN_BYTES
    ):
        return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sync")


def _run(
    engine: _Engine,
    options: Options,
    sources: list[tuple[TranscriptSource, str, cursors.Cursor | None]],
    workers: int,
    deadline: float | None,
    progress: ProgressCallback | None,
) -> None:
    """Read sources on `workers` threads or processes (`_readers`), account in order."""
    pending: deque[tuple[Future[tuple[SourceReport, _Problem | None]], Path, str]] = deque()

    def settle_oldest() -> None:
        future, path, namespace = pending.popleft()
        engine.account(path, namespace, *future.result())
        engine.renew_lock()
        if progress is not None:
            done = engine.summary.files_seen
            progress(SyncProgress(done, len(sources), path, engine.summary))

    with _readers(options, sources, workers) as pool:
        try:
            for source, namespace, known in sources:
                if deadline is not None and time.monotonic() > deadline:
                    engine.summary.incomplete = True
                    break
                future = pool.submit(_read_source, options, source, namespace, known)
                pending.append((future, source.path, namespace))
                if len(pending) > 2 * workers:
                    settle_oldest()
            while pending:
                settle_oldest()
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
