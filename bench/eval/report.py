"""The evaluation's report: one table (systems as rows) printed and written to
bench/results/eval.{json,md}, and each system's run file under bench/results/eval-runs/."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from bench.common import RESULTS_DIR
from bench.eval.scoring import CATEGORIES, KS, NDCG_AT, category_key
from bench.eval.systems import Run

RUNS_DIR = RESULTS_DIR / "eval-runs"
COLUMNS = (
    [(f"R@{k}", f"recall@{k}") for k in KS]
    + [(f"Hit@{k}", f"hit@{k}") for k in KS]
    + [(f"NDCG@{NDCG_AT}", f"ndcg@{NDCG_AT}")]
    + [(f"R@10 {label}", category_key(c)) for c, label in CATEGORIES.items()]
)
TIMING_COLUMNS = (("build s", "build_s", 1), ("p50 ms", "query_p50_ms", 2),
                  ("p95 ms", "query_p95_ms", 2))  # fmt: skip


def _cells(system: dict[str, Any]) -> list[str]:
    metrics, timing = system["metrics"], system["timing"]
    cells = [f"{metrics[key]:.3f}" for _, key in COLUMNS]
    return cells + [f"{timing[key]:.{digits}f}" for _, key, digits in TIMING_COLUMNS]


def table(systems: dict[str, dict[str, Any]], title: str, caption: str) -> Table:
    out = Table(title=title, caption=caption, box=box.SIMPLE_HEAD, pad_edge=False)
    out.add_column("system")
    for header in [h for h, _ in COLUMNS] + [h for h, _, _ in TIMING_COLUMNS]:
        out.add_column(header.replace(" ", "\n"), justify="right")
    for name, system in systems.items():
        out.add_row(name, *_cells(system))
    return out


def show(console: Console, renderable: Table) -> None:
    """Print at the table's natural width, wider than the terminal if need be (19 columns
    squeezed into 80 would cut every figure)."""
    natural = Measurement.get(console, console.options.update_width(10_000), renderable).maximum
    Console(width=max(console.width, natural)).print(renderable)


def markdown(systems: dict[str, dict[str, Any]], title: str, caption: str) -> str:
    headers = ["system"] + [h for h, _ in COLUMNS] + [h for h, _, _ in TIMING_COLUMNS]
    lines = [f"# {title}", "", "| " + " | ".join(headers) + " |",
             "| --- |" + " ---: |" * (len(headers) - 1)]  # fmt: skip
    lines += ["| " + " | ".join([name, *_cells(s)]) + " |" for name, s in systems.items()]
    return "\n".join([*lines, "", caption, ""])


def save(runs: list[Run], systems: dict[str, dict[str, Any]], extra: dict[str, Any],
         title: str, caption: str, appendix: str = "") -> Path:  # fmt: skip
    """Write the run files, eval.json and eval.md; returns the path of eval.md."""
    RUNS_DIR.mkdir(parents=True, exist_ok=True)
    for stale in RUNS_DIR.glob("*.json"):
        stale.unlink()
    for run in runs:
        (RUNS_DIR / f"{run.system}.json").write_text(json.dumps(run.run_file()) + "\n")
    data = {
        "when": datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        "machine": {"cores": os.cpu_count()},
        **extra,
        "systems": systems,
    }
    (RESULTS_DIR / "eval.json").write_text(json.dumps(data, indent=2) + "\n")
    path = RESULTS_DIR / "eval.md"
    path.write_text(markdown(systems, title, caption) + (f"\n{appendix}" if appendix else ""))
    return path
