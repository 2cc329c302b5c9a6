"""The embedding outbox against real Postgres and the real model: how a claim is encoded,
that every vector lands on its own row, and that the time budget releases what it leaves."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text

from continuum.inference.embedding import Embedder, EmbeddingError, get_embedder, vector_literal
from continuum.pipeline.outbox import embed_batch, pending_counts
from continuum.store.engine import session_scope

SHORT = [f"Tea {i}." for i in range(4)]
LONG = [f"The quarterly garden budget note number {i} lists hedges and gravel." for i in range(4)]


class RecordingEmbedder:
    """The real model, remembering the texts of each call."""

    def __init__(self, model: Embedder) -> None:
        self.model_name, self.dim = model.model_name, model.dim
        self.model = model
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return self.model.embed(texts)


def add_memories(contents: list[str]) -> None:
    with session_scope() as db:
        db.execute(
            text(
                "INSERT INTO memories (namespace, kind, content, idempotency_key) "
                "SELECT 'pearl', 'fact', c, md5(c) FROM unnest(CAST(:c AS text[])) "
                "WITH ORDINALITY AS u(c, n) ORDER BY n"
            ),
            {"c": contents},
        )


def recorder() -> RecordingEmbedder:
    model = get_embedder()
    assert model is not None
    return RecordingEmbedder(model)


def test_a_claim_is_encoded_shortest_first_and_each_vector_lands_on_its_row(db: Any) -> None:
    add_memories([text for pair in zip(LONG, SHORT, strict=True) for text in pair])  # mixed
    embedder = recorder()
    assert embed_batch("memories", embedder, batch_size=2, deadline=float("inf")) == 8
    # One claim, cut into batches after sorting by length: no batch pads a short text.
    assert embedder.calls == [SHORT[:2], SHORT[2:], LONG[:2], LONG[2:]]
    with session_scope() as s:
        stored = dict(s.execute(text("SELECT content, embedding::text FROM memories")).all())
        for content, vector in zip(SHORT + LONG, embedder.model.embed(SHORT + LONG), strict=True):
            distance = s.scalar(
                text("SELECT CAST(:a AS halfvec) <=> CAST(:b AS halfvec)"),
                {"a": stored[content], "b": vector_literal(vector)},
            )
            assert distance < 1e-3, content


def test_a_spent_budget_finishes_one_batch_and_releases_the_rest(db: Any) -> None:
    add_memories(SHORT + LONG)
    embedder = recorder()
    assert embed_batch("memories", embedder, batch_size=3, deadline=0.0) == 3
    assert embedder.calls == [SHORT[:3]]
    assert pending_counts()["memories"] == 5
    # Committed and unlocked: the next claim takes the rest at once.
    assert embed_batch("memories", embedder, batch_size=3, deadline=float("inf")) == 5
    assert pending_counts()["memories"] == 0


class FailingSecondCall(RecordingEmbedder):
    def embed(self, texts: list[str]) -> list[list[float]]:
        if self.calls:
            raise EmbeddingError("the endpoint went away")
        return super().embed(texts)


def test_a_failure_mid_claim_writes_nothing_and_leaves_every_row_pending(db: Any) -> None:
    add_memories(SHORT + LONG)
    model = get_embedder()
    assert model is not None
    with pytest.raises(EmbeddingError):
        embed_batch("memories", FailingSecondCall(model), batch_size=2, deadline=float("inf"))
    # The first batch's vectors were written in the claiming transaction: rolled back too.
    assert pending_counts()["memories"] == 8
