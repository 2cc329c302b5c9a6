"""The local spool of runtime hooks: events written to disk first, sent to the broker after.

A hook must return at once and must not lose an event when Redis is down, and publishing
needs Celery (most of a second to import). So a hook writes each event to a file of its
own under `<CONTINUUM_HOME>/spool/` (a temporary name renamed into place: a reader never
sees half an event) and starts `python -m continuum.runtimes.spool HOME` in the background.
That flush sends every spooled event through `MemoryClient` and deletes each file once its
batch is enqueued. When the broker cannot take them the files stay for the next hook's flush
or `continuum spool flush`. Sending an event twice has no second effect: it keeps its event
id, the pipeline's idempotency key. A file that is not a valid event moves to `rejected/`.
A turn said while its session's capture was paused (`continuum.ephemeral.pause`) is deleted
unsent; while Redis cannot say whether it was, the spool keeps it.

Hooks import this module on their hot path: at module level it loads only what a hook
needs (a few standard modules); the rest loads inside the flush.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from continuum.contract.events import Event

SPOOL_DIR = "spool"
REJECTED_DIR = "rejected"
LOG_FILE = "hooks.log"
_LOCK_FILE = ".flush.lock"


def spool_dir(home: Path) -> Path:
    return home / SPOOL_DIR


def log_error(home: Path, message: str) -> None:
    """Append a timestamped line to `<home>/hooks.log` (hooks have no terminal to fail on)."""
    try:
        home.mkdir(parents=True, exist_ok=True)
        with (home / LOG_FILE).open("a", encoding="utf-8") as log:
            log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {message.rstrip()}\n")
    except OSError:
        pass  # nowhere left to report to; the hook still must not fail


def write(home: Path, event: dict[str, Any]) -> Path:
    """Spool one event (it must carry its `event_id`); files sort in the order written."""
    directory = spool_dir(home)
    directory.mkdir(parents=True, exist_ok=True)
    name = f"{time.time_ns():020d}-{event['event_id']}"
    temporary = directory / f".{name}.tmp"
    temporary.write_text(json.dumps(event, ensure_ascii=False), encoding="utf-8")
    final = directory / f"{name}.json"
    os.replace(temporary, final)
    return final


def pending(home: Path) -> list[Path]:
    """The spooled events, oldest first."""
    try:
        return sorted(spool_dir(home).glob("*.json"))
    except OSError:
        return []


def start_flush(home: Path) -> None:
    """Flush in a detached background process (its own session: it outlives the hook that
    started it). posix_spawn, not subprocess: importing subprocess costs a hook ~20 ms."""
    quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
    pid = os.posix_spawn(
        sys.executable,
        [sys.executable, "-m", "continuum.runtimes.spool", str(home)],
        {**os.environ, "CONTINUUM_HOME": str(home)},
        file_actions=quiet,
        setsid=True,
    )
    os.setpriority(os.PRIO_PROCESS, pid, 10)


def _flush_lock(home: Path) -> IO[str] | None:
    """The spool's flush lock (one flush at a time), held until the file returned is closed;
    None at once when another flush holds it."""
    import fcntl

    directory = spool_dir(home)
    directory.mkdir(parents=True, exist_ok=True)
    lock = (directory / _LOCK_FILE).open("a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        return None
    return lock


def _reject(home: Path, path: Path, reason: str) -> None:
    rejected = spool_dir(home) / REJECTED_DIR
    rejected.mkdir(exist_ok=True)
    os.replace(path, rejected / path.name)
    log_error(home, f"spool: {path.name} is not a valid event, moved to {REJECTED_DIR}/: {reason}")


def _drop_paused(spooled: list[tuple[Path, dict[str, Any], Event]]) -> set[Path]:
    """Delete the spooled turns said while their session's capture was paused; returns their
    files. Raises redis.RedisError when Redis cannot tell (the spool keeps them)."""
    from continuum.ephemeral.pause import said_while_paused

    turns = {path: (event.namespace, event.session_id, event.ts)
             for path, _, event in spooled if event.kind == "turn"}  # fmt: skip
    paused = said_while_paused(turns.values())
    dropped = {path for path, turn in turns.items() if turn in paused}
    for path in dropped:
        path.unlink(missing_ok=True)
    return dropped


def _send_pending(home: Path) -> tuple[int, int, int]:
    """Send what is spooled now, in order and in batches; returns (sent, rejected, paused).
    Raises EnqueueError when the broker cannot take a batch (that batch and later ones stay),
    redis.RedisError when Redis cannot say which turns were said while capture was paused."""
    from continuum.config import get_settings
    from continuum.contract.client import MemoryClient
    from continuum.contract.events import EventError, parse_event

    spooled: list[tuple[Path, dict[str, Any], Event]] = []
    rejected = 0
    for path in pending(home):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            event = parse_event(data)
        except (OSError, ValueError, EventError) as exc:
            _reject(home, path, str(exc))
            rejected += 1
            continue
        spooled.append((path, data, event))
    dropped = _drop_paused(spooled) if spooled else set()
    valid = [(path, data) for path, data, _ in spooled if path not in dropped]
    if not valid:
        return 0, rejected, len(dropped)
    size = get_settings().max_batch_events
    client = MemoryClient()
    try:
        for start in range(0, len(valid), size):
            batch = valid[start : start + size]
            client.emit_many([data for _, data in batch])
            for path, _ in batch:
                path.unlink(missing_ok=True)
    finally:
        client.close()
    return len(valid), rejected, len(dropped)


def flush(home: Path) -> dict[str, Any]:
    """Send every spooled event. Returns {sent, rejected, paused, pending, busy, error}:
    `paused` turns deleted unsent (said while capture was paused), `busy` when another flush
    holds the spool (it sends these too), `error` when the broker refused or Redis could not
    be read."""
    import redis

    from continuum.contract.client import EnqueueError

    counts = [0, 0, 0]  # sent, rejected, paused
    while True:
        lock = _flush_lock(home)
        if lock is None:
            return _report(home, *counts, busy=True)
        with lock:
            try:
                batch = _send_pending(home)
            except (EnqueueError, redis.RedisError) as exc:
                error = str(exc)
                if not isinstance(exc, EnqueueError):
                    error = (f"Redis unreachable, so whether capture of their sessions is paused "
                             f"cannot be read; nothing sent, the events wait in the spool "
                             f"(`continuum spool flush` once Redis answers): {exc}")  # fmt: skip
                log_error(home, f"spool: {error}")
                return _report(home, *counts, error=error)
            counts = [total + more for total, more in zip(counts, batch, strict=True)]
        # An event spooled while the lock was held may have had its own flush turned away:
        # look again after letting go, so nothing waits for the next hook.
        if not pending(home):
            return _report(home, *counts)


def _report(
    home: Path,
    sent: int,
    rejected: int,
    paused: int,
    *,
    busy: bool = False,
    error: str | None = None,
) -> dict[str, Any]:
    return {"sent": sent, "rejected": rejected, "paused": paused, "pending": len(pending(home)),
            "busy": busy, "error": error}  # fmt: skip


def main(argv: list[str]) -> None:
    """`python -m continuum.runtimes.spool HOME`: the background flush a hook starts."""
    import traceback

    from continuum.observability import tracing

    home = Path(argv[0])
    try:
        # With CONTINUUM_OTEL, the events' traces continue the one the hook's runtime named
        # in TRACEPARENT (the flush inherits the hook's environment).
        tracing.configure("continuum-hooks", tracing.PRODUCER_LIBRARIES)
        with tracing.parent_from_environment():
            flush(home)
    except Exception:
        log_error(home, f"spool flush failed:\n{traceback.format_exc()}")


if __name__ == "__main__":
    main(sys.argv[1:])
