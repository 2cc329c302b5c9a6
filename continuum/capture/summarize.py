"""Deterministic digests of several turns: the session summary (R6, R9), the session
snapshot for idle and pre-compaction capture (R25, R28), and the keyword chunk judge
used when no LLM is available (R61, R62)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from continuum.capture.filters import Triage, detect_sentiment, triage
from continuum.capture.keymoments import detect_key_moments
from continuum.capture.kinds import MemoryKind
from continuum.capture.models import (
    MAX_DIGEST_CHARS,
    CaptureTurn,
    MemoryCandidate,
    Sentiment,
    SessionSummary,
)
from continuum.capture.text import clip
from continuum.capture.topics import extract_projects, top_keywords, topic_slug

STORE_THRESHOLD = 5  # judged chunks below this importance are not stored (R61, R63)
SNAPSHOT_IMPORTANCE = 7
_MAX_TOPICS = 5
_MAX_ITEMS = 5
_ALL_MOMENTS = 50  # per-turn cap when digesting: the 3-writes rule is for inline capture
_URL = re.compile(r"https?://[^\s)>\]\"']+")


class ChunkJudgement(NamedTuple):
    category: str
    importance: int


class _Digest(NamedTuple):
    turns: list[CaptureTurn]
    triaged: list[Triage]  # the filters' verdict on each turn, in the same order
    user_prose: list[str]
    moments: list[MemoryCandidate]

    def contents(self, *kinds: MemoryKind, blocker: bool | None = None) -> list[str]:
        return [
            m.content
            for m in self.moments
            if m.kind in kinds and (blocker is None or bool(m.details.get("blocker")) == blocker)
        ]

    def topics(self) -> list[str]:
        prose = self.user_prose or [m.content for m in self.moments]
        return top_keywords(" ".join(prose), _MAX_TOPICS)


def _digest(turns: Sequence[CaptureTurn]) -> _Digest:
    """Order the turns by time and collect every key moment, deduplicated; a later memory
    with the same key (a correction) replaces the earlier one."""
    if not turns:
        raise ValueError("at least one turn is required")
    ordered = sorted(turns, key=lambda t: t.created_at)
    found: dict[tuple[str, ...], MemoryCandidate] = {}
    previous = None
    for turn in ordered:
        for moment in detect_key_moments(turn, previous=previous, max_writes=_ALL_MOMENTS):
            ident: tuple[str, ...] = (moment.kind, moment.content.lower())
            if moment.key:
                ident = (moment.kind, moment.key)
            elif moment.claim:
                ident = (moment.kind, moment.claim.predicate, moment.claim.value.lower())
            found.pop(ident, None)
            found[ident] = moment
        previous = turn
    triaged = [triage(turn) for turn in ordered]
    user_prose = [
        checked.prose
        for turn, checked in zip(ordered, triaged, strict=True)
        if turn.role == "user" and not checked.skip_reason
    ]
    return _Digest(ordered, triaged, user_prose, list(found.values()))


def _session_sentiment(digest: _Digest) -> Sentiment:
    """Urgent if anything was urgent; frustrated if frustration is at least as frequent
    as satisfaction; otherwise positive when anything was positive."""
    moods = [
        detect_sentiment(t.content)
        for t, checked in zip(digest.turns, digest.triaged, strict=True)
        if t.role == "user" and checked.skip_reason in (None, "small_talk")
    ]
    if "urgent" in moods:
        return "urgent"
    frustrated, positive = moods.count("frustrated"), moods.count("positive")
    if frustrated and frustrated >= positive:
        return "frustrated"
    return "positive" if positive else "neutral"


def _sentence(label: str, items: list[str]) -> str:
    return f" {label}: {'; '.join(items[:_MAX_ITEMS])}." if items else ""


def summarize_session(turns: Sequence[CaptureTurn]) -> SessionSummary:
    """A few sentences on what the session was about, what was decided and what is open."""
    digest = _digest(turns)
    first, last = digest.turns[0], digest.turns[-1]
    topics = digest.topics()
    decisions = digest.contents("decision")
    actions = digest.contents("commitment", "follow_up")
    open_threads = digest.contents("open_thread")
    channel = next((t.channel for t in digest.turns if t.channel), None)
    about = f" about {', '.join(topics)}" if topics else ""
    text = (
        f"{(channel or 'Chat').capitalize()} conversation ({len(digest.turns)} messages){about}."
        + _sentence("Decisions", decisions)
        + _sentence("Open", open_threads)
        + _sentence("Action items", actions)
    )
    return SessionSummary(
        session_id=first.session_id,
        channel=channel,
        user_id=next((t.user_id for t in digest.turns if t.user_id), None),
        summary=clip(text, MAX_DIGEST_CHARS),
        topics=topics,
        key_decisions=decisions,
        action_items=actions,
        open_threads=open_threads,
        sentiment=_session_sentiment(digest),
        message_count=len(digest.turns),
        started_at=first.created_at,
        ended_at=last.created_at,
    )


def _references(digest: _Digest) -> list[str]:
    prose = [checked.prose for checked in digest.triaged if not checked.skip_reason]
    urls = [url for text in prose for url in _URL.findall(text)]
    projects = [f"project {p}" for p in extract_projects(" ".join(digest.user_prose))]
    return list(dict.fromkeys([*projects, *urls]))[:_MAX_ITEMS]


def session_snapshot(
    turns: Sequence[CaptureTurn], *, trigger: str = "idle"
) -> MemoryCandidate | None:
    """One snapshot of where the session stands (R25/R28): what we were doing, decisions,
    open threads, blockers and key references. None when nothing substantive was said."""
    digest = _digest(turns)
    if not digest.user_prose:
        return None
    doing = clip(digest.user_prose[-1], 160)
    parts = {
        "topics": digest.topics(),
        "decisions": digest.contents("decision"),
        "open_threads": digest.contents("open_thread", "follow_up", blocker=False),
        "blockers": digest.contents("open_thread", blocker=True),
        "references": _references(digest),
    }
    about = f" ({', '.join(parts['topics'])})" if parts["topics"] else ""
    text = (
        f'Working on{about}: last said "{doing}".'
        + _sentence("Decisions", parts["decisions"])
        + _sentence("Open threads", parts["open_threads"])
        + _sentence("Blockers", parts["blockers"])
        + _sentence("References", parts["references"])
    )
    first = digest.turns[0]
    tags = [f"topic:{topic_slug(' '.join(digest.user_prose))}"]
    tags += [f"project:{p}" for p in extract_projects(" ".join(digest.user_prose))]
    tags += ["source:system", f"session:{first.session_id}"]
    return MemoryCandidate(
        kind="session_snapshot",
        content=clip(text, MAX_DIGEST_CHARS),
        tags=tags,
        importance=SNAPSHOT_IMPORTANCE,
        confidence=0.8,
        provenance="system",
        source_message_ids=[t.message_id for t in digest.turns],
        trigger=trigger,
        details={"doing": doing, **parts},
    )


def judge_chunk(turns: Sequence[CaptureTurn]) -> ChunkJudgement:
    """Keyword fallback for the chunk judge (R61/R62): the category and importance of the
    chunk's strongest key moment; substantive talk without one rates below the threshold."""
    digest = _digest(turns)
    if digest.moments:
        best = max(digest.moments, key=lambda m: m.importance)
        return ChunkJudgement(best.kind, best.importance)
    if not digest.user_prose:
        return ChunkJudgement("noise", 1)
    return ChunkJudgement("context", 3)
