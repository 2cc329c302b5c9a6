"""context(): the block a session starts with, against real Postgres + Redis: exact token
budgets, determinism, tenant/user/private scoping, exclusion rules, dedupe, packing by score,
sections yielding to a seed, explain output, the recall log, and topic-shift recall."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, text

from continuum.contract.events import SessionEndEvent
from continuum.domain.kinds import KINDS
from continuum.ephemeral.handoff import peek_handoff, send_handoff
from continuum.inference.tokenizer import count_tokens
from continuum.pipeline.ingest import ingest_batch
from continuum.pipeline.outbox import embed_pending
from continuum.pipeline.sessions import finish_session
from continuum.recall.context import context, recall_since_topic
from continuum.recall.items import RecallConfig
from continuum.recall.render import render_when
from continuum.store.engine import session_scope, statements_run
from continuum.store.models import MemoryLog
from tests.support.events import LONG_TURN, session_end, turn
from tests.support.memories import NOW, add_task, remember
from tests.support.plans import plan_modes


@pytest.fixture
def garden(db: Any) -> dict[str, int]:
    ids = {
        "decision": remember("Decided to hire Hoffmann Landscaping for the garden.", "decision",
                             importance=9, days_ago=3),
        "thread": remember("Waiting for Hoffmann to confirm the drainage price.", "open_thread",
                           importance=8, tags=("status:open",), days_ago=2),
        "pref": remember("Prefers the speaker volume at 75%.", "preference", importance=7,
                         days_ago=20),
        "fact": remember("Jason has four grandchildren.", importance=6, days_ago=40),
        "summary": remember("Voice call about the garden: picked Hoffmann, drainage pending.",
                            "conversation_summary", importance=7, days_ago=3,
                            details={"channel": "voice", "topics": ["garden"]}),
        "old": remember("Decided to hire Greenleaf for the garden.", "decision", importance=9,
                        days_ago=30, status="superseded"),
        "gone": remember("The garden gate code is 4411.", importance=8, status="forgotten"),
        "quarantined": remember("Hoffmann went bankrupt.", importance=8, status="quarantined"),
        "archived": remember("Garden planning call in spring.", "conversation_summary",
                             status="archived"),
        "secret": remember("Jason's garden budget is secretly 20k.", importance=9, private=True),
        "other_user": remember("Maria wants roses in the garden.", importance=9,
                               user_id="maria"),
        "other_tenant": remember("The garden of the startup office needs plants.",
                                 importance=9, namespace="entrepreneur"),
    }  # fmt: skip
    add_task("Call Hoffmann about drainage", "in_progress")
    add_task("Buy garden gloves", "done")
    add_task("Maria's task", "pending", user_id="maria")
    embed_pending()
    return ids


def refs(result: Any) -> set[str]:
    return {item.ref for item in result.items}


def test_block_has_sections_dates_and_pinned_items(garden: dict[str, int]) -> None:
    result = context("pearl", "garden plans", 2000, user_id="jason", channel="discord", now=NOW)
    for section in ("## Recent conversations", "## Decisions", "## Open threads",
                    "## Active tasks", "## Preferences", "## Relevant memories"):  # fmt: skip
        assert section in result.block, section
    assert "2026-11-21 (Sat, 3 days ago)" in result.block
    assert "[in_progress] Call Hoffmann about drainage" in result.block
    assert "Buy garden gloves" not in result.block and "Maria's task" not in result.block
    assert {f"memory:{garden[k]}" for k in ("decision", "thread", "pref", "summary")} <= refs(
        result
    )
    assert result.block.index("## Recent conversations") < result.block.index("## Decisions")


def test_exclusions_and_scoping(garden: dict[str, int]) -> None:
    result = context(
        "pearl", "garden", 5000, user_id="jason", channel="discord", now=NOW, explain=True
    )
    shown = refs(result)
    visible = {f"memory:{garden[k]}" for k in ("decision", "thread", "pref", "fact", "summary")}
    assert visible <= shown  # the block is not empty: what may be shown is shown
    assert {gone.ref: gone.reason for gone in result.excluded} == {
        f"memory:{garden['old']}": "status superseded",
        f"memory:{garden['gone']}": "status forgotten",
        f"memory:{garden['quarantined']}": "status quarantined",
        f"memory:{garden['archived']}": "status archived",
        f"memory:{garden['secret']}": "private: shown only in the owner's main context",
    }
    for hidden in ("old", "gone", "quarantined", "archived", "secret", "other_user",
                   "other_tenant"):  # fmt: skip
        assert f"memory:{garden[hidden]}" not in shown, hidden
    for word in ("Greenleaf", "4411", "bankrupt", "20k", "roses", "startup"):
        assert word not in result.block, word


def test_private_only_in_owner_main_context(garden: dict[str, int]) -> None:
    secret = f"memory:{garden['secret']}"
    assert secret in refs(context("pearl", "garden budget", 3000, user_id="jason",
                                  channel="main", now=NOW))  # fmt: skip
    assert secret not in refs(context("pearl", "garden budget", 3000, user_id="maria",
                                      channel="main", now=NOW))  # fmt: skip
    assert secret not in refs(context("pearl", "garden budget", 3000, channel="main", now=NOW))
    assert secret not in refs(context("pearl", "garden budget", 3000, user_id="jason",
                                      channel="discord-group", now=NOW))  # fmt: skip


def test_other_users_never_appear_and_shared_ones_do(garden: dict[str, int]) -> None:
    shared = remember("The garden hose is in the shed.", user_id=None)
    embed_pending()
    maria = context("pearl", "garden", 5000, user_id="maria", channel="discord", now=NOW)
    assert f"memory:{garden['other_user']}" in refs(maria)
    assert f"memory:{shared}" in refs(maria)
    assert f"memory:{garden['decision']}" not in refs(maria)  # Jason's
    assert "Call Hoffmann" not in maria.block


@pytest.mark.parametrize("budget", [0, 12, 40, 75, 130, 260, 600])
def test_budget_is_never_exceeded(garden: dict[str, int], budget: int) -> None:
    result = context("pearl", "garden drainage", budget, user_id="jason", now=NOW)
    assert result.tokens_used == count_tokens(result.block) <= budget
    if budget >= 130:
        assert len(result.items) >= 3  # a real budget is used, not wasted
    assert sum(item.tokens for item in result.items) <= budget


def test_same_data_and_now_give_the_same_block(garden: dict[str, int]) -> None:
    first = context("pearl", "garden", 300, user_id="jason", channel="voice", now=NOW)
    second = context("pearl", "garden", 300, user_id="jason", channel="voice", now=NOW)
    assert first.block == second.block and refs(first) == refs(second)
    assert first.query_id != second.query_id


def test_packing_takes_the_best_scored_first(db: Any) -> None:
    """A long relevant item goes in before short weak ones, which fill what is left."""
    long_one = remember("Decided the tulip plan: " + "rows of tulips, " * 14 + "done.",
                        "decision", importance=9)  # fmt: skip
    shorts = [remember(f"Decided to plant {plant} in the herb box.", "decision", importance=9)
              for plant in ("basil", "mint", "thyme")]  # fmt: skip
    embed_pending()
    # 150 tokens hold the long decision (≈127 with header) and no more than one short one.
    result = context("pearl", "how many rows of tulips?", 150, user_id="jason", now=NOW)
    assert f"memory:{long_one}" in refs(result)
    assert len({f"memory:{i}" for i in shorts} & refs(result)) <= 1


def test_with_a_seed_the_sections_yield_to_relevance(db: Any) -> None:
    """Pinned preferences lead a block without a seed; with one, a relevant turn wins the
    room they would take."""
    prefs = [remember(f"Prefers {thing}.", "preference", importance=7, days_ago=30)
             for thing in ("tea over coffee", "window seats", "email over calls", "dark mode")]  # fmt: skip
    ingest_batch([turn("The vet said Miso's thyroid pills are 5 mg twice a day.",
                       session_id="vet", message_id="vet-0", user_id="jason")])  # fmt: skip
    embed_pending()
    budget = 60  # room for the header and about two lines
    bare = context("pearl", "", budget, user_id="jason", now=NOW)
    assert {item.ref for item in bare.items} & {f"memory:{p}" for p in prefs}
    seeded = context("pearl", "what dose of thyroid pills does Miso take?", budget,
                     user_id="jason", now=NOW)  # fmt: skip
    assert seeded.items[0].source_message_ids == ["vet-0"]


def test_a_long_turn_shows_the_sentence_the_seed_matched(db: Any) -> None:
    ingest_batch([turn(LONG_TURN, session_id="trip", message_id="trip-0")])
    embed_pending()
    result = context("pearl", "What does my daughter want to study?", 800, user_id="jason",
                     now=NOW)  # fmt: skip
    item = next(i for i in result.items if i.source_message_ids == ["trip-0"])
    assert item.text == "- [voice] User: My daughter wants to study marine biology after school. …"
    assert item.ref == "message:trip/trip-0"  # the line stands for the whole turn
    assert item.tokens == count_tokens(item.text)


def test_a_session_summary_covers_no_turn_and_cites_what_the_seed_matched(db: Any) -> None:
    lines = [f"Chatted about the weather, part {i}." for i in range(6)]
    lines[3] = "The plumber Kowalski fixes the boiler on Thursday."
    ingest_batch([turn(line, session_id="s9", message_id=f"s9-{i}", at=i)
                  for i, line in enumerate(lines)])  # fmt: skip
    finish_session(SessionEndEvent.model_validate(session_end(session_id="s9", at=60)))
    embed_pending()
    result = context("pearl", "when is the boiler fixed?", 2000, user_id="jason", now=NOW)
    summary = next(item for item in result.items if item.kind == "conversation_summary")
    assert summary.source_message_ids[0] == "s9-3"
    assert "message:s9/s9-3" in refs(result)  # the turn itself is shown, not hidden by it
    bare = context("pearl", "", 2000, user_id="jason", now=NOW)
    assert next(i for i in bare.items if i.kind == "conversation_summary").source_message_ids == []


def test_near_duplicates_are_dropped(db: Any) -> None:
    a = remember("Decided to hire Hoffmann Landscaping for the garden.", "decision", importance=9)
    b = remember("decided to hire  Hoffmann landscaping for the garden.", "decision",
                 importance=8, days_ago=2)  # fmt: skip
    c = remember("We decided to hire Hoffmann Landscaping for our garden.", "decision",
                 importance=8, days_ago=2)  # fmt: skip
    embed_pending()
    result = context("pearl", "Hoffmann garden", 1000, user_id="jason", explain=True, now=NOW)
    assert f"memory:{a}" in refs(result)
    assert not {f"memory:{b}", f"memory:{c}"} & refs(result)
    reasons = {e.ref: e.reason for e in result.excluded}
    assert reasons[f"memory:{b}"].startswith("same text as")
    assert reasons[f"memory:{c}"].startswith("near-duplicate of")


def test_explain_and_recall_log(garden: dict[str, int]) -> None:
    result = context("pearl", "garden Hoffmann decision", 120, user_id="jason",
                     channel="discord", explain=True, now=NOW)  # fmt: skip
    assert all(item.why and "score" in item.why for item in result.items)
    reasons = {e.ref: e.reason for e in result.excluded}
    assert reasons.get(f"memory:{garden['old']}") == "status superseded"
    assert "private" in reasons.get(f"memory:{garden['secret']}", "")
    assert any(r == "over the token budget" for r in reasons.values())
    assert f"memory:{garden['other_user']}" not in reasons  # no trace of other users
    with session_scope() as db:
        log = db.scalars(select(MemoryLog).where(MemoryLog.action == "recall")).one()
    assert log.details["query_id"] == result.query_id
    assert log.details["tokens_injected"] == result.tokens_used
    assert [r["ref"] for r in log.details["results"]] == [i.ref for i in result.items]
    assert log.details["topic"] == result.topic


def test_pending_handoff_goes_first(garden: dict[str, int]) -> None:
    send_handoff("pearl", "jason", "voice", "discord", "Talking about the garden drainage.")
    result = context("pearl", "", 60, user_id="jason", channel="discord", now=datetime.now(UTC))
    assert result.items[0].ref == "handoff"
    assert "## Pending handoff" in result.block and "from voice to discord" in result.block


def test_only_the_arriving_channel_shows_a_handoff_and_its_block_consumes_it(
    garden: dict[str, int],
) -> None:
    send_handoff("pearl", "jason", "voice", "discord", "Talking about the garden drainage.")
    now = datetime.now(UTC)
    for channel in ("voice", "telegram", None):  # where it came from, elsewhere, unknown
        shown = context("pearl", "", 400, user_id="jason", channel=channel, now=now)
        assert "Pending handoff" not in shown.block, channel
    audit = context("pearl", "", 400, user_id="jason", channel="discord", explain=True, now=now)
    assert "Pending handoff" in audit.block  # explain peeks: it stays pending
    first = context("pearl", "", 400, user_id="jason", channel="discord", now=now)
    again = context("pearl", "", 400, user_id="jason", channel="discord", now=now)
    assert "Pending handoff" in first.block and "Pending handoff" not in again.block
    assert peek_handoff("pearl", "jason") is None


def test_a_handoff_with_no_target_shows_on_any_other_channel(garden: dict[str, int]) -> None:
    send_handoff("pearl", "jason", "voice", None, "Talking about the garden drainage.")
    now = datetime.now(UTC)
    assert "Pending handoff" not in context("pearl", "", 400, user_id="jason", channel="voice",
                                            now=now).block  # fmt: skip
    block = context("pearl", "", 400, user_id="jason", channel="telegram", now=now).block
    assert "from voice to another channel" in block


def test_two_concurrent_blocks_never_both_show_a_handoff(
    garden: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    send_handoff("pearl", "jason", "voice", "discord", "Talking about the garden drainage.")
    now = datetime.now(UTC)
    seen = threading.Barrier(4, timeout=30)

    def peek_then_wait(*args: Any) -> Any:  # every block sees the handoff before any takes it
        found = peek_handoff(*args)
        seen.wait()
        return found

    monkeypatch.setattr("continuum.recall.context.peek_handoff", peek_then_wait)
    with ThreadPoolExecutor(4) as pool:
        blocks = list(pool.map(lambda _: context("pearl", "", 400, user_id="jason",
                                                 channel="discord", now=now).block, range(4)))  # fmt: skip
    assert sum("Pending handoff" in block for block in blocks) == 1
    assert all("Hoffmann" in block for block in blocks)  # the others are whole blocks still


def test_topic_shift_recall_skips_what_was_injected(garden: dict[str, int]) -> None:
    first = context("pearl", "garden drainage", 2000, user_id="jason", now=NOW)
    # learned after the session's first recall
    volume = remember("Volume should stay at 75% because loud audio hurts Jason's ears.")
    embed_pending()
    shift = recall_since_topic("pearl", first.topic, "speaker volume too loud", 2000,
                               user_id="jason", explain=True, now=NOW)  # fmt: skip
    assert f"memory:{volume}" in refs(shift)
    assert not refs(shift) & refs(first)
    assert "already injected" in {e.reason for e in shift.excluded}
    same = recall_since_topic("pearl", first.topic, "garden drainage", 500, user_id="jason",
                              now=NOW)  # fmt: skip
    assert same.items == []


def test_render_when() -> None:
    assert render_when(NOW - timedelta(days=3), NOW) == "2026-11-21 (Sat, 3 days ago)"
    assert render_when(NOW, NOW) == "2026-11-24 (Tue, today)"
    assert render_when(NOW - timedelta(days=1), NOW) == "2026-11-23 (Mon, yesterday)"
    assert render_when(NOW + timedelta(days=2), NOW) == "2026-11-26 (Thu, in 2 days)"
    assert render_when(NOW - timedelta(days=59), NOW) == "2026-09-26 (Sat, 59 days ago)"
    assert render_when(NOW - timedelta(days=60), NOW) == "2026-09-25 (Fri)"  # the date says it
    assert RecallConfig().main_channels == {"main", "dm", "direct"}


def test_a_memory_tracked_as_a_task_appears_once(db: Any) -> None:
    # Storing a reminder creates its task (tagged memory:<id>) in the same transaction.
    memory_id = remember("Remind me to call Hoffmann about the drainage on Friday.", "follow_up",
                         importance=8)  # fmt: skip
    result = context("pearl", "Hoffmann drainage", 400, user_id="jason", now=NOW, explain=True)
    assert [item.section for item in result.items if "Hoffmann" in item.text] == ["Active tasks"]
    assert any(
        gone.ref == f"memory:{memory_id}" and gone.reason.startswith("tracked as task:")
        for gone in result.excluded
    )


def test_every_kind_is_recalled_into_its_registry_section(db: Any) -> None:
    """Some channel reads every kind, and each lands in the section the kind registry names;
    a kind that becomes a task is shown as that task instead, and an index of a turn (a
    statement) only through search, as its turn."""
    ids = {
        spec.name: remember(
            f"Note {i} of kind {spec.name}.", spec.name, importance=9, tags=("status:open",)
        )
        for i, spec in enumerate(KINDS)
    }
    config = RecallConfig(importance_n=len(KINDS))
    result = context("pearl", "", 8000, user_id="jason", now=NOW, config=config, explain=True)
    sections = {item.ref: item.section for item in result.items}
    tracked = {gone.ref for gone in result.excluded if gone.reason.startswith("tracked as task:")}
    for spec in KINDS:
        ref = f"memory:{ids[spec.name]}"
        if spec.becomes_task:
            assert ref in tracked, spec.name
        elif spec.indexes_turn:
            assert ref not in sections, spec.name
        else:
            assert sections.get(ref) == spec.context_section, spec.name


def test_importance_and_recency_channels_read_the_users_and_shared_rows(db: Any) -> None:
    """Each channel reads the user's rows and the shared ones as separate ranges: the best
    of both win, another user's never count, however many they are."""
    for i in range(30):  # a crowd of another user's recent, important memories
        remember(f"Maria note {i} about roses.", importance=10, days_ago=0.5, user_id="maria")
    mine8 = remember("Jason's passport expires in May.", importance=8, days_ago=2)
    mine9 = remember("Jason is allergic to penicillin.", importance=9, days_ago=20)
    remember("Jason moved to Porto long ago.", importance=10, days_ago=40)  # outside 30 days
    shared = remember("The household wifi password changed.", importance=10, days_ago=5,
                      user_id=None)  # fmt: skip
    config = RecallConfig(importance_n=3, recency_n=2)
    result = context("pearl", "", 4000, user_id="jason", now=NOW, config=config)
    why = {item.ref: item.why.split("; ") for item in result.items}
    by_importance = {ref for ref, reasons in why.items() if config_why(config) in reasons}
    assert by_importance == {f"memory:{m}" for m in (shared, mine9, mine8)}
    assert {ref for ref, reasons in why.items() if "recent" in reasons} == {
        f"memory:{mine8}",
        f"memory:{shared}",
    }
    assert not any("Maria" in item.text for item in result.items)
    everyone = context("pearl", "", 4000, now=NOW, config=config, explain=True)  # no user
    shown = {i.ref for i in everyone.items} | {e.ref for e in everyone.excluded}
    maria = {f"memory:{m}" for m in memory_ids("maria")}
    assert len(shown & maria) == 3  # importance 10 and newest: the importance channel's 3


def config_why(config: RecallConfig) -> str:
    return f"importance ≥ {config.importance_min} within {config.importance_days} days"


def memory_ids(user_id: str) -> list[int]:
    with session_scope() as db:
        rows = db.execute(text("SELECT id FROM memories WHERE user_id = :u"), {"u": user_id})
        return [row.id for row in rows]


def test_reads_by_key_run_on_generic_plans_and_the_rankings_on_custom_ones(
    garden: dict[str, int],
) -> None:
    """Within context()'s transaction, counted on the real connection: the block's sections,
    the turns lifted and the near-duplicates run on generic plans (their plans do not
    depend on the values), the searches' rankings on custom ones (theirs depend on the
    query's words and vector: the relevance channel's and explain's audit's)."""
    ingest_batch([turn("Hoffmann said the drainage needs a new pipe first.", session_id="g1",
                       message_id="g1-0", at=0)])  # fmt: skip
    embed_pending()
    with statements_run() as statements:
        context("pearl", "garden drainage", 800, user_id="jason", now=NOW, explain=True)
    markers = {"sections": "'section0'", "text": "'text:", "vector": "'vector:",
               "lifted": "WITH lifted", "near_duplicates": "WITH c AS"}  # fmt: skip
    modes = plan_modes(statements, markers)
    assert modes == {
        "sections": ["force_generic_plan"],
        "text": ["force_custom_plan"] * 2,
        "vector": ["force_custom_plan"] * 2,
        "lifted": ["force_generic_plan"],
        "near_duplicates": ["force_generic_plan"],
    }


# Round trips of a context call with a seed, search settings and caches warm: the tasks;
# generic plans; the block's sections; the query's words (with the search settings, and a
# time phrase's window size); the text ranking of memories and turns; the vector ranking;
# generic plans; the turns memories and the best turns lift; near-duplicates; the recall
# log. (Before they were merged: 12, and 18 with a time phrase, on this test's data.)
STATEMENTS_PER_CONTEXT = 10


@pytest.mark.parametrize(
    "seed", ["Hoffmann drainage price", "what did Hoffmann say about the drainage last week"]
)
def test_a_context_call_runs_a_bounded_number_of_statements(
    garden: dict[str, int], seed: str
) -> None:
    ingest_batch([turn("Hoffmann said the drainage needs a new pipe first.", session_id="g1",
                       message_id="g1-0", at=0),
                  turn("Then ask him for the price of the pipe.", role="assistant",
                       session_id="g1", message_id="g1-1", at=5)])  # fmt: skip
    embed_pending()
    context("pearl", seed, 800, user_id="jason", now=NOW)  # speaker names, table statistics
    with statements_run() as sent:
        result = context("pearl", seed, 800, user_id="jason", now=NOW)
    assert any(item.ref.startswith("message:g1/") for item in result.items)  # turns lifted
    assert len(sent) <= STATEMENTS_PER_CONTEXT, "\n\n".join(s.sql for s in sent)


def test_a_task_shows_when_it_is_due(db: Any) -> None:
    from continuum.memory.user_tasks import create_task

    create_task("pearl", "Call Hoffmann about the drainage", user_id="jason",
                due_at=datetime(2026, 11, 27, 9, 0, tzinfo=UTC))  # fmt: skip
    result = context("pearl", "Hoffmann drainage", 400, user_id="jason", now=NOW)
    tasks = [item.text for item in result.items if item.section == "Active tasks"]
    assert tasks == ["- [pending] Call Hoffmann about the drainage (due Fri 27 Nov)"]
