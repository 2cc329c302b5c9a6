"""Shared benchmark plumbing: isolated embedded servers, timing, result tables and files."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
BENCH_HOME = ROOT / ".continuum-bench"
BENCH_DATABASE = "continuum_bench"
RESULTS_DIR = ROOT / "bench" / "results"


def logs_of(section: str) -> Path:
    """The directory a section's worker processes write their logs to:
    `.continuum-bench/logs/<section>/`, emptied as the section starts and kept after it (a
    failed run's logs can be read; no run leaves a directory in /tmp)."""
    logs = BENCH_HOME / "logs" / section
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    return logs


console = Console()


def bench_servers(
    home: Path = BENCH_HOME, database: str = BENCH_DATABASE, *, fresh: bool = True
) -> dict[str, str]:
    """Embedded servers under `home` with a fresh `database` (or, `fresh=False`, the one an
    earlier run left, created if missing); env points at them. They outlive the call: a run
    that should stop the servers it started wraps itself in
    `EmbeddedServers(home).stopped_after()`, as `python -m bench` and `python -m bench.eval`
    (not `--reuse`) do."""
    import psycopg

    from continuum.config import get_settings
    from continuum.dev.embedded import EmbeddedServers

    urls = EmbeddedServers(home).up()
    with psycopg.connect(urls["database_url"].replace("+psycopg", ""), autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (database,)
        ).fetchone()
        if fresh or not exists:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{database}"')
    database_url = urls["database_url"].replace("/continuum?", f"/{database}?")
    os.environ.update(
        CONTINUUM_HOME=str(home),
        CONTINUUM_DATABASE_URL=database_url,
        CONTINUUM_REDIS_URL=urls["redis_url"],
        CONTINUUM_BROKER_URL=urls["broker_url"],
    )
    get_settings.cache_clear()
    from continuum.store import migrate

    migrate.upgrade(database_url)
    return {**urls, "database_url": database_url}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def latencies_ms(call: Callable[[], Any], n: int) -> dict[str, float]:
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return {
        "p50_ms": round(percentile(samples, 0.5), 3),
        "p95_ms": round(percentile(samples, 0.95), 3),
        "mean_ms": round(statistics.fmean(samples), 3),
    }


def alternating(rounds: int, measures: dict[str, Callable[[int], float]]) -> dict[str, float]:
    """The best of `rounds` figures of each measure (called with the round number), their
    order reversed every other round: on a shared machine one run of either can be a third
    off, and neither should always run first."""
    figures: dict[str, list[float]] = {name: [] for name in measures}
    names = list(measures)
    for round_no in range(rounds):
        for name in names if round_no % 2 == 0 else names[::-1]:
            figures[name].append(measures[name](round_no))
    return {name: max(values) for name, values in figures.items()}


@contextmanager
def timed() -> Iterator[list[float]]:
    box: list[float] = []
    started = time.perf_counter()
    yield box
    box.append(time.perf_counter() - started)


@dataclass(frozen=True)
class Options:
    """Command-line choices every section's `run` receives."""

    quick: bool = False  # smaller corpora, for a smoke run
    million: bool = False  # recall latency at 1M memories too (~9 min to generate and index them)
    against: Path | None = None  # an older checkout whose API the api section measures too


@dataclass
class Section:
    """One table of the report: rows of (metric, ours, baseline, ratio, note)."""

    title: str
    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self,
        metric: str,
        ours: float,
        baseline: float | None,
        unit: str,
        note: str = "",
        higher_is_better: bool = True,
    ) -> None:
        ratio = None
        if baseline:
            ratio = round(ours / baseline if higher_is_better else baseline / ours, 3)
        self.rows.append(
            {
                "metric": metric,
                "ours": round(ours, 3),
                "baseline": baseline and round(baseline, 3),
                "unit": unit,
                "ratio": ratio,
                "note": note,
            }
        )

    def table(self) -> Table:
        table = Table(title=self.title)
        for column in ("metric", "ours", "baseline", "unit", "ours/baseline", "baseline is"):
            table.add_column(column)
        for row in self.rows:
            table.add_row(
                row["metric"],
                f"{row['ours']:,}",
                "" if row["baseline"] is None else f"{row['baseline']:,}",
                row["unit"],
                "" if row["ratio"] is None else f"{row['ratio']:.2f}×",
                row["note"],
            )
        return table

    def markdown(self) -> str:
        lines = [
            f"### {self.title}",
            "",
            "| metric | ours | baseline | unit | ratio | baseline is |",
            "| --- | ---: | ---: | --- | ---: | --- |",
        ]
        for row in self.rows:
            ratio = "" if row["ratio"] is None else f"{row['ratio']:.2f}×"
            lines.append(
                f"| {row['metric']} | {row['ours']:,} | {row['baseline'] or ''} | "
                f"{row['unit']} | {ratio} | {row['note']} |"
            )
        return "\n".join(lines)


def save(sections: list[Section], extra: dict[str, Any]) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    data = {
        "when": stamp,
        "machine": {"cores": os.cpu_count()},
        **extra,
        "sections": [{"title": s.title, "rows": s.rows} for s in sections],
    }
    (RESULTS_DIR / "latest.json").write_text(json.dumps(data, indent=2))
    markdown = "\n\n".join(s.markdown() for s in sections)
    (RESULTS_DIR / "latest.md").write_text(f"# Benchmark results ({stamp})\n\n{markdown}\n")
    return RESULTS_DIR / "latest.md"
