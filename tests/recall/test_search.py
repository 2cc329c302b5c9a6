"""search() on long conversations: time phrases, memories as keys of their source turns,
neighbouring turns as context, and source message ids on every hit."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest
from sqlalchemy import text

from continuum.contract.events import SessionEndEvent
from continuum.inference.embedding import forget_embedder
from continuum.pipeline.ingest import ingest_batch
from continuum.pipeline.outbox import embed_pending, reset_embeddings
from continuum.pipeline.sessions import finish_session
from continuum.recall.fusion import FusionWeights
from continuum.recall.search import SearchFilters, search
from continuum.recall.textquery import plan, query_lexemes, table_stats, tenant_stats
from continuum.store.engine import session_scope, statements_run
from continuum.sync.views import ensure_views
from tests.support.events import LONG_TURN, session_end, turn
from tests.support.plans import plan_modes

NOW = datetime(2026, 11, 24, 9, 30, tzinfo=UTC)  # a Tuesday


def session(session_id: str, when: datetime, lines: list[tuple[str, str]]) -> None:
    events = []
    for i, (role, content) in enumerate(lines):
        event = turn(content, role=role, session_id=session_id, message_id=f"{session_id}-{i}")
        event["ts"] = (when + timedelta(minutes=i)).isoformat()
        events.append(event)
    ingest_batch(events)


def ids(hits: list[Any]) -> list[str]:
    return [m for hit in hits for m in hit.source_message_ids]


def test_time_phrase_finds_the_turn_from_that_time(db: Any) -> None:
    for weeks in range(6):  # a hike every weekend; only one was last weekend
        when = datetime(2026, 11, 21, 10, tzinfo=UTC) - timedelta(weeks=weeks)
        session(f"w{weeks}", when, [("user", f"Went hiking with Sam, trail number {weeks + 3}.")])
    embed_pending()
    hits = search("pearl", "where did I go hiking last weekend?", limit=1, now=NOW)
    assert ids(hits) == ["w0-0"]
    assert "vector_in_window_rank" in hits[0].parts
    plain = search("pearl", "where did I go hiking?", limit=6, now=NOW)
    assert len(plain) == 6  # the phrase boosts, it does not filter
    explicit = search("pearl", "hiking last weekend", filters=SearchFilters(
        since=datetime(2026, 11, 1, tzinfo=UTC), until=datetime(2026, 11, 8, tzinfo=UTC)),
        now=NOW)  # fmt: skip
    assert ids(explicit) == ["w2-0"]  # explicit filters win over the phrase


def test_a_report_said_after_the_window_about_it_counts_as_in_it(db: Any) -> None:
    """ "Last weekend I went kayaking with Ines", said on Monday, answers "last weekend"
    asked on Tuesday; the same report a week earlier and plans for the next weekend do not."""
    monday = datetime(2026, 11, 23, 8, tzinfo=UTC)
    for weeks, friend in enumerate(("Ines", "Tomasz", "Aiko", "Oren")):
        said = monday - timedelta(weeks=weeks)
        session(f"k{weeks}", said, [("user", f"Last weekend I went kayaking with {friend}.")])
    session("plan", NOW - timedelta(hours=1),  # newest, and about the coming weekend
            [("user", "This weekend I want to go kayaking with Priya.")])  # fmt: skip
    embed_pending()
    hits = search("pearl", "who did I go kayaking with last weekend?", limit=3, now=NOW)
    assert ids(hits)[0] == "k0-0"
    assert "vector_in_window_rank" in hits[0].parts
    assert not any("in_window" in key for hit in hits[1:] for key in hit.parts)


@pytest.mark.parametrize("exact_rows", [2000, 1])
def test_a_window_is_ranked_exactly_unless_it_is_wide(
    db: Any, monkeypatch: pytest.MonkeyPatch, exact_rows: int
) -> None:
    """Few rows in the window: distances computed over them all. More than the limit: the
    HNSW index ranks them. Either way the same turn comes first."""
    from continuum.recall import rankings
    from continuum.recall.search import search_in

    for weeks in range(4):
        when = datetime(2026, 11, 21, 10, tzinfo=UTC) - timedelta(weeks=weeks)
        session(f"w{weeks}", when, [("user", f"Baked sourdough bread, loaf number {weeks + 1}."),
                                    ("user", "Then I cleaned the kitchen.")])  # fmt: skip
    embed_pending()
    monkeypatch.setattr(rankings, "WINDOW_EXACT_ROWS", exact_rows)
    used: list[str] = []
    ranking_sql = rankings.ranking_sql

    def spy(source: Any, channel: str, where: str, part: str) -> str:
        used.append(channel)
        return ranking_sql(source, channel, where, part)

    monkeypatch.setattr(rankings, "ranking_sql", spy)
    bound = text("SELECT current_setting('hnsw.max_scan_tuples')")
    with session_scope() as db_session:
        hits = search_in(db_session, "pearl", "what did I bake last weekend?", limit=1,
                         now=NOW)  # fmt: skip
        assert ids(hits) == ["w0-0"] and "vector_in_window_rank" in hits[0].parts
        assert db_session.execute(bound).scalar() == "20000"  # the bound was for one query
    fallbacks = used.count("vector") - 2  # beyond the plain vector channel per source
    assert used.count("vector_window") + fallbacks == 2  # one window ranking per source
    assert fallbacks >= 1 if exact_rows == 1 else fallbacks == 0  # the window's 2 turns > 1


def test_a_memory_hit_scores_its_source_turn(db: Any) -> None:
    session("s1", NOW - timedelta(days=3), [
        ("user", "Morning! Quick thing before the grocery run."),
        ("user", "Let's go with Hoffmann Landscaping for the garden, their quote is lower."),
        ("assistant", "Great, noted."),
    ])  # fmt: skip
    embed_pending()
    hits = search("pearl", "which company is doing the landscaping work?", limit=10, now=NOW)
    source = next(h for h in hits if h.source == "message" and h.source_message_ids == ["s1-1"])
    assert source.parts["memory_key"] > 0
    memory = next(h for h in hits if h.source == "memory")
    assert memory.source_message_ids == ["s1-1"]


def test_memories_never_push_turns_down(db: Any) -> None:
    """Turns score on their own scale whatever memories match: the default search lists the
    turns in the order messages-only search does (a memory may sit between them)."""
    session("s1", NOW - timedelta(days=3), [
        ("user", "Let's go with Hoffmann Landscaping for the garden, their quote is lower."),
        ("user", "The landscaping crew from Hoffmann starts work on the garden beds Monday."),
        ("user", "Garden landscaping quote from Hoffmann arrived: 4,000 for the beds."),
        ("user", "I watered the tomatoes in the garden this morning."),
    ])  # fmt: skip
    embed_pending()
    query = "who starts the landscaping work on the garden beds?"
    alone = search("pearl", query, limit=10, sources=("message",), now=NOW)
    default = search("pearl", query, limit=10, now=NOW)
    assert any(hit.source == "memory" for hit in default)
    turns = [h.source_message_ids for h in default if h.source == "message"]
    assert turns[: len(alone)] == [h.source_message_ids for h in alone]
    assert ids(alone)[0] == "s1-1"


def test_a_session_summary_cites_only_the_turns_the_query_matched(db: Any) -> None:
    """A conversation summary is built from its whole session: it lifts none of its turns
    and, as a hit, cites only those of its turns the query found, best first."""
    lines = [
        ("user", f"Small talk number {i} about the weather and the weekend.") for i in range(8)
    ]
    lines[5] = ("user", "The plumber Kowalski fixes the leaking boiler on Thursday.")
    session("s1", NOW - timedelta(days=3), lines)
    end = session_end(session_id="s1")
    end["ts"] = end["ended_at"] = (NOW - timedelta(days=3, minutes=-30)).isoformat()
    finish_session(SessionEndEvent.model_validate(end))
    embed_pending()
    with session_scope() as db_session:
        summary_sources = db_session.execute(
            text("SELECT source_message_ids FROM memories WHERE kind = 'conversation_summary'")
        ).scalar_one()
    assert len(summary_sources) == 8  # the row keeps the whole session as its provenance
    hits = search("pearl", "when does the plumber fix the boiler?", limit=10, now=NOW)
    summary = next(h for h in hits if h.kind == "conversation_summary")
    assert summary.source_message_ids == ["s1-5"]  # the small talk matched weakly if at all
    assert not any("memory_key" in h.parts for h in hits if h.source == "message")
    assert ids(hits)[0] == "s1-5"


def test_speaker_names_are_not_query_words(db: Any) -> None:
    """Transcript turns open with their speaker's name: a question naming the speaker must
    not match every turn of theirs by that word alone."""
    session("s1", NOW - timedelta(days=5), [
        ("user", "Caroline: Hey Mel, long time no see!"),
        ("assistant", "Melanie: Hi Caroline! How have you been?"),
        ("user", "Caroline: Busy! I researched adoption agencies all week."),
        ("assistant", "Melanie: That is wonderful news."),
        ("user", "Caroline: Glad it helped ya, Melanie!"),
        ("user", "Caroline: Catch ya later!"),
    ])  # fmt: skip
    embed_pending()
    hits = search("pearl", "What did Caroline research?", limit=6, sources=("message",), now=NOW)
    assert ids(hits)[0] == "s1-2"
    assert [ids([h]) for h in hits if "text_rank" in h.parts] == [["s1-2"]]


def test_what_the_named_person_said_ranks_before_what_they_were_told(db: Any) -> None:
    session("s1", NOW - timedelta(days=5), [
        ("user", "Caroline: Melanie, do your kids like museums?"),
        ("assistant", "Melanie: My kids love dinosaurs, the museum was a hit."),
        ("user", "Caroline: Dinosaurs and kids, Melanie, what a pair! My kids love dinosaurs too."),
        ("assistant", "Melanie: Ha, we should go together."),
        ("user", "Caroline: Deal, next weekend then."),
        ("assistant", "Melanie: See you then!"),
    ])  # fmt: skip
    embed_pending()
    hits = search("pearl", "What do Melanie's kids love?", limit=4, sources=("message",), now=NOW)
    assert ids(hits)[0] == "s1-1"
    assert hits[0].parts["speaker"] > 0
    # Naming every speaker of the tenant favours no one.
    both = search("pearl", "What do Melanie and Caroline's kids love?", limit=4,
                  sources=("message",), now=NOW)  # fmt: skip
    assert not any("speaker" in h.parts for h in both)


def test_a_long_turn_is_found_by_the_sentence_that_answers(db: Any) -> None:
    """Each sentence of a long turn is a statement: the turn scores by its best one, and
    the statement itself is never a hit."""
    session("s1", NOW - timedelta(days=3), [
        ("user", LONG_TURN),
        ("user", "Our daughter's birthday party is on Saturday."),
        ("user", "School starts again on Monday after the trip."),
    ])  # fmt: skip
    embed_pending()
    hits = search("pearl", "What does my daughter want to study later?", limit=3, now=NOW)
    assert ids(hits)[0] == "s1-0"
    assert hits[0].parts["statement"] > 0
    assert not [h for h in hits if h.kind == "statement"]
    memories = search("pearl", "marine biology", sources=("memory",), now=NOW)
    assert not [h for h in memories if h.kind == "statement"]


def test_neighbours_come_from_the_same_session(db: Any) -> None:
    session("s1", NOW - timedelta(days=2), [
        ("user", "What was the name of the vet?"),
        ("assistant", "Dr. Okafor at the Elm Street clinic."),
        ("user", "Thanks, book the cat's checkup there."),
    ])  # fmt: skip
    session("s2", NOW - timedelta(days=2, minutes=-2), [("user", "Unrelated other session.")])
    embed_pending()
    hits = search("pearl", "Okafor Elm Street clinic", limit=1, sources=("message",),
                  neighbours=1, now=NOW)  # fmt: skip
    assert ids(hits) == ["s1-1"]
    assert [n["message_id"] for n in hits[0].neighbours] == ["s1-0", "s1-2"]
    assert hits[0].as_dict()["neighbours"][0]["role"] == "user"


def test_reembedding_keeps_half_precision_vectors_and_their_index(db: Any) -> None:
    session("r1", NOW - timedelta(days=3), [("user", "The boiler pressure gauge reads 0.4 bar.")])
    embed_pending()
    cleared = reset_embeddings()
    assert cleared["messages"] >= 1
    unembedded = search("pearl", "boiler pressure", limit=1, now=NOW)
    assert "vector_rank" not in unembedded[0].parts  # found by its words alone meanwhile
    embed_pending()
    hit = search("pearl", "heating pressure", limit=1, now=NOW)[0]
    assert ids([hit]) == ["r1-0"] and "vector_rank" in hit.parts
    with session_scope() as conn:
        kinds = conn.execute(
            text(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attname = 'embedding' AND attrelid IN ('memories'::regclass, "
                "'messages'::regclass)"
            )
        ).scalars()
        assert set(kinds) == {"halfvec(384)"}
        indexes = conn.execute(
            text("SELECT indexdef FROM pg_indexes WHERE indexname LIKE '%\\_embedding'")
        ).scalars()
        assert (
            sorted(i.split(" USING ")[1] for i in indexes)
            == ["hnsw (embedding halfvec_cosine_ops)"] * 2
        )


@pytest.mark.parametrize("dim", [384, 256])
def test_reembedding_works_beside_the_views_of_synced_instances(
    db: Any, settings_env: Any, dim: int
) -> None:
    """A synced instance has a view over every column of `messages`; a model change (a new
    dimension) must retype the column without losing the view."""
    with session_scope() as conn:
        ensure_views(conn, ["pearl"])
    session("v1", NOW - timedelta(days=1), [("user", "The boiler pressure gauge reads 0.4 bar.")])
    settings_env(embedding_provider="none", embedding_dim=dim)
    forget_embedder()
    reset_embeddings()
    with session_scope() as conn:
        column = conn.scalar(
            text(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attname = 'embedding' AND attrelid = 'messages_pearl'::regclass"
            )
        )
        assert column == f"halfvec({dim})"
        assert conn.scalar(text("SELECT count(*) FROM messages_pearl")) == 1
    settings_env(embedding_provider=None, embedding_dim=None)
    forget_embedder()
    reset_embeddings()  # back to the model's own dimension for the tests after


def test_text_channel_is_bounded_by_analyzed_statistics(
    db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [("user", f"Weekly standup notes, item {i}: nothing blocking.") for i in range(300)]
    lines[137] = ("user", "Standup notes: the Zanzibar ferry tickets are booked.")
    session("big", NOW - timedelta(days=1), lines)
    with session_scope() as conn:
        conn.execute(text("ANALYZE messages"))
    table_stats.clear()
    with session_scope() as conn:
        stats = tenant_stats(conn, "messages", "pearl")  # its partition's statistics
        lexemes = query_lexemes(conn, "standup zanzibar")
    assert stats.lexeme_freqs["standup"] == pytest.approx(1.0)
    assert stats.expected_rows("pearl", ("standup",)) == pytest.approx(300, rel=0.05)
    assert plan(lexemes, stats, "pearl", budget=50) == "'zanzibar'"  # the everyday word is out
    monkeypatch.setattr("continuum.recall.search.plan", partial(plan, budget=50))
    hits = search("pearl", "standup zanzibar", limit=3, now=NOW, sources=("message",))
    assert ids(hits)[0] == "big-137"
    assert all("text_rank" not in h.parts for h in hits[1:])  # only the rare word's row matched


def test_rankings_are_planned_with_their_query_values(db: Any) -> None:
    """A generic plan (Postgres may pick one once psycopg prepares a statement it has run
    a few times) cannot see the tsquery or the vector: every search's rankings are planned
    with them, the reads by key after them on generic plans, for its own transaction only."""
    from continuum.recall.search import search_in

    session("p1", NOW, [("user", "The garden drainage quote came in at 900 euros.")])
    show = text("SELECT current_setting('plan_cache_mode')")
    with session_scope() as db_session, statements_run() as sent:
        for _ in range(7):  # past psycopg's prepare threshold
            assert ids(search_in(db_session, "pearl", "garden drainage quote")) == ["p1-0"]
    modes = plan_modes(sent, {"text": "'text:", "vector": "'vector:", "lifted": "WITH lifted"})
    assert modes == {"text": ["force_custom_plan"] * 7, "vector": ["force_custom_plan"] * 7,
                     "lifted": ["force_generic_plan"] * 7}  # fmt: skip
    with session_scope() as db_session:
        assert db_session.execute(show).scalar() == "auto"


def test_a_turn_is_lifted_by_the_best_match_of_its_session(db: Any) -> None:
    """Two equally weak matches: the one said in the session the query reaches strongly
    ranks first (without the session's lift, the other matches a word more)."""
    session("s1", NOW - timedelta(days=3), [
        ("user", "The plumber Kowalski fixes the leaking boiler on Thursday."),
        ("user", "Then the radiator, maybe."),
    ])  # fmt: skip
    session("s2", NOW - timedelta(days=9), [
        ("user", "What about the radiator? Our radiator rattles, the old radiator leaks."),
    ])  # fmt: skip
    embed_pending()
    query = "when does Kowalski fix the leaking boiler, and what about the radiator?"
    lifted = ids(search("pearl", query, limit=10, now=NOW))
    assert lifted.index("s1-1") < lifted.index("s2-0")
    alone = ids(search("pearl", query, limit=10, now=NOW, weights=FusionWeights(session=0.0)))
    assert alone.index("s2-0") < alone.index("s1-1")


def test_the_turn_after_a_strong_match_is_lifted_though_it_shares_no_word(db: Any) -> None:
    """The answer to a matched question rarely repeats its words: the turns next to one of
    the best turns score at least a share of it, found by a channel or not."""
    session("s1", NOW - timedelta(days=3), [
        ("assistant", "When does the plumber Kowalski come to fix the leaking boiler?"),
        ("user", "Thursday at nine, he said."),
    ])  # fmt: skip
    session("s2", NOW - timedelta(days=5), [
        ("user", f"The old boiler of flat {i} is fine.") for i in range(12)
    ])  # fmt: skip
    embed_pending()
    query = "when does the plumber Kowalski fix the boiler?"
    no_session = FusionWeights(session=0.0)  # the adjacency alone
    lifted = search("pearl", query, limit=5, now=NOW, weights=no_session)
    assert ids(lifted)[:2] == ["s1-0", "s1-1"]
    assert lifted[1].parts.get("adjacent")
    alone = ids(search("pearl", query, limit=5, now=NOW, weights=replace(no_session, adjacent=0)))
    assert alone[0] == "s1-0" and "s1-1" not in alone[:3]
