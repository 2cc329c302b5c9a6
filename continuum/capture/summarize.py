"""Deterministic digests of several turns: the session summary (R6, R9), the session
snapshot for idle and pre-compaction capture (R25, R28), and the keyword chunk judge
used when no LLM is available (R61, R62)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from continuum.capture.due import due_label
from continuum.capture.filters import Triage, detect_sentiment, triage
from continuum.capture.keymoments import detect_key_moments
from continuum.capture.topics import (
    Vocabulary,
    content_lemmas,
    extract_projects,
    session_topics,
    topic_slug,
)
from continuum.domain.kinds import MemoryKind
from continuum.domain.memory import (
    MAX_DIGEST_CHARS,
    CaptureTurn,
    MemoryCandidate,
    Sentiment,
    SessionSummary,
)
from continuum.domain.text import clip

STORE_THRESHOLD = 5  # judged chunks below this importance are not stored (R61, R63)
SNAPSHOT_IMPORTANCE = 7
_MAX_TOPICS = 5
_MAX_ITEMS = 5
_ALL_MOMENTS = 50  # per-turn cap when digesting: the 3-writes rule is for inline capture
_ASSISTANT_WEIGHT = 0.5  # an assistant's words count half a user's towards the topics
_ACTION_KINDS = ("commitment", "follow_up")
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

    def topics(self, vocabulary: Vocabulary | None = None) -> list[str]:
        texts = [
            (checked.prose, 1.0 if turn.role == "user" else _ASSISTANT_WEIGHT)
            for turn, checked in zip(self.turns, self.triaged, strict=True)
            if not checked.skip_reason
        ]
        return session_topics(
            texts or [(m.content, 1.0) for m in self.moments], _MAX_TOPICS, vocabulary
        )

    def action_items(self) -> list[MemoryCandidate]:
        """Commitments and follow-ups, each once: a later item that `restates` an earlier
        one replaces it."""
        items: list[MemoryCandidate] = []
        for moment in self.moments:
            if moment.kind in _ACTION_KINDS:
                items = [kept for kept in items if not restates(_said(moment), _said(kept))]
                items.append(moment)
        return items


class Said(NamedTuple):
    """An action item as far as telling restatements apart goes."""

    text: str
    due_at: datetime | None
    provenance: str


def restates(later: Said, earlier: Said) -> bool:
    """Whether `later` says again what `earlier` said: the same things named (and no other
    due time), or the other side's words for it due at the same time, with a thing in
    common (the assistant confirming the reminder the user asked for)."""
    if later.due_at and earlier.due_at and later.due_at != earlier.due_at:
        return False
    named, before = content_lemmas(later.text), content_lemmas(earlier.text)
    if named == before:
        return True
    return (
        later.due_at is not None
        and later.due_at == earlier.due_at
        and later.provenance != earlier.provenance
        and bool(named & before)
    )


def _said(item: MemoryCandidate) -> Said:
    return Said(item.content, item.due_at, item.provenance)


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


def _listed(words: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)


def _with_due(item: MemoryCandidate) -> str:
    return f"{item.content} ({due_label(item.due_at)})" if item.due_at else item.content


def summarize_session(
    turns: Sequence[CaptureTurn], vocabulary: Vocabulary | None = None
) -> SessionSummary:
    """A few sentences on what the session was about, what was decided and what is open;
    topics are weighed against `vocabulary`, the tenant's recent turns, when given."""
    digest = _digest(turns)
    first, last = digest.turns[0], digest.turns[-1]
    topics = digest.topics(vocabulary)
    decisions = digest.contents("decision")
    items = digest.action_items()
    actions = [item.content for item in items]
    open_threads = digest.contents("open_thread")
    channel = next((t.channel for t in digest.turns if t.channel), None)
    about = f" about {_listed(topics)}" if topics else ""
    text = (
        f"{(channel or 'Chat').capitalize()} conversation ({len(digest.turns)} messages){about}."
        + _sentence("Decisions", decisions)
        + _sentence("Open", open_threads)
        + _sentence("Action items", [_with_due(item) for item in items])
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
        due_at={item.content: item.due_at for item in items if item.due_at},
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
