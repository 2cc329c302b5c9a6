"""The systems every question is asked of, each giving ranked turn ids, timed per question:
Continuum's search (default sources, and messages only) and context block, scoped to the
conversation's namespace, and the baselines (BM25, dense, their fusion) over the same turns."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.common import percentile
from bench.eval.baselines import BM25, Order, Scores, hybrid_ranking, ranking, tokenize
from bench.eval.budget import Block, Section
from bench.eval.locomo import Conversation, Question
from bench.eval.scoring import DEPTH, first_occurrences
from continuum.inference.embedding import Embedder, embed_query_soon
from continuum.recall.context import context
from continuum.recall.rankings import Source
from continuum.recall.search import search
from continuum.sync import namespace_for

CONTEXT_TOKENS = 800  # the default budget of GET /v1/context and `continuum recall context`
Ranker = Callable[[Question], list[str]]


@dataclass
class Run:
    """One system's answers (at most DEPTH turn ids per question) and timings."""

    system: str
    results: dict[str, list[str]]
    latencies_ms: list[float]
    init_s: float
    build_s: float

    def timing(self) -> dict[str, float]:
        return {
            "init_s": self.init_s,
            "build_s": self.build_s,
            "n_queries": len(self.latencies_ms),
            "query_p50_ms": percentile(self.latencies_ms, 0.5),
            "query_p95_ms": percentile(self.latencies_ms, 0.95),
            "query_mean_ms": statistics.fmean(self.latencies_ms),
        }

    def run_file(self) -> dict[str, Any]:
        """The run-file format of the split's harness and scorer."""
        return {"system": self.system, "k": DEPTH, "timing": self.timing(),
                "results": self.results}  # fmt: skip


def run(
    system: str,
    questions: Sequence[Question],
    rank: Ranker,
    timings: tuple[float, float],
    asked: Callable[[], None],
) -> Run:
    """Ask every question (after one untimed warm-up call), calling `asked` after each;
    `timings` are the system's (init_s, build_s)."""
    rank(questions[0])
    results, latencies = {}, []
    for question in questions:
        started = time.perf_counter()
        ranked = rank(question)
        latencies.append((time.perf_counter() - started) * 1000)
        results[question.qid] = first_occurrences(ranked)[:DEPTH]
        asked()
    return Run(system, results, latencies, *timings)


def search_ranker(sources: tuple[Source, ...]) -> Ranker:
    """search(limit=DEPTH): each hit's source message ids, in hit order (a memory's best first)."""

    def rank(question: Question) -> list[str]:
        hits = search(namespace_for(question.instance), question.text, limit=DEPTH,
                      sources=sources)  # fmt: skip
        return [message_id for hit in hits for message_id in hit.source_message_ids]

    return rank


@dataclass
class ContextBlocks:
    """A ranker over context blocks (seeded with the question, `budget` tokens): the items'
    source message ids, best-scored item first (the block shows them by section and day).
    Keeps what each block's sections held."""

    budget: int = CONTEXT_TOKENS
    blocks: dict[str, Block] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)  # whole blocks, headings included

    def __call__(self, question: Question) -> list[str]:
        result = context(namespace_for(question.instance), question.text, self.budget)
        block: Block = {}
        for item in result.items:
            section = block.setdefault(item.section, Section())
            section.ids += item.source_message_ids
            section.tokens += item.tokens
            section.lines += 1
        self.blocks[question.qid] = block
        self.tokens[question.qid] = result.tokens_used
        ranked = sorted(result.items, key=lambda item: -item.score)
        return [message_id for item in ranked for message_id in item.source_message_ids]


class Baselines:
    """BM25 and dense indexes of each conversation's turns, and their rankers."""

    def __init__(self, conversations: Sequence[Conversation], embedder: Embedder) -> None:
        self.embedder = embedder
        self.ids = {c.instance: [t.dia_id for t in c.turns] for c in conversations}
        started = time.perf_counter()
        self.lexical = {
            c.instance: BM25([tokenize(t.text) for t in c.turns]) for c in conversations
        }
        self.bm25_build_s = time.perf_counter() - started
        started = time.perf_counter()
        self.vectors = {
            c.instance: np.array(embedder.embed([t.text for t in c.turns])) for c in conversations
        }
        self.dense_build_s = time.perf_counter() - started

    def _bm25_scores(self, question: Question) -> Scores:
        return self.lexical[question.instance].scores(tokenize(question.text))

    def _dense_scores(self, question: Question) -> Scores:
        embedding = embed_query_soon(question.text)  # search's own way to embed a query
        assert embedding is not None
        vector = np.array(embedding.result())
        scores: Scores = self.vectors[question.instance] @ vector  # cosine: unit vectors
        return scores

    def _turns(self, question: Question, order: Order) -> list[str]:
        ids = self.ids[question.instance]
        return [ids[index] for index in order[:DEPTH]]

    def bm25(self, question: Question) -> list[str]:
        return self._turns(question, ranking(self._bm25_scores(question)))

    def dense(self, question: Question) -> list[str]:
        return self._turns(question, ranking(self._dense_scores(question)))

    def hybrid(self, question: Question) -> list[str]:
        fused = hybrid_ranking(self._bm25_scores(question), self._dense_scores(question))
        return self._turns(question, fused)
