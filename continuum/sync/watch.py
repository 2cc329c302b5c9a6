"""Near-real-time transcript sync (`continuum sync watch`): a transcript is synced within
seconds of a write, beside beat's five-minute run.

The watcher (the `watch` extra: `watchfiles`) watches the directories every enabled format
finds its sources in (`continuum.transcripts.watch_dirs`), each with its subdirectories.
Once a burst of writes has paused for the debounce (`CONTINUUM_SYNC_WATCH_DEBOUNCE_MS`), the
sources it touched are synced by `sync(paths=...)`: the readers, cursors, transactions and
capture feed of every run, on those sources only. Once the watcher runs it makes a full run
(what was written while no watcher ran, or while it started). Every `RESCAN_S` the
directories are looked up again: a runtime installed after the watcher started (a new
`~/.openclaw-*` instance, a first `~/.codex/sessions`) is watched from then on, after a full
run for what it wrote before.

Beat's run and the watcher's share the cursors and never take each other's lock: every
batch of a source runs under that source's advisory lock and re-reads the cursor under it
(`continuum.sync.cursors.lock_and_load`) and the file's size with it, so when both read a
growing file at once each line is read by exactly one of them. A watcher that stops (Ctrl-C, a crash) loses nothing:
what it did not read, the next run reads from the cursors.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from continuum.config import get_settings
from continuum.sync.engine import source_keys, sync
from continuum.sync.run_report import SyncSummary
from continuum.transcripts import Discovery, discover, enabled_kinds, watch_dirs

RESCAN_S = 30.0  # how often the directories to watch are looked up again
WAKE_MS = 500  # a watcher with nothing to report wakes this often (its first wake: it runs)


class WatchUnavailable(RuntimeError):
    """The `watch` extra is not installed; the message says how to install it."""


@dataclass
class WatchTotals:
    """What a watcher did since it started: its runs and what they stored."""

    runs: int = 0
    files_read: int = 0
    messages_inserted: int = 0
    duplicates: int = 0
    chunks_dispatched: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    dirs: list[Path] = field(default_factory=list)

    def add(self, summary: SyncSummary) -> None:
        self.runs += 1
        self.files_read += summary.files_read
        self.messages_inserted += summary.messages_inserted
        self.duplicates += summary.duplicates
        self.chunks_dispatched += summary.chunks_dispatched
        self.errors.update(summary.errors)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (`dataclasses.asdict` would take the Counter's items for its keys)."""
        return {**vars(self), "errors": dict(self.errors), "dirs": [str(p) for p in self.dirs]}


RunCallback = Callable[[SyncSummary, WatchTotals], None]
DirsCallback = Callable[[list[Path]], None]


@dataclass
class _Watch:
    """One watcher's settings and what it reports to."""

    home: Path
    roots: list[Path] | None
    kinds: Collection[str]
    debounce_ms: int
    feed_capture: bool
    stop: threading.Event
    on_run: RunCallback | None
    on_dirs: DirsCallback | None
    rescan_s: float
    totals: WatchTotals = field(default_factory=WatchTotals)
    found: Discovery | None = None  # the last look over the home, and its sources' paths
    known: frozenset[str] = frozenset()

    def dirs(self) -> list[Path]:
        return watch_dirs(self.roots, self.home, self.kinds)

    def _all_known(self, paths: Collection[Path]) -> bool:
        """Whether every path written is (or belongs to: a store's log) a source found."""
        return all(source_keys([path]) & self.known for path in paths)

    def run(self, paths: Collection[Path] | None) -> None:
        """Sync the sources at `paths` (None: every source, a full run)."""
        if paths is None or self.found is None or not self._all_known(paths):
            self.found = discover(self.roots, self.home, self.kinds)
            self.known = frozenset(str(source.path) for source in self.found.sources)
        summary = sync(
            self.home, roots=self.roots, kinds=self.kinds, paths=paths,
            feed_capture=self.feed_capture, discovered=self.found,
        )  # fmt: skip
        self.totals.add(summary)
        if self.on_run is not None:
            self.on_run(summary, self.totals)

    def watch(self, dirs: list[Path], catch_up: bool) -> None:
        """Sync what is written under `dirs` until stopped or until the directories to watch
        change (looked up every `rescan_s`). Once the watcher runs (its first wake-up),
        `catch_up` makes a full run read what was written before, and `on_dirs` is told:
        from then on no write goes unseen."""
        from watchfiles import Change
        from watchfiles import watch as watch_changes

        looked, ready = time.monotonic(), False
        for changes in watch_changes(
            *dirs,
            debounce=self.debounce_ms,
            stop_event=self.stop,
            rust_timeout=WAKE_MS,
            yield_on_timeout=True,
        ):
            written = {Path(path) for change, path in changes if change != Change.deleted}
            if not ready and catch_up:
                self.run(None)  # covers `written` too
            elif written:
                self.run(written)
            if not ready:
                ready = True
                if self.on_dirs is not None:
                    self.on_dirs(dirs)
            if time.monotonic() - looked >= self.rescan_s:
                looked = time.monotonic()
                if self.dirs() != dirs:
                    return


def watch(
    home: Path | None = None,
    *,
    roots: list[Path] | None = None,
    kinds: Collection[str] | None = None,
    debounce_ms: int | None = None,
    feed_capture: bool = True,
    catch_up: bool = True,
    stop: threading.Event | None = None,
    on_run: RunCallback | None = None,
    on_dirs: DirsCallback | None = None,
    rescan_s: float = RESCAN_S,
) -> WatchTotals:
    """Sync transcripts under `home` as they are written, until `stop` is set.

    `catch_up` starts with a full sync, once the watcher runs (what was written while no
    watcher ran; it returns at once when beat's run holds the lock); directories that
    appear later get one whatever `catch_up` says. `on_run` is called with each run's
    summary and the totals so far, `on_dirs` with the directories watched, when watching
    them begins (writes from then on are all seen). Arguments left None take the settings
    `sync()` takes them from, and `debounce_ms` CONTINUUM_SYNC_WATCH_DEBOUNCE_MS. Raises
    `WatchUnavailable` without the `watch` extra.
    """
    try:
        import watchfiles  # noqa: F401  (checked here: the loop imports it again)
    except ImportError:
        raise WatchUnavailable(
            "watching transcripts needs the `watch` extra: pip install 'continuum[watch]'"
            " (or rely on the five-minute beat sync)"
        ) from None
    settings = get_settings()
    state = _Watch(
        home=home or settings.sync_home or Path.home(),
        roots=settings.sync_roots if roots is None else roots,
        kinds=enabled_kinds(settings) if kinds is None else kinds,
        debounce_ms=debounce_ms or settings.sync_watch_debounce_ms,
        feed_capture=feed_capture,
        stop=stop or threading.Event(),
        on_run=on_run,
        on_dirs=on_dirs,
        rescan_s=rescan_s,
    )
    watched: list[Path] | None = None  # None: not looked yet
    while not state.stop.is_set():
        dirs = state.dirs()
        # A full run once the watcher runs: at the start (unless told not to), and for what
        # directories new since the last look got before they were watched.
        full = catch_up if watched is None else bool(set(dirs) - set(watched))
        watched = state.totals.dirs = dirs
        if not dirs:  # nothing to watch yet: look again later
            state.stop.wait(rescan_s)
            continue
        state.watch(dirs, full)
    return state.totals
