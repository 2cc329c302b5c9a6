"""Key-moment capture and session digests on a realistic two-session conversation: an
elderly user on a voice channel, then a project planning chat on Discord, with small
talk, tool output, pasted logs and web pages mixed in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from continuum.capture import (
    STORE_THRESHOLD,
    CaptureTurn,
    MemoryCandidate,
    detect_key_moments,
    judge_chunk,
    session_snapshot,
    summarize_session,
)
from continuum.domain.text import third_person

VOICE_START = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
DISCORD_START = datetime(2025, 3, 4, 14, 0, tzinfo=UTC)

STACK_TRACE = """We're blocked on this error from the ingest worker:
```
Traceback (most recent call last):
  File "workers/ingest.py", line 42, in run
    rows = parse(batch)
ValueError: invalid literal for int() with base 10: 'abc'
```"""
WEB_PAGE = (
    "<html><head><title>Postgres 17 release notes</title></head><body><div>"
    "Read more at https://www.postgresql.org/docs/17/release-17.html and "
    "https://www.postgresql.org/about/news/ ...</div></body></html>"
)
TOOL_JSON = '{"rows": 1200, "status": "ok", "duration_ms": 85}'

VOICE = [
    ("v1", "user", "hi"),
    ("v2", "assistant", "Good morning Margaret! How are you today?"),
    (
        "v3",
        "user",
        "I'm feeling a bit lonely these days, but my daughter Sarah visits on weekends.",
    ),
    ("v4", "assistant", "I'm sorry to hear that. It's lovely that Sarah visits you."),
    ("v5", "user", "Could you turn it up? I like the volume at 75%, it's easier to hear."),
    ("v6", "user", "I have three grandchildren and they're all in school now."),
    ("v7", "user", "Actually, four grandchildren, not three."),
    ("v8", "user", "I have a doctor appointment on Tuesday at 10am."),
    ("v9", "assistant", "I'll remind you about the doctor appointment on Monday evening."),
    ("v10", "user", "ok"),
    ("v11", "user", "thanks!"),
    ("v12", "user", "Does Medicare cover my new hearing aids?"),
    ("v13", "assistant", "I'm not sure, I couldn't find your plan details."),
]
DISCORD = [
    ("d1", "user", "hey"),
    ("d2", "user", "Let's plan the Postgres migration for project Atlas today."),
    ("d3", "assistant", "Sure! Would you prefer Postgres or MySQL for the event store?"),
    (
        "d4",
        "user",
        "For project Atlas, let's use Postgres for the event store, it has better JSON support. "
        "I'll write the migration script by Friday.",
    ),
    ("d5", "tool", TOOL_JSON),
    ("d6", "user", STACK_TRACE),
    ("d7", "user", "I'm so frustrated"),
    (
        "d8",
        "assistant",
        "Let's go with a retry wrapper around the ingest worker for now. "
        "I'll explain how it works.",
    ),
    ("d9", "user", "ok let's do it"),
    ("d10", "user", "Please never deploy on Fridays."),
    ("d11", "user", WEB_PAGE),
    ("d12", "assistant", "HEARTBEAT_OK"),
    ("d13", "user", "this is great, thanks!"),
    ("d14", "user", "Should we go with Redis for the cache?"),
    ("d15", "user", "Maybe we'll use Redis later, not sure yet."),
]


def _turns(rows, session_id, channel, start):
    turns = []
    for i, (message_id, speaker, content) in enumerate(rows):
        turns.append(
            CaptureTurn(
                message_id=message_id,
                role="assistant" if speaker == "assistant" else "user",
                content=content,
                created_at=start + timedelta(seconds=40 * i),
                session_id=session_id,
                channel=channel,
                user_id="margaret",
                source="tool" if speaker == "tool" else "user",
            )
        )
    return turns


VOICE_TURNS = _turns(VOICE, "voice-1", "voice", VOICE_START)
DISCORD_TURNS = _turns(DISCORD, "discord-7", "discord", DISCORD_START)


def _captured(turns) -> dict[str, list[MemoryCandidate]]:
    """Run inline capture over a session the way the events worker does."""
    out, previous = {}, None
    for turn in turns:
        out[turn.message_id] = detect_key_moments(turn, previous=previous)
        previous = turn
    return out


@pytest.fixture(scope="module")
def voice() -> dict[str, list[MemoryCandidate]]:
    return _captured(VOICE_TURNS)


@pytest.fixture(scope="module")
def discord() -> dict[str, list[MemoryCandidate]]:
    return _captured(DISCORD_TURNS)


def _only(found: list[MemoryCandidate]) -> MemoryCandidate:
    assert len(found) == 1, [m.content for m in found]
    return found[0]


# --- what a careful human would keep -----------------------------------------------------


def test_lonely_user_with_visiting_daughter_gives_wellbeing_and_family_fact(voice):
    by_kind = {m.kind: m for m in voice["v3"]}
    assert set(by_kind) == {"wellbeing", "fact"}
    mood = by_kind["wellbeing"]
    assert mood.importance == 6
    assert "lonely" in mood.content
    daughter = by_kind["fact"]
    assert daughter.key == "daughter_sarah"
    assert daughter.content == "User's daughter Sarah visits on weekends"
    assert "person:sarah" in daughter.tags
    assert daughter.claim is not None
    assert (daughter.claim.subject, daughter.claim.value) == ("user", "Sarah")
    assert daughter.provenance == "user_explicit"
    assert daughter.source_message_ids == ["v3"]


def test_volume_preference_has_key_value_and_claim(voice):
    volume = _only(voice["v5"])
    assert volume.kind == "preference"
    assert volume.key == "volume_level"
    assert volume.content == "User prefers the volume at 75%"
    assert 6 <= volume.importance <= 8
    assert volume.claim is not None
    assert (volume.claim.predicate, volume.claim.value, volume.claim.scope) == (
        "volume_level",
        "75%",
        "global",
    )
    assert volume.claim.valid_from == VOICE_START + timedelta(seconds=160)
    assert "topic:volume" in volume.tags
    assert volume.confidence >= 0.85


def test_grandchildren_correction_reuses_key_and_predicate(voice):
    original, correction = _only(voice["v6"]), _only(voice["v7"])
    assert original.key == correction.key == "grandchildren_count"
    assert original.claim and correction.claim
    assert original.claim.predicate == correction.claim.predicate == "grandchildren_count"
    assert (original.claim.value, correction.claim.value) == ("3", "4")
    assert correction.content == "User has 4 grandchildren (corrected from 3)"
    assert correction.details == {"correction": True, "replaces": "3"}
    assert correction.importance > original.importance
    assert 5 <= original.importance <= 8


def test_doctor_appointment_is_a_timed_follow_up(voice):
    appointment = _only(voice["v8"])
    assert appointment.kind == "follow_up"
    assert appointment.time_expression == "on Tuesday at 10am"
    assert appointment.content == "User has a doctor appointment on Tuesday at 10am"
    assert "status:open" in appointment.tags
    assert "topic:doctor-appointment" in appointment.tags


def test_assistant_reminder_promise_is_an_inferred_follow_up(voice):
    reminder = _only(voice["v9"])
    assert reminder.kind == "follow_up"
    assert reminder.provenance == "inference"
    assert reminder.confidence < 0.7
    assert reminder.content == "Remind user about the doctor appointment on Monday evening"
    assert reminder.time_expression == "on Monday evening"


def test_question_the_assistant_could_not_answer_becomes_an_open_thread(voice):
    assert voice["v12"] == []  # a question alone is not a memory
    thread = _only(voice["v13"])
    assert thread.kind == "open_thread"
    assert "hearing aids" in thread.content
    assert thread.source_message_ids == ["v12", "v13"]
    assert 7 <= thread.importance <= 9
    assert "status:open" in thread.tags


def test_project_decision_and_commitment(discord):
    by_kind = {m.kind: m for m in discord["d4"]}
    assert set(by_kind) == {"decision", "commitment"}
    decision = by_kind["decision"]
    assert decision.content == "Decided to use Postgres for the event store"
    assert 8 <= decision.importance <= 10
    assert decision.claim is not None
    assert (decision.claim.subject, decision.claim.predicate, decision.claim.value) == (
        "atlas",
        "uses_database",
        "Postgres",
    )
    assert {"project:atlas", "topic:database-event-store", "status:closed"} <= set(decision.tags)
    assert {"source:user", "session:discord-7"} <= set(decision.tags)
    commitment = by_kind["commitment"]
    assert commitment.content == "User committed to write the migration script by Friday"
    assert commitment.time_expression == "by Friday"
    # importance orders the result
    assert [m.kind for m in discord["d4"]] == ["decision", "commitment"]


def test_blocker_survives_a_pasted_stack_trace_without_the_trace(discord):
    blocker = _only(discord["d6"])
    assert blocker.kind == "open_thread"
    assert blocker.content == "Blocked on this error from the ingest worker"
    assert blocker.details == {"blocker": True}
    assert "Traceback" not in blocker.content
    assert blocker.importance == 8


def test_short_messages_with_sentiment_or_acknowledgment(discord):
    frustrated = _only(discord["d7"])
    assert (frustrated.kind, frustrated.importance) == ("wellbeing", 6)
    pleased = _only(discord["d13"])
    assert (pleased.kind, pleased.importance) == ("context", 6)
    assert pleased.details == {"sentiment": "positive"}
    agreed = _only(discord["d9"])
    assert (agreed.kind, agreed.importance) == ("context", 5)
    assert agreed.content == (
        'User agreed ("ok let\'s do it") to: '
        '"Let\'s go with a retry wrapper around the ingest worker for now."'
    )
    assert agreed.source_message_ids == ["d8", "d9"]


def test_assistant_confirmed_decision_is_inference_and_chit_chat_is_not_kept(discord):
    decision = _only(discord["d8"])  # "I'll explain how it works" is not a commitment
    assert decision.kind == "decision"
    assert decision.provenance == "inference"
    assert decision.confidence < 0.9
    assert decision.content == "Decided to go with a retry wrapper around the ingest worker"


def test_standing_instruction_is_a_high_importance_preference(discord):
    rule = _only(discord["d10"])
    assert rule.kind == "preference"
    assert rule.key == "rule_deployment_fridays"
    assert rule.importance == 8
    assert rule.content == "User wants the assistant to never deploy on Fridays"


# --- what a careful human would not keep ------------------------------------------------


@pytest.mark.parametrize("message_id", ["v1", "v2", "v4", "v10", "v11"])
def test_small_talk_and_assistant_chit_chat_are_not_memories(voice, message_id):
    assert voice[message_id] == []


@pytest.mark.parametrize(
    "message_id",
    [
        "d1",  # greeting
        "d2",  # planning talk without a key moment
        "d3",  # assistant question
        "d5",  # tool output
        "d11",  # pasted web page
        "d12",  # heartbeat
        "d14",  # a question is not a decision
        "d15",  # a hedged maybe is not a decision
    ],
)
def test_noise_questions_and_hedges_are_not_memories(discord, message_id):
    assert discord[message_id] == []


def test_every_memory_is_compact_tagged_and_traceable(voice, discord):
    everything = [m for found in (*voice.values(), *discord.values()) for m in found]
    assert len(everything) == 16
    for memory in everything:
        assert len(memory.content) <= 300
        assert memory.trigger == "turn"
        assert any(t.startswith("topic:") for t in memory.tags)
        assert any(t.startswith("session:") for t in memory.tags)
        assert memory.source_message_ids


# --- per-turn rules ----------------------------------------------------------------------


def _turn(content: str, role: str = "user", message_id: str = "x1") -> CaptureTurn:
    return CaptureTurn(
        message_id=message_id,
        role=role,  # type: ignore[arg-type]
        content=content,
        created_at=DISCORD_START,
        session_id="s-rules",
        channel="cli",
    )


def test_at_most_three_writes_keeps_the_most_important():
    turn = _turn(
        "We decided to use Celery for the workers. I'm blocked on the Redis config. "
        "My name is Tom. I love jazz. I'll call the vendor tomorrow."
    )
    found = detect_key_moments(turn)
    assert [m.kind for m in found] == ["decision", "open_thread", "fact"]
    assert [m.importance for m in found] == sorted((m.importance for m in found), reverse=True)
    everything = detect_key_moments(turn, max_writes=10)
    assert {m.kind for m in everything} == {
        "decision",
        "open_thread",
        "fact",
        "preference",
        "commitment",
    }


def test_repeated_statement_in_one_turn_is_deduplicated():
    found = detect_key_moments(_turn("Let's go with Redis. Let's go with Redis!"))
    assert [m.content for m in found] == ["Decided to go with Redis"]


def test_short_decision_is_still_a_decision():
    decision = _only(detect_key_moments(_turn("let's go with Redis")))
    assert decision.kind == "decision"
    assert decision.claim is not None
    assert (decision.claim.predicate, decision.claim.value) == ("uses_cache", "Redis")


def test_assistant_never_states_user_facts():
    assert (
        detect_key_moments(_turn("I have three grandchildren and I live in Ohio.", "assistant"))
        == []
    )


def test_remind_me_keeps_the_time_in_text_and_expression():
    reminder = _only(detect_key_moments(_turn("remind me to call my daughter tomorrow at 3pm")))
    assert reminder.kind == "follow_up"
    assert reminder.content == "Remind user to call their daughter tomorrow at 3pm"
    assert reminder.time_expression == "tomorrow at 3pm"


def test_temporal_decision_claim():
    decision = _only(detect_key_moments(_turn("We're switching to Kubernetes next week.")))
    assert decision.claim is not None
    assert decision.claim.scope == "temporal"
    assert decision.claim.predicate == "uses_deployment"
    assert decision.time_expression == "next week"


def test_negative_decision_makes_no_uses_claim():
    decision = _only(detect_key_moments(_turn("I've decided not to renew the AWS contract.")))
    assert decision.content == "Decided not to renew the AWS contract"
    assert decision.claim is None
    assert decision.importance == 9


def test_commitment_wins_over_the_relation_it_mentions():
    visit = _only(detect_key_moments(_turn("I'm going to visit my sister Anna next weekend.")))
    assert visit.kind == "commitment"
    assert visit.content == "User committed to visit their sister Anna next weekend"
    assert visit.time_expression == "next weekend"
    assert "person:anna" in visit.tags


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("My name is margaret.", "name", "Margaret"),
        ("I live in Denver with my husband.", "home_location", "Denver"),
        ("My wife's birthday is March 5th.", "wife_birthday", "March 5th"),
        ("I'm allergic to penicillin.", "allergy_penicillin", "penicillin"),
        ("I prefer Python over Go for scripts.", "preferred_language", "Python"),
        ("My favorite color is blue.", "favorite_color", "blue"),
        ("I hate loud notifications.", "likes_loud_notifications", "hates"),
    ],
)
def test_keyed_facts_and_preferences(text, key, value):
    memory = _only(detect_key_moments(_turn(text)))
    assert memory.key == key
    assert memory.claim is not None
    assert (memory.claim.subject, memory.claim.predicate, memory.claim.value) == (
        "user",
        key,
        value,
    )


@pytest.mark.parametrize(
    "text",
    [
        "I'm going to bed",
        "Never mind, forget it.",
        "I like that.",
        "If we go with MySQL we lose jsonb.",
        "What do you think, should we use Redis?",
        "I'll be honest, no idea.",
        "Switching to the new laptop was easy.",
        "I always forget my keys.",
    ],
)
def test_phrases_that_look_like_key_moments_but_are_not(text):
    assert detect_key_moments(_turn(text)) == []


# --- digests -----------------------------------------------------------------------------


def test_session_summary_fields():
    summary = summarize_session(DISCORD_TURNS)
    assert summary.session_id == "discord-7"
    assert summary.channel == "discord"
    assert summary.user_id == "margaret"
    assert summary.message_count == len(DISCORD_TURNS)
    assert summary.started_at == DISCORD_START
    assert summary.ended_at == DISCORD_START + timedelta(seconds=40 * (len(DISCORD) - 1))
    assert summary.topics[:3] == ["Postgres migration", "project Atlas", "event store"]
    assert summary.key_decisions == [
        "Decided to use Postgres for the event store",
        "Decided to go with a retry wrapper around the ingest worker",
    ]
    assert summary.action_items == ["User committed to write the migration script by Friday"]
    assert summary.open_threads == ["Blocked on this error from the ingest worker"]
    assert summary.summary.startswith("Discord conversation (15 messages) about ")
    assert "Decisions: Decided to use Postgres for the event store" in summary.summary
    assert "Open: Blocked on this error" in summary.summary
    assert "HEARTBEAT" not in summary.summary and "Traceback" not in summary.summary


def test_summary_keeps_only_the_corrected_fact_and_orders_unsorted_turns():
    summary = summarize_session(list(reversed(VOICE_TURNS)))
    assert summary.started_at == VOICE_START
    assert summary.action_items == [
        "User has a doctor appointment on Tuesday at 10am",
        "Remind user about the doctor appointment on Monday evening",
    ]
    assert summary.open_threads == [
        'Unanswered question from user: "Does Medicare cover my new hearing aids?"'
    ]


@pytest.mark.parametrize(
    ("messages", "sentiment"),
    [
        (["The server is down, I need this fixed asap", "thanks, great work"], "urgent"),
        (["ugh, the import still doesn't work", "this is great, thanks!"], "frustrated"),
        (["The new dashboard looks amazing", "ok"], "positive"),
        (["Let's look at the schema", "ok"], "neutral"),
    ],
)
def test_session_sentiment(messages, sentiment):
    turns = [_turn(text, message_id=f"s{i}") for i, text in enumerate(messages)]
    assert summarize_session(turns).sentiment == sentiment


def test_session_snapshot_lists_decisions_blockers_and_references():
    snapshot = session_snapshot(DISCORD_TURNS)
    assert snapshot is not None
    assert (snapshot.kind, snapshot.importance, snapshot.trigger) == ("session_snapshot", 7, "idle")
    assert snapshot.provenance == "system"
    assert snapshot.details["blockers"] == ["Blocked on this error from the ingest worker"]
    assert "Decided to use Postgres for the event store" in snapshot.details["decisions"]
    assert snapshot.details["references"] == ["project atlas"]
    assert snapshot.details["doing"] == "Maybe we'll use Redis later, not sure yet."
    assert "Blockers: Blocked on this error" in snapshot.content
    assert snapshot.source_message_ids == [t.message_id for t in DISCORD_TURNS]
    assert {"project:atlas", "session:discord-7"} <= set(snapshot.tags)


def test_snapshot_of_small_talk_is_none_and_pre_compaction_trigger_is_kept():
    assert (
        session_snapshot(
            _turns([("a", "user", "hi"), ("b", "user", "thanks!")], "s", "voice", VOICE_START)
        )
        is None
    )
    snapshot = session_snapshot(VOICE_TURNS, trigger="pre_compaction")
    assert snapshot is not None and snapshot.trigger == "pre_compaction"


def test_judge_chunk():
    small_talk = _turns(
        [("a", "user", "hi"), ("b", "user", "ok"), ("c", "user", "thanks!")],
        "s",
        "voice",
        VOICE_START,
    )
    assert judge_chunk(small_talk) == ("noise", 1)
    chatter = [_turn("The weather in Lisbon was lovely this week", message_id="c1")]
    category, importance = judge_chunk(chatter)
    assert (category, importance) == ("context", 3)
    assert importance < STORE_THRESHOLD
    assert judge_chunk(DISCORD_TURNS[:6]) == ("decision", 8)
    assert judge_chunk(DISCORD_TURNS[:6]).importance >= STORE_THRESHOLD


# --- summaries a person would accept ------------------------------------------------------

TELEGRAM_START = datetime(2026, 11, 21, 18, 5, tzinfo=UTC)  # a Saturday evening
TELEGRAM = [
    ("t1", "user", "Quick one: I prefer emails short, no more than five sentences."),
    ("t2", "assistant", "Understood, I'll keep the Hoffmann email under five sentences."),
    (
        "t3",
        "user",
        "Also I have a doctor's appointment on Tuesday at 10, remind me the day before.",
    ),
    (
        "t4",
        "assistant",
        "I'll remind you on Monday about the doctor's appointment on Tuesday at 10.",
    ),
]


def test_a_confirmed_reminder_is_one_action_item_due_the_day_it_names():
    summary = summarize_session(_turns(TELEGRAM, "telegram-1", "telegram", TELEGRAM_START))
    item = "Remind user on Monday about the doctor's appointment on Tuesday at 10"
    assert summary.action_items == [item]
    assert summary.due_at == {item: datetime(2026, 11, 23, 9, 0, tzinfo=UTC)}
    assert summary.summary.endswith(f"Action items: {item} (due Mon 23 Nov).")
    assert not {"says", "short", "five", "quick"} & set(" ".join(summary.topics).split())
    assert "doctor's appointment" in summary.topics


def test_a_captured_commitment_is_due_from_when_it_was_said():
    commitment = _only(detect_key_moments(_turn("I'll write the migration script by Friday.")))
    assert commitment.due_at == datetime(2025, 3, 7, 9, 0, tzinfo=UTC)  # the Friday after


def test_a_past_event_is_not_an_open_follow_up():
    said = "Last Friday I went to a council meeting about the new bike lanes."
    assert detect_key_moments(_turn(said)) == []
    assert detect_key_moments(_turn("I had a dentist appointment on Monday.")) == []
    upcoming = _only(detect_key_moments(_turn("I have a dentist appointment on Monday.")))
    assert upcoming.content == "User has a dentist appointment on Monday"


def test_past_tense_verbs_get_no_third_person_s():
    assert third_person("I went to the market and I booked a table") == (
        "User went to the market and the user booked a table"
    )
    assert third_person("I need a break") == "User needs a break"


def test_a_decision_drops_the_clause_that_follows_it():
    decision = _only(
        detect_key_moments(_turn("Let's go with the lake lodge, the hotel was too far away."))
    )
    assert decision.content == "Decided to go with the lake lodge"


def test_a_title_abbreviation_does_not_end_the_sentence():
    appointment = _only(
        detect_key_moments(_turn("I have an appointment with Dr. Keller on Friday at 3pm."))
    )
    assert appointment.content == "User has an appointment with Dr. Keller on Friday at 3pm"
    assert appointment.due_at == datetime(2025, 3, 7, 15, 0, tzinfo=UTC)


def test_a_named_speakers_key_moments_carry_their_name() -> None:
    said = CaptureTurn(message_id="g1", role="user", created_at=VOICE_START, session_id="g",
                       content="John: I love hiking in the mountains with my dog.")  # fmt: skip
    assert [c.content for c in detect_key_moments(said)] == [
        "John loves hiking in the mountains with their dog"
    ]  # not "User loves …", and no "John:" inside the memory
    quoted = said.model_copy(update={"content": "John: Love it, the user guide is great!"})
    assert [c.content for c in detect_key_moments(quoted)] == [
        'John sounded positive: "Love it, the user guide is great!"'
    ]  # his words are quoted as he said them
    plain = said.model_copy(update={"content": "I love hiking in the mountains."})
    assert [c.content for c in detect_key_moments(plain)] == ["User loves hiking in the mountains"]
    for label in ("Update", "Note", "FYI"):  # a label opening the turn names nobody
        labelled = said.model_copy(update={"content": f"{label}: I love hiking in the mountains."})
        assert [c.content for c in detect_key_moments(labelled)] == [
            "User loves hiking in the mountains"
        ], label
