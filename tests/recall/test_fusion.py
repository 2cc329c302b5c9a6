"""Fusion's lifts, worked out by hand on hits made here (no database): a turn gains a share
of its session's best match; a turn lifted only because it follows a best turn is no match,
neither for its session's best nor for what a digest cites."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from continuum.recall.fusion import Fusion, FusionWeights, SearchHit

NOW = datetime(2026, 11, 24, 9, 30, tzinfo=UTC)


def hit(source: str, ident: int, session: str, score: float, kind: str = "user") -> SearchHit:
    message_ids = [f"{session}-{ident}"] if source == "message" else ["a-1", "a-2", "a-3"]
    made = SearchHit(source, ident, f"text {ident}", NOW, session, None, kind, None, message_ids)
    made.score = score
    return made


def fused(*hits: SearchHit, lifted: dict[int, float] | None = None) -> list[SearchHit]:
    fusion = Fusion(FusionWeights(session=0.3, digest_evidence=0.5))
    for made in hits:
        fusion.hits[(made.source, made.id)] = made
    fusion.unlifted = lifted or {}
    return fusion.ranked()


def test_a_turn_gains_a_share_of_its_sessions_best_match() -> None:
    ranked = fused(hit("message", 1, "a", 1.0), hit("message", 2, "a", 0.2),
                   hit("message", 3, "b", 0.3))  # fmt: skip
    scores = {made.id: made.score for made in ranked}
    assert scores == pytest.approx({1: 1.3, 2: 0.5, 3: 0.39})
    assert [made.id for made in ranked] == [1, 2, 3]  # 2 passes 3, which matched better


def test_a_turn_lifted_for_following_a_best_turn_is_no_match() -> None:
    # turn 2 scored 0.3 only as the turn after turn 1 (it matched nothing itself)
    follower = hit("message", 2, "a", 0.3)
    digest = hit("memory", 9, "a", 0.5, kind="conversation_summary")
    ranked = fused(hit("message", 1, "a", 1.0), follower, digest, lifted={2: 0.0})
    assert follower.score == pytest.approx(0.3 + 0.3 * 1.0)  # the session's lift on top
    cited = next(made for made in ranked if made.id == 9).source_message_ids
    assert cited == ["a-1"]  # the digest cites what the query matched, not the follower


def test_a_lifted_turn_does_not_set_its_sessions_best() -> None:
    follower = hit("message", 2, "c", 0.6)  # lifted from a best turn of another session
    ranked = fused(hit("message", 1, "c", 0.1), follower, lifted={2: 0.0})
    assert {made.id: made.score for made in ranked} == pytest.approx({1: 0.13, 2: 0.63})


def test_a_turn_said_by_the_person_the_query_names_gains_its_share() -> None:
    said = hit("message", 1, "a", 0.5)
    said.content = "Melanie: The kids loved the dinosaur exhibit."
    addressed = hit("message", 2, "b", 0.6)
    addressed.content = "Caroline: Thanks, Melanie! The kids sound great."
    fusion = Fusion(FusionWeights(session=0.0, speaker=0.5), named={"Melanie"})
    for made in (said, addressed):
        fusion.hits[(made.source, made.id)] = made
    ranked = fusion.ranked()
    assert [made.id for made in ranked] == [1, 2]  # what Melanie said, before what she was told
    assert said.score == pytest.approx(0.75) and addressed.score == pytest.approx(0.6)
    assert said.parts["speaker"] == 0.5 and "speaker" not in addressed.parts
