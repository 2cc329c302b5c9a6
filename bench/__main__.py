"""`make bench`: every section against real embedded servers, one report.

Results are printed as tables and saved to bench/results/latest.{json,md}. The servers under
.continuum-bench/ are stopped at the end if this run started them (data stays on disk);
servers already running when it began are left running.
"""

from __future__ import annotations

import argparse
import importlib
import os
import time
from pathlib import Path

from bench.common import BENCH_HOME, Options, bench_servers, console, save
from continuum.dev.embedded import EmbeddedServers

SECTIONS = {  # in the order they run
    "capture": "capture_bench",
    "pipeline": "pipeline_bench",
    "tracing": "tracing_bench",
    "sync": "sync_backfill",
    "recall": "recall_bench",
    "api": "api_bench",
    "freshness": "freshness_bench",
    "consolidation": "consolidation_bench",
    "encryption": "encryption_bench",
    "cli": "cli_bench",
    "summaries": "summary_bench",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller corpora, for a smoke run")
    parser.add_argument(
        "--million", action="store_true", help="recall latency at 1M memories too (~10 min)"
    )
    parser.add_argument(
        "--only", choices=sorted(SECTIONS), action="append", help="run these sections alone"
    )
    parser.add_argument(
        "--against",
        type=Path,
        metavar="CHECKOUT",
        help="api: also serve the API of this older checkout (e.g. `git worktree add "
        "/tmp/fb0ab53 fb0ab53`) on the same data, and compare (see bench/api_bench.py)",
    )
    args = parser.parse_args()
    options = Options(quick=args.quick, million=args.million, against=args.against)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    sections = []
    with EmbeddedServers(BENCH_HOME).stopped_after():
        for name in args.only or SECTIONS:
            module = importlib.import_module(f"bench.{SECTIONS[name]}")
            # A fresh database per section: no section's rows (e.g. a backfill's 150k
            # unembedded messages) can leak into another's measurements.
            urls = {}
            if getattr(module, "NEEDS_SERVERS", True):
                with console.status(f"Preparing a fresh database for {module.__name__}…"):
                    urls = bench_servers()
            for section in module.run(urls, options):
                console.print(section.table())
                sections.append(section)
    seconds = round(time.perf_counter() - started)
    path = save(sections, {"quick": args.quick, "million": args.million, "seconds": seconds})
    console.print(f"[green]✓[/] saved {path} and {path.with_suffix('.json')}")


if __name__ == "__main__":
    main()
