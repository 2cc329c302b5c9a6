"""`make eval` (`python -m bench.eval`): the retrieval evaluation on the LoCoMo dev split read
from CONTINUUM_EVAL_LOCOMO; skipped, with a note saying what to set, when it is absent.

Runs on its own embedded servers under .continuum-eval/ with a fresh database each time,
and stops them at the end if it started them (servers already running are left running).
`--reuse` scores the database the last run synced instead (no sync, no worker: for
iterating on recall, not on capture) and leaves the servers running on purpose, so the next
`--reuse` starts at once; stop them with `CONTINUUM_HOME=.continuum-eval continuum dev down`.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import time
from dataclasses import asdict
from functools import partial
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bench.common import ROOT, bench_servers, console
from bench.eval import budget, locomo, report
from bench.eval.ingest import Ingested, ingest, ingested
from bench.eval.scoring import evaluate
from bench.eval.systems import (
    CONTEXT_TOKENS,
    Baselines,
    ContextBlocks,
    Ranker,
    Run,
    run,
    search_ranker,
)
from continuum.config import get_settings
from continuum.dev.embedded import EmbeddedServers

EVAL_HOME = ROOT / ".continuum-eval"
BUDGETS = (CONTEXT_TOKENS, CONTEXT_TOKENS // 2)  # the block against packed search at each
EVAL_DATABASE = "continuum_eval"


def _reuse() -> tuple[float, float, Ingested]:
    """The servers and database an earlier run left, as they are; build_s is 0."""
    started = time.perf_counter()
    with console.status("Starting the eval's embedded servers on the last run's database…"):
        bench_servers(EVAL_HOME, EVAL_DATABASE, fresh=False)
    found = ingested()
    if not found.messages:
        raise SystemExit("--reuse: no synced conversations in the eval database; run without it")
    return time.perf_counter() - started, 0.0, found


def _load(split: locomo.Split) -> tuple[float, float, Ingested]:
    """Fresh servers (database and Redis emptied), the transcripts written and synced, the
    queues drained; returns (init_s, build_s, what was ingested)."""
    import redis

    started = time.perf_counter()
    with console.status("Starting the eval's embedded servers with a fresh database…"):
        urls = bench_servers(EVAL_HOME, EVAL_DATABASE)
        for url in (urls["redis_url"], urls["broker_url"]):  # no task of an earlier run
            with redis.Redis.from_url(url) as client:
                client.flushdb()
    init_s = time.perf_counter() - started
    started = time.perf_counter()
    transcripts = EVAL_HOME / "transcripts"
    shutil.rmtree(transcripts, ignore_errors=True)
    instances = locomo.write_transcripts(split.conversations, transcripts)
    ingested = ingest(instances, EVAL_HOME, urls["broker_url"], console)
    return init_s, time.perf_counter() - started, ingested


def _ask(
    split: locomo.Split, ours: tuple[float, float]
) -> tuple[list[Run], dict[int, ContextBlocks]]:
    """Every question to every system: the baselines' indexes are built first, then ours
    are asked, then the baselines."""
    from continuum.inference.embedding import get_embedder

    started = time.perf_counter()
    embedder = get_embedder()
    assert embedder is not None, (
        "the dense baseline needs embeddings (CONTINUUM_EMBEDDING_PROVIDER)"
    )
    model_s = time.perf_counter() - started
    with console.status("Indexing the turns for the baselines…"):
        baselines = Baselines(split.conversations, embedder)
    blocks = {budget: ContextBlocks(budget) for budget in BUDGETS}
    dense_build = baselines.dense_build_s
    systems: list[tuple[str, Ranker, tuple[float, float]]] = [
        ("search", search_ranker(("memory", "message")), ours),
        ("search-messages", search_ranker(("message",)), ours),
        ("context-block", blocks[CONTEXT_TOKENS], ours),
        *[(f"context-block-{b}", blocks[b], ours) for b in BUDGETS if b != CONTEXT_TOKENS],
        ("bm25", baselines.bm25, (0.0, baselines.bm25_build_s)),
        ("dense", baselines.dense, (model_s, dense_build)),
        ("hybrid", baselines.hybrid, (model_s, baselines.bm25_build_s + dense_build)),
    ]
    questions = split.questions
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())  # fmt: skip
    runs = []
    with Progress(*columns, console=console) as progress:
        for name, rank, timings in systems:
            task = progress.add_task(f"asking {name}", total=len(questions))
            runs.append(run(name, questions, rank, timings, partial(progress.advance, task)))
    return runs, blocks


def _held(
    split: locomo.Split, runs: list[Run], blocks: dict[int, ContextBlocks]
) -> list[budget.Held]:
    """Each block beside packed search (default and messages-only) at the same budget."""
    from continuum.inference.tokenizer import count_tokens

    texts = {(c.instance, t.dia_id): t.text for c in split.conversations for t in c.turns}
    results = {r.system: r.results for r in runs}
    held = []
    for size in BUDGETS:
        block = blocks[size]
        held.append(
            budget.block_held("context block", size, block.blocks, block.tokens, split.questions)
        )
        for system in ("search", "search-messages"):
            held.append(budget.packed_search(f"packed {system}", results[system],
                                             split.questions, texts, size, count_tokens))  # fmt: skip
    return held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="score the database the last run synced (skips the sync and the worker)",
    )
    args = parser.parse_args()
    path = get_settings().eval_locomo
    if not path.is_file():
        console.print(
            f"[yellow]Skipped:[/] no LoCoMo dev split at {path}. Set CONTINUUM_EVAL_LOCOMO to "
            "the path of its locomo-dev.json to run the retrieval evaluation."
        )
        return
    started = time.perf_counter()
    split = locomo.load(path)
    turns = sum(len(c.turns) for c in split.conversations)
    console.print(
        f"LoCoMo dev: {len(split.conversations)} conversations, {turns:,} turns, "
        f"{len(split.questions)} scored questions ({split.dropped} without evidence dropped)"
    )
    # --reuse keeps the servers up for the next --reuse; a full run stops those it started.
    servers = EmbeddedServers(EVAL_HOME)
    with contextlib.nullcontext() if args.reuse else servers.stopped_after():
        init_s, build_s, loaded = _reuse() if args.reuse else _load(split)
        runs, blocks = _ask(split, (init_s, build_s))
    systems: dict[str, dict[str, Any]] = {
        r.system: {
            "metrics": evaluate(r.results, split.questions),
            "timing": r.timing(),
            "run_file": f"{r.system}.json",
        }
        for r in runs
    }
    held = _held(split, runs, blocks)
    sections = budget.by_section(blocks[CONTEXT_TOKENS].blocks, split.questions)
    whole_block, tokens = held[0].recall, held[0].tokens
    seconds = time.perf_counter() - started
    title = (
        f"Retrieval on LoCoMo dev: {len(split.questions)} questions over {turns:,} turns "
        f"of {len(split.conversations)} conversations (run in {seconds:.0f}s)"
    )
    caption = (
        f"context-block: whole-block evidence recall {whole_block:.3f}, mean "
        f"{tokens:.0f} of {CONTEXT_TOKENS} tokens. Ours built from transcripts by sync and "
        f"real workers ({loaded.messages:,} messages, {loaded.memories:,} memories"
        f"{', reused' if args.reuse else ''}); "
        "the baselines index the same turns."
    )
    report.show(console, report.table(systems, title, caption))
    rows = budget.held_rows(held, sections)
    report.show(console, budget.held_table(rows))
    extra = {
        "data": str(path),
        "n_questions": len(split.questions),
        "n_dropped_no_evidence": split.dropped,
        "seconds": round(seconds, 1),
        "ingest": asdict(loaded),
        "reused_database": args.reuse,
        "context_block": {
            "max_tokens": CONTEXT_TOKENS,
            "whole_block_recall": whole_block,
            "mean_tokens_used": tokens,
        },
        "held_at_budget": [asdict(row) for row in held],
        "block_sections": {
            name: {"evidence_recall": r, "lines": n, "tokens": k}
            for name, (r, n, k) in sections.items()
        },
    }
    saved = report.save(runs, systems, extra, title, caption, budget.held_markdown(rows))
    console.print(f"[green]✓[/] saved {saved}, {saved.with_suffix('.json')}, {report.RUNS_DIR}/")


if __name__ == "__main__":
    main()
