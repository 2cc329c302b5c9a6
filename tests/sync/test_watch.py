"""The transcript watcher (`continuum.sync.watch`) on real files, Postgres, Redis and a real
worker: a line appended to a transcript is searchable within seconds, and the watcher and a
beat-style run reading the same growing file at once read each line exactly once; the home is
walked again only for a write to a file not found before."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("watchfiles")

from continuum.recall.search import search
from continuum.sync import SyncSummary, sync
from continuum.sync import watch as watch_module
from continuum.sync.watch import WatchTotals, watch
from tests.support.exactly_once import assert_exactly_once, stored_keys
from tests.support.transcripts import FIXTURE_MESSAGES, copy_home, live, message_line
from tests.support.wait import wait_for

TELEGRAM = "b96c88e2-b875-4762-a8c3-fd495a27f5bd"


class Watcher:
    """`watch()` on a thread: its runs' summaries as they come, stopped by `stop()`."""

    def __init__(self, home: Path, **options: Any) -> None:
        self.runs: list[SyncSummary] = []
        self.dirs: list[list[Path]] = []
        self.totals: WatchTotals | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, args=(home, options), daemon=True)
        self._thread.start()
        wait_for(lambda: self.dirs, timeout=60)  # the catch-up run, if any, is done

    def _watch(self, home: Path, options: dict[str, Any]) -> None:
        self.totals = watch(home, stop=self._stop, on_run=lambda s, _: self.runs.append(s),
                            on_dirs=self.dirs.append, **options)  # fmt: skip

    def stop(self) -> WatchTotals:
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive() and self.totals is not None
        return self.totals


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return copy_home(tmp_path)


def _found(phrase: str) -> list[str]:
    hits = search("default", phrase, limit=5, sources=("message",))
    return [hit.content for hit in hits if phrase in hit.content]


def test_a_line_appended_to_a_transcript_is_searchable_within_seconds(
    db: Any, worker: Any, home: Path
) -> None:
    watcher = Watcher(home, debounce_ms=100)
    assert [run.messages_inserted for run in watcher.runs] == [FIXTURE_MESSAGES]  # catch-up
    assert home / ".claude" / "projects" in watcher.dirs[0]

    path = live(home, TELEGRAM)
    phrase = "Paint the shed teal before Saturday"
    written = time.monotonic()
    with path.open("a") as handle:
        handle.write(message_line("w1", "f568cb80", "2026-02-27T09:00:00.000Z", "user", phrase))
    wait_for(lambda: len(stored_keys()) == FIXTURE_MESSAGES + 1, timeout=15)
    took = time.monotonic() - written
    # 1-2 s on a quiet 2-core machine (the debounce, one run); more under a full test run
    assert took < 8, f"stored after {took:.1f}s"
    assert _found(phrase) == [phrase]  # searchable as soon as stored (full text)

    totals = watcher.stop()
    assert (totals.runs, totals.messages_inserted) == (2, FIXTURE_MESSAGES + 1)
    assert watcher.runs[-1].chunks_dispatched == 1  # capture was fed, as beat's runs feed it
    assert_exactly_once(home)


def test_the_watcher_and_a_beat_run_read_a_growing_file_each_line_once(db: Any, home: Path) -> None:
    """A writer appends to a transcript while the watcher and beat-style runs (small batches,
    back to back) both read it: every line is stored once, no run reads a line another run
    read (no duplicates, no file read again from its start) and none is lost."""
    sync(home, feed_capture=False)
    path = live(home, TELEGRAM)
    lines = 120
    watcher = Watcher(home, debounce_ms=20, feed_capture=False, catch_up=False)
    beat_runs: list[SyncSummary] = []
    writing = threading.Event()
    writing.set()

    def beat() -> None:
        while writing.is_set():
            beat_runs.append(sync(home, feed_capture=False, batch_lines=3))

    def write() -> None:
        for n in range(lines):
            with path.open("a") as handle:
                handle.write(message_line(f"g{n}", "f568cb80", "2026-02-27T10:00:00.000Z",
                                          "user", f"Growing line {n}"))  # fmt: skip
            time.sleep(0.015)

    beat_thread = threading.Thread(target=beat)
    beat_thread.start()
    write()
    wait_for(lambda: len(stored_keys()) == FIXTURE_MESSAGES + lines, timeout=30)
    writing.clear()
    beat_thread.join(30)
    watcher.stop()

    runs = watcher.runs + beat_runs
    assert sum(run.messages_inserted for run in runs) == lines
    assert sum(run.duplicates for run in runs) == 0  # no line was read twice
    assert sum(run.files_restarted for run in runs) == 0
    assert sum(run.messages_inserted for run in watcher.runs) > 0  # both really read it
    assert sum(run.messages_inserted for run in beat_runs) > 0
    assert_exactly_once(home)


def test_appends_to_known_transcripts_reuse_the_look_over_the_home(
    db: Any, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bursts that only append to transcripts already found sync without walking the home
    again; a burst that writes a new transcript looks again, and its lines are stored."""
    looks: list[Path] = []
    real = watch_module.discover

    def counted(roots: Any, home: Path, kinds: Any) -> Any:
        looks.append(home)
        return real(roots, home, kinds)

    monkeypatch.setattr(watch_module, "discover", counted)
    watcher = Watcher(home, debounce_ms=50, feed_capture=False)
    assert len(looks) == 1  # the catch-up run's
    path = live(home, TELEGRAM)
    for n in range(3):
        with path.open("a") as handle:
            handle.write(message_line(f"k{n}", "f568cb80", "2026-02-27T11:00:00.000Z", "user",
                                      f"Known file line {n}"))  # fmt: skip
        wait_for(lambda n=n: len(stored_keys()) == FIXTURE_MESSAGES + n + 1, timeout=15)
    assert len(looks) == 1

    fresh = path.with_name("5d0c1f0e-0b7a-4a43-9d55-2c4f51a1e0aa.jsonl")
    fresh.write_text(message_line("n1", "root", "2026-02-27T12:00:00.000Z", "user", "A new one"))
    wait_for(lambda: len(stored_keys()) == FIXTURE_MESSAGES + 4, timeout=15)
    assert len(looks) == 2
    watcher.stop()
