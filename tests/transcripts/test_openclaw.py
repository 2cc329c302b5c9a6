"""OpenClaw JSONL parsing against the fixture home: kept text, drops, cron, compaction."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from continuum.transcripts.lines import Line, read_complete_lines
from continuum.transcripts.models import ParseResult, ParserState
from continuum.transcripts.openclaw import OpenClawParser

HOME = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "home"
SESSIONS = HOME / ".openclaw" / "agents" / "main" / "sessions"
TELEGRAM = SESSIONS / "b96c88e2-b875-4762-a8c3-fd495a27f5bd.jsonl"
DISCORD = SESSIONS / "5d2e7c41-0a9b-4f3e-9c1d-2b8e6f4a7d10.jsonl"
TOPIC = SESSIONS / "7a1b9c3d-5e6f-4a8b-9c0d-1e2f3a4b5c6d-topic-42.jsonl"
CRON = SESSIONS / "c0ffee12-3456-4789-abcd-ef0123456789.jsonl"
ARCHIVED = SESSIONS / "e4d5f6a7-b8c9-4d0e-a1f2-3b4c5d6e7f80.jsonl.reset.2026-02-20T09-15-02.123Z"


def parse(path: Path, channel: str | None = None) -> ParseResult:
    return OpenClawParser(ParserState(channel=channel)).feed(read_complete_lines(path))


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_telegram_chat_keeps_only_clean_conversation() -> None:
    result = parse(TELEGRAM, channel="telegram")
    assert [(m.role, m.sender, m.content) for m in result.messages] == [
        (
            "user",
            "Jason",
            "We're going with Postgres for the Continuum backend, not SQLite. "
            "Also keep your answers short: bullet points, no fluff.",
        ),
        ("assistant", None, "Got it: Postgres for the backend, short bullet answers from now on."),
        ("assistant", None, "Saved to today's notes."),
        ("user", "Jason", "Here's the logo mockup from Dana. Thoughts?"),
        (
            "assistant",
            None,
            "- Teal mark reads well at small sizes\n- Wordmark is a bit thin; bump the weight one step",
        ),
        ("user", "Jason", "[image shared]"),
        (
            "assistant",
            None,
            "That's the dark-background variant: same note, the wordmark needs more weight.",
        ),
        ("user", "Jason", "Beta deadline is March 15. Dana owns the landing page."),
        ("assistant", None, "- Beta: March 15\n- Landing page: Dana"),
        ("user", "Jason", "Actually make it March 20, legal needs another week."),
        ("assistant", None, "Updated: beta moves to March 20."),
    ]
    assert {m.channel for m in result.messages} == {"telegram"}
    assert result.errors == []


def test_every_dropped_category_is_counted() -> None:
    result = parse(TELEGRAM)
    assert dict(result.skipped) == {
        "model_change": 1,
        "thinking_level_change": 1,
        "custom": 1,
        "thinking": 4,
        "tool_call": 2,
        "tool_result": 2,
        "image": 2,
        "delivery_mirror": 1,
        "heartbeat": 2,
        "memory_flush": 1,
        "no_reply": 1,
        "label": 1,
        "session_info": 1,
    }
    texts = " ".join(m.content for m in result.messages)
    for leaked in ("HEARTBEAT", "NO_REPLY", "Pre-compaction", "untrusted", "```", "System:"):
        assert leaked not in texts


def test_types_that_are_not_strings_are_counted_as_unknown() -> None:
    at = '"timestamp":"2026-03-05T10:00:00.000Z"'
    content = '[{"type":["text"],"text":"x"},{"type":{"a":1}},{"type":"text","text":"kept"}]'
    lines = [
        f'{{"type":["session"],{at}}}',
        f'{{"type":{{"k":1}},{at}}}',
        f'{{"type":"message","id":"m1",{at},"message":{{"role":"user","content":{content}}}}}',
    ]
    result = OpenClawParser().feed_lines(Line(text, None, n) for n, text in enumerate(lines, 1))
    assert (result.skipped["unknown_entry"], result.skipped["unknown_block"]) == (2, 2)
    assert [m.content for m in result.messages] == ["kept"]


def test_ids_parents_timestamps_offsets_and_header() -> None:
    result = parse(TELEGRAM)
    first = result.messages[0]
    assert (first.message_id, first.parent_id) == ("605a9036", "4549bac9")
    assert first.created_at == utc("2026-02-26T22:00:05.120")
    assert first.model is None and first.has_image is False
    assert first.metadata["channel_message_id"] == "4812"
    assert first.metadata["conversation_info"]["sender_id"] == "6013056728"
    raw = TELEGRAM.read_bytes()
    for message in result.messages:
        assert message.byte_offset is not None
        assert raw[message.byte_offset :].startswith(
            f'{{"type":"message","id":"{message.message_id}"'.encode()
        )
    reply = result.messages[1]
    assert (reply.parent_id, reply.model) == ("605a9036", "claude-opus-4-6")
    assert reply.metadata == {"provider": "anthropic", "stopReason": "toolUse"}
    assert result.session_id == "b96c88e2-b875-4762-a8c3-fd495a27f5bd"
    assert result.started_at == utc("2026-02-26T22:00:00.120")
    assert result.cwd == "/home/jason/.openclaw/workspace"
    assert result.model == "claude-opus-4-6"
    assert result.cron is None and result.cron_report is None


def test_images_and_system_events_and_old_envelope() -> None:
    messages = parse(TELEGRAM).messages
    with_images = [(m.content, m.has_image) for m in messages if m.has_image]
    assert with_images == [
        ("Here's the logo mockup from Dana. Thoughts?", True),
        ("[image shared]", True),
    ]
    deadline = messages[7]
    assert deadline.metadata["system_events"] == ['Cron job "Daily Standup Digest" updated.']
    envelope = messages[9]
    assert (envelope.channel, envelope.sender) == ("telegram", "Jason")
    assert envelope.metadata == {"channel_message_id": "4821"}


def test_compaction_sections() -> None:
    [compaction] = parse(TELEGRAM).compactions
    assert compaction.compaction_id == "50aa4c47"
    assert compaction.created_at == utc("2026-02-26T22:43:26.160")
    assert compaction.summary.startswith("## Goal\nShip the Continuum beta")
    assert compaction.constraints == [
        "Postgres, not SQLite",
        "Jason wants short bullet-point answers",
    ]
    assert compaction.done == ["Chose the database (Postgres)", "Reviewed Dana's logo mockup"]
    assert compaction.in_progress == ["Logo revisions (wordmark weight)"]
    assert compaction.blocked == []
    assert compaction.decisions == [
        "**Postgres backend**: better full-text search and pgvector",
        "Keep the teal mark",
    ]
    assert compaction.next_steps == [
        "Send Dana the wordmark feedback",
        "Draft the beta announcement",
    ]


def test_discord_envelopes_gateway_injected_and_error_turn() -> None:
    result = parse(DISCORD, channel="discord")
    assert [(m.role, m.sender, m.content) for m in result.messages] == [
        ("user", "Alice", "Can we move standup to 10am? 9 is rough for the west coast folks."),
        ("assistant", None, "Works for me. I'll propose 10:00 PT in the invite."),
        ("user", "Bob", "Agreed. Also let's drop the Friday demo, nobody attends."),
        ("assistant", None, "Dropping the Friday demo. Bob, want a written weekly update instead?"),
    ]
    assert result.messages[0].metadata == {
        "conversation_label": "Guild #general",
        "channel_message_id": "1344950193820581999",
    }
    assert {m.channel for m in result.messages} == {"discord"}
    assert result.skipped["gateway_injected"] == 1
    assert result.skipped["empty"] == 1
    assert result.skipped["branch_summary"] == 1
    assert result.skipped["custom_message"] == 1
    assert result.skipped["custom"] == 2
    assert result.model == "claude-sonnet-4-6"


def test_telegram_topic_sender_from_metadata() -> None:
    [question, answer] = parse(TOPIC).messages
    assert (question.sender, question.content) == (
        "Maria",
        "For the launch post, use the tagline 'Memory that sticks'.",
    )
    assert question.metadata["conversation_info"]["conversation_label"] == (
        "Launch Team id:-1003311 topic:42"
    )
    assert answer.content == "Love it. Draft will lead with 'Memory that sticks'."


def test_cron_session_info_and_report() -> None:
    result = parse(CRON)
    assert result.cron is not None
    assert result.cron.job_id == "9f3b2c1d-7e6a-4b5c-8d9e-0a1b2c3d4e5f"
    assert (result.cron.name, result.cron.slug) == ("Daily Standup Digest", "daily-standup-digest")
    prompt = result.messages[0]
    assert prompt.content == "Summarize yesterday's commits and open PRs for the team channel."
    assert prompt.metadata == {"cron_job_id": "9f3b2c1d-7e6a-4b5c-8d9e-0a1b2c3d4e5f"}
    report = result.cron_report
    assert report is not None
    assert report.text.startswith("Standup digest, Feb 27:\n- 4 commits on main")
    assert report.text.endswith("- Nothing blocked")
    assert report.message_id == result.messages[-1].message_id == "90bd05f6"
    assert report.run_started_at == utc("2026-02-27T16:00:00.030")
    assert report.run_ended_at == utc("2026-02-27T16:00:09.860")
    assert result.skipped["delivery_mirror"] == 1


def test_webchat_envelope_sets_the_session_channel() -> None:
    result = parse(ARCHIVED)
    assert [(m.role, m.channel, m.content) for m in result.messages] == [
        ("user", "webchat", "Remember: I prefer dark mode in every dashboard we build."),
        ("assistant", "webchat", "Noted: dark mode by default."),
    ]


def test_incremental_reading_resumes_without_duplicates(tmp_path: Path) -> None:
    full = parse(TELEGRAM)
    raw = TELEGRAM.read_bytes()
    cut = raw.index(b"Here's the logo mockup") + 10
    path = tmp_path / "live.jsonl"
    path.write_bytes(raw[:cut])

    parser = OpenClawParser()
    first = parser.feed(read_complete_lines(path, 0))
    assert [m.message_id for m in first.messages] == [m.message_id for m in full.messages[:3]]
    cursor = read_complete_lines(path, 0).next_offset
    assert raw[cursor:cut].startswith(b'{"type":"message"')

    assert parser.feed(read_complete_lines(path, cursor)).messages == []
    with path.open("ab") as handle:
        handle.write(raw[cut:])
    batch = read_complete_lines(path, cursor)
    second = parser.feed(batch)
    assert batch.next_offset == len(raw)
    assert first.messages + second.messages == full.messages
    assert second.compactions == full.compactions
    assert second.session_id == full.session_id


def test_context_persists_across_parsers_for_cron_reports(tmp_path: Path) -> None:
    raw = CRON.read_bytes()
    middle = raw.index(b'{"type":"message"', raw.index(b"toolResult"))
    path = tmp_path / "cron.jsonl"
    path.write_bytes(raw[:middle])
    parser = OpenClawParser()
    first = parser.feed(read_complete_lines(path, 0))
    assert first.cron is not None and first.cron_report is None

    saved = parser.state.model_dump_json()
    path.write_bytes(raw)
    resumed = OpenClawParser(ParserState.model_validate_json(saved))
    second = resumed.feed(read_complete_lines(path, middle))
    assert [m.role for m in second.messages] == ["assistant"]
    assert second.cron == first.cron
    assert second.cron_report == parse(CRON).cron_report


def test_bad_lines_are_reported_and_good_lines_survive(tmp_path: Path) -> None:
    lines = TELEGRAM.read_bytes().splitlines(keepends=True)
    bad = [
        b"this is not json\n",
        b"[1, 2, 3]\n",
        b'{"type":"message","id":"bad1","message":{"role":"user","content":"\xc3\x28"}}\n',
        b'{"type":"message","id":"ffff0000","parentId":null,"message":"oops"}\n',
        b'{"type":"message","id":"ffff0001","parentId":null,"message":{"role":"user","content":"no time"}}\n',
        b'{"type":"message","id":"ffff0002","parentId":null,"message":{"role":"user","content":"ms only","timestamp":1772143205000}}\n',
        b'{"type":"brand_new_entry","id":"ffff0003","parentId":null}\n',
        b'{"type":"message","id":"big","message":{"role":"user","content":"'
        + b"a" * 3000
        + b'"}}\n',
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"".join(lines[:6] + bad + lines[6:]))
    result = OpenClawParser().feed(read_complete_lines(path, 0, max_line_bytes=2500))
    assert [(e.kind, e.line_no) for e in result.errors] == [
        ("invalid_utf8", 9),
        ("oversize_line", 14),
        ("malformed_json", 7),
        ("not_an_object", 8),
        ("invalid_entry", 10),
    ]
    expected = [m.content for m in parse(TELEGRAM).messages]
    expected[2:2] = ["no time", "ms only"]
    assert [m.content for m in result.messages] == expected
    inferred, fallback = result.messages[2:4]
    assert inferred.time_inferred and not fallback.time_inferred
    assert inferred.created_at == result.messages[1].created_at  # the nearest earlier entry
    assert fallback.created_at == datetime(2026, 2, 26, 22, 0, 5, tzinfo=UTC)
    assert fallback.byte_offset == sum(len(line) for line in lines[:6] + bad[:5])
    assert result.skipped["unknown_entry"] == 1
