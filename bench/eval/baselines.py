"""Baseline retrievers over one conversation's turns: BM25, dense (our embedder), and the
reciprocal-rank fusion of the two. Ties rank in transcript order.

Made comparable with the published reference figures of the split: words are lowercase
`[a-z0-9]+` runs without scikit-learn's English stop words; BM25 is Okapi with k1 1.5 and
b 0.75, where a word found in more than half the turns (a negative idf) weighs epsilon (0.25)
times the mean idf; the fusion adds 1 / (60 + rank) from the BM25 ranking of the turns
sharing a word with the question and from the full dense ranking.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

RRF_K = 60
_WORD = re.compile(r"[a-z0-9]+")

Scores = NDArray[np.float64]
Order = NDArray[np.intp]


def tokenize(text: str) -> list[str]:
    return [word for word in _WORD.findall(text.lower()) if word not in ENGLISH_STOP_WORDS]


class BM25:
    """Okapi BM25 over tokenized documents."""

    def __init__(
        self,
        documents: Sequence[Sequence[str]],
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
    ) -> None:
        self.size, self.k1 = len(documents), k1
        lengths = np.array([len(doc) for doc in documents], dtype=np.float64)
        self.norm = k1 * (1 - b + b * lengths / lengths.mean())
        postings: dict[str, tuple[list[int], list[int]]] = {}
        for index, doc in enumerate(documents):
            for word, count in Counter(doc).items():
                docs, counts = postings.setdefault(word, ([], []))
                docs.append(index)
                counts.append(count)
        self.postings = {w: (np.array(d), np.array(c)) for w, (d, c) in postings.items()}
        idf = {
            word: math.log(self.size - len(docs) + 0.5) - math.log(len(docs) + 0.5)
            for word, (docs, _) in postings.items()
        }
        floor = epsilon * sum(idf.values()) / len(idf)
        self.idf = {word: value if value >= 0 else floor for word, value in idf.items()}

    def scores(self, query: Sequence[str]) -> Scores:
        """One score per document; a word repeated in the query counts again."""
        out = np.zeros(self.size)
        for word in query:
            if word not in self.postings:
                continue
            docs, counts = self.postings[word]
            out[docs] += self.idf[word] * (counts * (self.k1 + 1) / (counts + self.norm[docs]))
        return out


def ranking(scores: Scores) -> Order:
    """Document indexes, best score first, ties in index order."""
    return np.argsort(-scores, kind="stable")


def rrf(size: int, rankings: Sequence[Order]) -> Scores:
    """Reciprocal-rank fusion: each ranking adds 1 / (RRF_K + rank) to the documents it lists."""
    out = np.zeros(size)
    for order in rankings:
        out[order] += 1.0 / (RRF_K + np.arange(1, len(order) + 1))
    return out


def hybrid_ranking(bm25_scores: Scores, dense_scores: Scores) -> Order:
    """RRF of the BM25 ranking (documents scoring above 0) and the dense ranking."""
    lexical = ranking(bm25_scores)
    fused = rrf(len(dense_scores), [lexical[bm25_scores[lexical] > 0], ranking(dense_scores)])
    return ranking(fused)
