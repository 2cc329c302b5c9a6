"""Scoring, dedupe and packing of the context block as pure functions (continuum.recall.packing,
continuum.recall.render): no Postgres, no Redis — candidates are built by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from continuum.inference.tokenizer import count_block_tokens, count_tokens
from continuum.recall.items import SECTIONS, Candidate, Excluded, RecallConfig
from continuum.recall.packing import dedupe, drop_tracked, merge, pack, score
from continuum.recall.render import day_of, header, line

NOW = datetime(2026, 11, 24, 9, 30, tzinfo=UTC)
CONFIG = RecallConfig()


def memory(
    number: int,
    content: str,
    *,
    kind: str = "fact",
    points: float = 0.5,
    days_ago: float = 1,
    sources: tuple[str, ...] = (),
) -> Candidate:
    return Candidate(
        source="memory",
        ref=f"memory:{number}",
        kind=kind,
        content=content,
        created_at=NOW - timedelta(days=days_ago),
        importance=6,
        db_id=number,
        session_id="s1",
        source_message_ids=list(sources),
        channels={"recency": "recent"},
        score=points,
    )


def turn(message_id: str, content: str, *, points: float = 0.5) -> Candidate:
    return Candidate(
        source="message",
        ref=f"message:s1/{message_id}",
        kind="user",
        content=content,
        created_at=NOW - timedelta(hours=1),
        session_id="s1",
        source_message_ids=[message_id],
        channels={"relevance": "relevance #1"},
        score=points,
    )


def budget_for(*candidates: Candidate) -> int:
    """The exact tokens of a block holding `candidates`: its header, section and day
    headings, and lines."""
    sections = {c.section for c in candidates}
    days = {(c.section, day_of(c.section, c.created_at, NOW)) for c in candidates}
    return (
        count_tokens(header(NOW))
        + sum(count_tokens(f"## {section}") for section in sections)
        + sum(count_tokens(day) for _, day in days if day)
        + sum(count_tokens(line(c, NOW, CONFIG)) for c in candidates)
    )


# -- scoring ---------------------------------------------------------------------------
def test_score_adds_the_weighted_parts() -> None:
    candidate = memory(1, "Jason likes tea.", days_ago=14)  # one half-life old
    candidate.importance, candidate.relevance = 8, 0.5
    score(candidate, NOW, CONFIG, seeded=True)
    assert candidate.parts == {"relevance": 0.5, "importance": 0.8, "recency": 0.5, "pinned": 0.0}
    assert candidate.score == pytest.approx(0.55 * 0.5 + 0.25 * 0.8 + 0.2 * 0.5)


def test_pinned_items_lead_without_a_seed_and_yield_to_it() -> None:
    pinned = memory(1, "Prefers the speaker volume at 75%.", kind="preference")
    pinned.channels = {"preferences": "preference"}
    plain = memory(2, "Jason has four grandchildren.")
    for candidate in (pinned, plain):
        score(candidate, NOW, CONFIG, seeded=False)
    assert pinned.parts["pinned"] == 0.25 and plain.parts["pinned"] == 0.0
    assert pinned.score == pytest.approx(plain.score + 0.25)
    score(pinned, NOW, CONFIG, seeded=True)
    assert pinned.parts["pinned"] == 0.0 and pinned.score == pytest.approx(plain.score)


def test_an_unrated_turn_ranks_below_a_rated_memory() -> None:
    raw, rated = turn("m1", "We talked about tea."), memory(1, "Jason likes tea.", days_ago=0)
    raw.created_at = rated.created_at
    for candidate in (raw, rated):
        score(candidate, NOW, CONFIG, seeded=True)
    assert raw.parts["importance"] == 0.4 and rated.parts["importance"] == 0.6
    assert raw.score < rated.score


def test_merge_keeps_one_candidate_per_ref_with_every_channel() -> None:
    recent = memory(1, "Decided to hire Hoffmann.")
    relevant = memory(1, "Decided to hire Hoffmann.")
    relevant.channels, relevant.relevance = {"relevance": "relevance #1"}, 0.7
    merged = merge([[recent], [relevant, memory(2, "Other.")]])
    assert [c.ref for c in merged] == ["memory:1", "memory:2"]
    assert merged[0].channels.keys() == {"recency", "relevance"}
    assert merged[0].relevance == 0.7


# -- dedupe ----------------------------------------------------------------------------
def test_the_higher_scored_of_the_same_text_is_kept() -> None:
    weak = memory(1, "Decided to hire  Hoffmann.", points=0.4)
    strong = memory(2, "decided to hire hoffmann.", points=0.9)
    excluded: list[Excluded] = []
    kept = dedupe([weak, strong], set(), excluded)
    assert kept == [strong]
    assert excluded == [
        Excluded(ref="memory:1", kind="fact", reason="same text as memory:2", score=0.4)
    ]


def test_near_duplicate_pairs_keep_the_better_one() -> None:
    weak = memory(1, "Hoffmann does the garden.", points=0.3)
    strong = memory(2, "The garden goes to Hoffmann.", points=0.6)
    unrelated = memory(3, "Jason likes tea.", points=0.1)
    excluded: list[Excluded] = []
    kept = dedupe([weak, strong, unrelated], {frozenset(("memory:1", "memory:2"))}, excluded)
    assert [c.ref for c in kept] == ["memory:2", "memory:3"]
    assert [e.reason for e in excluded] == ["near-duplicate of memory:2"]


def test_a_turn_is_covered_by_a_memory_extracted_from_it_even_if_it_scores_higher() -> None:
    said = turn("m1", "Let's go with Hoffmann, their quote is lower.", points=0.9)
    fact = memory(1, "Decided to hire Hoffmann.", points=0.5, sources=("m1",))
    excluded: list[Excluded] = []
    assert dedupe([said, fact], set(), excluded) == [fact]
    assert excluded[0].reason == "covered by memory:1, extracted from this turn"


def test_a_summary_covers_no_turn() -> None:
    said = turn("m1", "Let's go with Hoffmann, their quote is lower.")
    summary = memory(1, "Call about the garden.", kind="conversation_summary", sources=("m1",))
    excluded: list[Excluded] = []
    assert dedupe([said, summary], set(), excluded) == [summary, said]
    assert excluded == []


def test_a_memory_tracked_as_a_task_gives_way_to_it() -> None:
    task = Candidate(
        source="task", ref="task:t1", kind="pending", content="Call Hoffmann",
        created_at=NOW, covers=["memory:1"],
    )  # fmt: skip
    tracked, other = memory(1, "Must call Hoffmann."), memory(2, "Jason likes tea.")
    excluded: list[Excluded] = []
    assert drop_tracked([task, tracked, other], excluded) == [task, other]
    assert excluded == [
        Excluded(ref="memory:1", kind="fact", reason="tracked as task:t1", score=0.5)
    ]


# -- packing ---------------------------------------------------------------------------
def test_the_best_scored_item_wins_the_last_room() -> None:
    weak = memory(1, "Jason likes tea.", points=0.3)  # shorter: it would fit first
    strong = memory(2, "Jason has three brothers and a sister.", points=0.8)
    assert budget_for(weak) < budget_for(strong)
    excluded: list[Excluded] = []
    items, _, _ = pack([weak, strong], budget_for(strong), NOW, CONFIG, excluded)
    assert [i.ref for i in items] == ["memory:2"]
    assert excluded == [
        Excluded(ref="memory:1", kind="fact", reason="over the token budget", score=0.3)
    ]


def test_an_item_that_does_not_fit_is_skipped_for_a_smaller_one() -> None:
    long = memory(1, "Jason talked at length about the garden. " * 6, points=0.9)
    short = memory(2, "Jason likes tea.", points=0.2)
    budget = budget_for(short) + 2  # room for the short one, not the long one
    assert budget < budget_for(long)
    excluded: list[Excluded] = []
    items, _, _ = pack([long, short], budget, NOW, CONFIG, excluded)
    assert [i.ref for i in items] == ["memory:2"]
    assert [e.ref for e in excluded] == ["memory:1"]


def test_the_handoff_goes_in_first_whatever_its_score() -> None:
    summary = "User is switching from voice to discord (2 min ago): the garden drainage quote."
    handoff = Candidate(
        source="handoff", ref="handoff", kind="handoff", content=summary, created_at=None,
        score=0.1,
    )  # fmt: skip
    best = memory(1, "Jason likes tea.", points=0.9)
    assert budget_for(best) <= budget_for(handoff)  # by score alone, the memory would win
    items, block, _ = pack([best, handoff], budget_for(handoff), NOW, CONFIG, [])
    assert [i.ref for i in items] == ["handoff"]
    assert block.splitlines()[2:] == ["## Pending handoff", f"- {summary}"]


def test_a_section_heading_is_charged_when_the_section_opens() -> None:
    """The short item's line fits in what is left, its section's heading does not."""
    long = memory(1, "Jason talked at length about the garden. " * 4, points=0.9)
    short = memory(2, "Decided on tea.", kind="decision", points=0.5)
    budget = budget_for(long) + count_tokens(line(short, NOW, CONFIG))
    excluded: list[Excluded] = []
    items, block, tokens_used = pack([long, short], budget, NOW, CONFIG, excluded)
    assert [i.ref for i in items] == ["memory:1"] and "## Decisions" not in block
    assert [e.ref for e in excluded] == ["memory:2"]
    assert tokens_used == budget_for(long)


@pytest.mark.parametrize("budget", [0, 5, 20, 40, 80, 160, 1000])
def test_the_budget_is_never_exceeded(budget: int) -> None:
    candidates = [
        memory(n, f"Memory number {n} says something about the garden and Hoffmann. " * (n % 3 + 1),
               kind=("fact", "decision", "preference", "conversation_summary")[n % 4],
               points=n / 20, days_ago=n)
        for n in range(1, 16)
    ]  # fmt: skip
    excluded: list[Excluded] = []
    items, block, tokens_used = pack(candidates, budget, NOW, CONFIG, excluded)
    assert tokens_used == count_block_tokens(block) <= budget
    assert len(items) + len(excluded) == len(candidates)
    if budget >= 1000:
        assert len(items) == len(candidates) and not excluded
    if budget == 0:
        assert block == "" and items == []


def test_the_block_follows_section_order_newest_conversation_first() -> None:
    older = memory(1, "Older call about the roof.", kind="conversation_summary", days_ago=5)
    newer = memory(2, "Newer call about the garden.", kind="conversation_summary", days_ago=1)
    older.score, newer.score = 0.9, 0.2  # conversations go by date, not score
    low = memory(3, "Jason has three brothers.", points=0.1, days_ago=2)
    high = memory(4, "Jason has four grandchildren.", points=0.7, days_ago=3)
    decision = memory(5, "Decided to hire Hoffmann.", kind="decision", points=0.05)
    items, block, _ = pack([low, older, decision, high, newer], 1000, NOW, CONFIG, [])
    # dated sections in time order, whatever the scores: the older fact first
    assert [i.ref for i in items] == ["memory:2", "memory:1", "memory:5", "memory:4", "memory:3"]
    headings = [row[3:] for row in block.splitlines() if row.startswith("## ")]
    assert headings == ["Recent conversations", "Decisions", "Relevant memories"]
    assert headings == [s for s in SECTIONS if s in headings]
    assert items[0].text == "- 2026-11-23 (Mon, yesterday) Newer call about the garden."


def test_lines_of_one_day_share_its_heading_which_is_charged_once() -> None:
    first = memory(1, "Jason has three brothers.", points=0.9, days_ago=3)
    second = memory(2, "Jason has four grandchildren.", points=0.5, days_ago=3)
    other_day = memory(3, "Jason moved to Ohio.", points=0.7, days_ago=1)
    budget = budget_for(first, second, other_day)
    items, block, used = pack([other_day, first, second], budget, NOW, CONFIG, [])
    assert len(items) == 3 and used == budget  # two day headings charged, not three
    assert block.splitlines()[-5:] == [
        "### 2026-11-21 (Sat, 3 days ago)",
        "- Jason has three brothers.",
        "- Jason has four grandchildren.",
        "### 2026-11-23 (Mon, yesterday)",
        "- Jason moved to Ohio.",
    ]
    assert count_block_tokens(block) == used


def test_a_day_heading_is_charged_in_each_section_it_opens() -> None:
    decision = memory(1, "Decided to hire Hoffmann.", kind="decision", points=0.9)
    fact = memory(2, "Jason has four grandchildren.", points=0.5)  # the same day
    short = memory(3, "Tea.", points=0.3)  # would fit only if that heading were free
    budget = budget_for(decision, fact)
    items, block, used = pack([decision, fact, short], budget, NOW, CONFIG, [])
    assert [i.ref for i in items] == ["memory:1", "memory:2"]
    assert used == budget == count_block_tokens(block)
    assert block.count("### 2026-11-23 (Mon, yesterday)") == 2


def test_with_a_seed_what_it_did_not_reach_only_fills_the_room_left() -> None:
    task = memory(1, "Water the garden.", points=0.0)
    task.score, task.relevance = 0.9, 0.0  # pinned and important, unrelated to the seed
    hit = memory(2, "Jason has three brothers and a sister.", points=0.3)
    hit.relevance = 0.4
    room = budget_for(hit)
    seeded, _, _ = pack([task, hit], room, NOW, CONFIG, [], seeded=True)
    assert [i.ref for i in seeded] == ["memory:2"]
    unseeded, _, _ = pack([task, hit], room, NOW, CONFIG, [])
    assert "memory:1" in [i.ref for i in unseeded]  # without a seed, score decides
    both, _, _ = pack([task, hit], budget_for(task, hit), NOW, CONFIG, [], seeded=True)
    assert {i.ref for i in both} == {"memory:1", "memory:2"}  # room left is filled


def test_a_summary_is_clipped_later_than_other_items() -> None:
    text = "word " * 100  # 500 characters: over an item's 300, under a summary's 700
    assert len(line(memory(1, text, kind="conversation_summary"), NOW, CONFIG)) > 400
    assert len(line(memory(2, text), NOW, CONFIG)) < 340


def test_a_turn_names_its_speaker_once() -> None:
    said = turn("m1", "Melanie: The kids loved the dinosaur exhibit.")
    plain = turn("m2", "Can Hoffmann start on Monday?")
    assert line(said, NOW, CONFIG) == "- Melanie: The kids loved the dinosaur exhibit."
    assert line(plain, NOW, CONFIG) == "- user: Can Hoffmann start on Monday?"
