"""`make bench`: every section against real embedded servers, one report.

Results are printed as tables and saved to bench/results/latest.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import time

from bench.common import bench_servers, console, save


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller corpora, for a smoke run")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    from bench import (
        capture_bench,
        consolidation_bench,
        pipeline_bench,
        recall_bench,
        sync_backfill,
    )

    sections = []
    modules = (capture_bench, pipeline_bench, sync_backfill, recall_bench, consolidation_bench)
    for module in modules:
        # A fresh database per section: no section's rows (e.g. a backfill's 150k
        # unembedded messages) can leak into another's measurements.
        with console.status(f"Preparing a fresh database for {module.__name__}…"):
            urls = bench_servers()
        for section in module.run(urls, quick=args.quick):
            console.print(section.table())
            sections.append(section)
    path = save(sections, {"quick": args.quick, "seconds": round(time.perf_counter() - started)})
    console.print(f"[green]✓[/] saved {path} and {path.with_suffix('.json')}")


if __name__ == "__main__":
    main()
