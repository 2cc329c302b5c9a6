"""Inline key-moment capture (R20, R63): the sentence rules of `continuum.capture.rules`
turn one turn into at most a few compact memories — decisions, commitments, preferences,
stable facts, open threads and follow-ups — plus sentiment or acknowledgment for short
messages.

Precision over recall: every rule needs an explicit phrase, questions and hedged or
conditional statements are not decisions, and assistant text only yields what it
confirms (decisions, reminders it promised, timed commitments, questions it could not
answer), never facts about the user."""

from __future__ import annotations

import re

from continuum.capture.due import resolve_due
from continuum.capture.filters import detect_sentiment, short_signal, triage
from continuum.capture.rules import ASSISTANT_RULES, USER_RULES
from continuum.capture.rules.clauses import Moment, is_question, lead_stripped
from continuum.capture.statements import statements
from continuum.capture.topics import extract_people, extract_projects, topic_slug
from continuum.domain.kinds import MemoryKind, kind_names
from continuum.domain.memory import (
    MAX_CONTENT_CHARS,
    CaptureTurn,
    Claim,
    MemoryCandidate,
    Provenance,
)
from continuum.domain.text import (
    clip,
    find_time_expression,
    normalize_for_key,
    snake,
    speaker_of,
    split_clauses,
    split_sentences,
)

DEFAULT_MAX_WRITES = 3
_BASE_CONFIDENCE: dict[Provenance, float] = {
    "user_explicit": 0.9,
    "system": 0.8,
    "inference": 0.6,
}
_TIMED_KINDS = frozenset(kind_names(lambda spec: spec.timed))
_HEDGE = re.compile(r"\b(?:i think|i guess|probably|i suppose)\b", re.IGNORECASE)
_CANNOT_ANSWER = re.compile(
    r"\b(?:i don'?t know|i do not know|i'?m not sure|i am not sure|i couldn'?t find|"
    r"i could not find|i can'?t find|i don'?t have (?:that|any|access|enough)|i'?m unable to|"
    r"i am unable to|i can'?t answer|no idea)\b",
    re.IGNORECASE,
)


def _provenance(turn: CaptureTurn) -> Provenance:
    if turn.source == "system":
        return "system"
    return "user_explicit" if turn.role == "user" else "inference"


def _tags(turn: CaptureTurn, moment: Moment, sentence: str, prose: str) -> list[str]:
    tags = [f"topic:{topic_slug(moment.topic_text or sentence)}"]
    tags += [f"project:{p}" for p in extract_projects(prose)]
    tags += [f"person:{snake(p)}" for p in extract_people(sentence)]
    if moment.status:
        tags.append(f"status:{moment.status}")
    tags += [f"source:{turn.source}", f"session:{turn.session_id}"]
    return list(dict.fromkeys(tags))


def _build(
    moment: Moment,
    turn: CaptureTurn,
    sentence: str,
    prose: str,
    *,
    extra_ids: tuple[str, ...] = (),
) -> MemoryCandidate:
    provenance = _provenance(turn)
    confidence = _BASE_CONFIDENCE[provenance] - (0.2 if _HEDGE.search(sentence) else 0.0)
    when = find_time_expression(sentence) if moment.kind in _TIMED_KINDS else None
    due = resolve_due(sentence, turn.created_at) if when and moment.status == "open" else None
    claim = None
    if moment.claim:
        projects = extract_projects(prose) if moment.kind == "decision" else []
        claim = Claim(
            subject=projects[0] if projects else "user",
            predicate=moment.claim[0],
            value=moment.claim[1],
            scope="temporal" if when else "global",
            valid_from=turn.created_at,
        )
    return MemoryCandidate(
        kind=moment.kind,
        key=moment.key,
        content=clip(moment.content, MAX_CONTENT_CHARS),
        tags=_tags(turn, moment, sentence, prose),
        importance=moment.importance,
        confidence=round(max(confidence, 0.1), 2),
        provenance=provenance,
        claim=claim,
        time_expression=when,
        due_at=due,
        source_message_ids=[*extra_ids, turn.message_id],
        trigger="turn",
        details=moment.details,
    )


def _short_message(
    turn: CaptureTurn, prose: str, previous: CaptureTurn | None
) -> MemoryCandidate | None:
    """R63: a short user message is kept only for its sentiment or as an acknowledgment."""
    signal = short_signal(prose)
    if signal == "sentiment":
        sentiment = detect_sentiment(prose)
        kind: MemoryKind = "context" if sentiment == "positive" else "wellbeing"
        moment = Moment(
            kind,
            f'User sounded {sentiment}: "{prose}"',
            6,
            topic_text=prose,
            details={"sentiment": sentiment},
        )
        return _build(moment, turn, prose, prose)
    if signal != "acknowledgment":
        return None
    proposal = triage(previous).prose if previous and previous.role == "assistant" else ""
    if not (previous and proposal):
        moment = Moment("context", f'User agreed to proceed ("{prose}")', 5, topic_text=prose)
        return _build(moment, turn, prose, prose)
    sentences = split_sentences(proposal)
    questions = [s for s in sentences if is_question(s)]
    what = questions[-1] if questions else sentences[0]
    moment = Moment("context", f'User agreed ("{prose}") to: "{what}"', 5, topic_text=what)
    return _build(moment, turn, prose, prose, extra_ids=(previous.message_id,))


def _unanswered(turn: CaptureTurn, previous: CaptureTurn | None) -> MemoryCandidate | None:
    """An open thread when the assistant could not answer the user's question."""
    if previous is None or previous.role != "user" or not _CANNOT_ANSWER.search(turn.content):
        return None
    asked = triage(previous)
    questions = (
        [s for s in split_sentences(asked.prose) if is_question(s)] if not asked.skip_reason else []
    )
    if not questions:
        return None
    question = lead_stripped(questions[-1])
    moment = Moment(
        "open_thread",
        f'Unanswered question from user: "{question}"',
        7,
        topic_text=question,
        status="open",
    )
    return _build(moment, turn, questions[-1], asked.prose, extra_ids=(previous.message_id,))


def detect_key_moments(
    turn: CaptureTurn,
    *,
    previous: CaptureTurn | None = None,
    max_writes: int = DEFAULT_MAX_WRITES,
    with_statements: bool = False,
) -> list[MemoryCandidate]:
    """Memories worth keeping from one turn, most important first, at most `max_writes`;
    with `with_statements`, its statements after them (`continuum.capture.statements`,
    from the same triage of the turn).

    `previous` is the turn before this one in the same session; it lets an acknowledgment
    name what was agreed to and an assistant's "I don't know" mark the user's question
    as an open thread.
    """
    name = speaker_of(turn.content)  # a group transcript's turn: `Name: …`
    if name:
        turn = turn.model_copy(update={"content": turn.content[len(name) + 1 :].lstrip()})
    checked = triage(turn)
    if checked.skip_reason:
        return []
    rules = USER_RULES if turn.role == "user" else ASSISTANT_RULES
    found: list[MemoryCandidate] = []
    for sentence in (c for s in split_sentences(checked.prose) for c in split_clauses(s)):
        moment = next((m for rule in rules if (m := rule(sentence))), None)
        if moment:
            found.append(_build(moment, turn, sentence, checked.prose))
    if turn.role == "assistant":
        unanswered = _unanswered(turn, previous)
        found += [unanswered] if unanswered else []
    elif not found and checked.is_short:
        short = _short_message(turn, checked.prose, previous)
        found += [short] if short else []
    if name and turn.role == "user":  # what a named person said is about them, not "User"
        found = [_named(candidate, name) for candidate in found]
    said = statements(turn, checked.prose, name) if with_statements else []
    return _rank(found, max_writes) + said


_SUBJECT = re.compile(r"^User\b")  # how every capture rule opens a moment about the user
_THE_USER = re.compile(r"\bthe user\b")  # as `third_person` retells a later clause


def _named(candidate: MemoryCandidate, name: str) -> MemoryCandidate:
    """The candidate with its speaker's name where capture wrote "User" or "the user",
    never inside a quotation of what was said."""
    parts = _SUBJECT.sub(name, candidate.content, count=1).split('"')
    parts[::2] = [_THE_USER.sub(name, part) for part in parts[::2]]
    content = clip('"'.join(parts), MAX_CONTENT_CHARS)
    return candidate.model_copy(update={"content": content})


def _rank(found: list[MemoryCandidate], limit: int) -> list[MemoryCandidate]:
    """Dedupe by kind + key (or content), then keep the `limit` most important, stable."""
    unique: dict[tuple[str, str], MemoryCandidate] = {}
    for candidate in found:
        ident = (candidate.kind, candidate.key or normalize_for_key(candidate.content))
        unique.setdefault(ident, candidate)
    ranked = sorted(unique.values(), key=lambda c: -c.importance)
    return ranked[:limit]
