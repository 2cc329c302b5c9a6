"""Retrieval metrics over ranked turn ids, per question against its evidence turns.

For each question the ranking is deduplicated (first occurrence kept), then
Recall@k = evidence turns in the top k / evidence turns, Hit@k = any of them in the top k
(k = 1, 5, 10, 20, 50), and NDCG@10 with binary relevance (the ideal ranking puts every
evidence turn first). A system's figure is the mean over questions; a question it gave no
answer for scores 0. Recall@10 is also reported per question category.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Protocol

KS = (1, 5, 10, 20, 50)
DEPTH = KS[-1]  # turn ids kept per question
NDCG_AT = 10
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


class Scored(Protocol):
    @property
    def qid(self) -> str: ...
    @property
    def category(self) -> int: ...
    @property
    def evidence(self) -> tuple[str, ...]: ...


def first_occurrences(ids: Iterable[str]) -> list[str]:
    """`ids` in order without repeats."""
    return list(dict.fromkeys(ids))


def _dcg(relevant: Iterable[bool]) -> float:
    return sum(1 / math.log2(rank + 1) for rank, hit in enumerate(relevant, start=1) if hit)


def score(ranked: Sequence[str], evidence: Collection[str]) -> dict[str, float]:
    """Recall@k, Hit@k and NDCG@10 of one ranking."""
    ranked, gold = first_occurrences(ranked), set(evidence)
    row: dict[str, float] = {}
    for k in KS:
        found = len(gold.intersection(ranked[:k]))
        row[f"recall@{k}"] = found / len(gold)
        row[f"hit@{k}"] = float(found > 0)
    ideal = _dcg([True] * min(len(gold), NDCG_AT))
    row[f"ndcg@{NDCG_AT}"] = _dcg(turn in gold for turn in ranked[:NDCG_AT]) / ideal
    return row


def category_key(category: int) -> str:
    return f"recall@10_cat{category}_{CATEGORIES[category]}"


def evaluate(results: Mapping[str, Sequence[str]], questions: Sequence[Scored]) -> dict[str, float]:
    """The means over `questions` of `score`, Recall@10 per category, and how many
    questions were scored and how many had no answer in `results`."""
    rows = [(q.category, score(results.get(q.qid, []), q.evidence)) for q in questions]
    out = {key: _mean([row[key] for _, row in rows]) for key in rows[0][1]}
    for category in CATEGORIES:
        out[category_key(category)] = _mean([r["recall@10"] for c, r in rows if c == category])
    out["n_questions"] = len(rows)
    out["n_missing"] = sum(q.qid not in results for q in questions)
    return out


def coverage(ids: Iterable[str], evidence: Collection[str]) -> float:
    """The fraction of the evidence turns found anywhere in `ids`."""
    return len(set(evidence).intersection(ids)) / len(evidence)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan
