"""Inline key-moment capture (R20, R63): deterministic sentence rules that turn one turn into
at most a few compact memories — decisions, commitments, preferences, stable facts, open
threads and follow-ups — plus sentiment or acknowledgment for short messages.

Precision over recall: every rule needs an explicit phrase, questions and hedged or
conditional statements are not decisions, and assistant text only yields what it
confirms (decisions, reminders it promised, timed commitments, questions it could not
answer), never facts about the user."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from continuum.capture.filters import detect_sentiment, short_signal, triage
from continuum.capture.models import (
    MAX_CONTENT_CHARS,
    CaptureTurn,
    Claim,
    MemoryCandidate,
    MemoryKind,
    Provenance,
)
from continuum.capture.text import (
    NUMBER,
    capitalize_first,
    clip,
    find_time_expression,
    normalize_for_key,
    parse_number,
    second_to_third,
    snake,
    split_clauses,
    split_sentences,
    strip_clause,
    third_person,
    word_set,
)
from continuum.capture.topics import (
    RELATIONS,
    STOP_WORDS,
    canonical,
    category_of,
    extract_people,
    extract_projects,
    keywords,
    topic_slug,
)

DEFAULT_MAX_WRITES = 3
_I = re.IGNORECASE
_BASE_CONFIDENCE: dict[Provenance, float] = {
    "user_explicit": 0.9,
    "system": 0.8,
    "inference": 0.6,
}
_TIMED_KINDS = frozenset({"follow_up", "commitment", "decision", "open_thread"})
_HEDGE = re.compile(r"\b(?:i think|i guess|probably|i suppose)\b", _I)
_CONDITIONAL = re.compile(
    r"\b(?:if|whether|unless|maybe|perhaps|might|could|should we|would|not sure)\b", _I
)
_LEAD_FILLER = re.compile(
    r"^(?:(?:actually|oh|and|also|so|well|ok|okay|by the way|btw|fyi|just so you know|sorry|"
    r"oops|correction|no|wait|great|cool|alright|right|anyway|hey|yes|yeah)\b[,:;!.]?\s*)+",
    _I,
)
_CORRECTION = re.compile(r"^(?:actually|correction|sorry|oops|wait|no)\b|\bi meant?\b", _I)
_REPLACED = re.compile(rf"\bnot\s+(?P<old>{NUMBER}|[\w' -]{{1,30}}?)\s*[.!]?$", _I)
_TRAILING_FILLER = re.compile(
    r"(?:[\s,]+(?:then|for now|now|too|as well|please|ok|okay|for the time being))+$", _I
)
_PRONOUN_START = re.compile(
    r"^(?:it|that|this|them|you|him|her|those|these|when|how|what|we|they|he|she|i)\b", _I
)


@dataclass(frozen=True)
class _Moment:
    """A rule hit, before tags, provenance and confidence are added."""

    kind: MemoryKind
    content: str
    importance: int
    key: str | None = None
    claim: tuple[str, str] | None = None  # (predicate, value) when the moment makes a claim
    topic_text: str = ""
    status: Literal["open", "closed"] | None = None
    details: dict[str, Any] = field(default_factory=dict)


_Rule = Callable[[str], _Moment | None]


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, _I)


def _lead_stripped(sentence: str) -> str:
    return _LEAD_FILLER.sub("", sentence).strip()


def _clause(text: str) -> str:
    return _TRAILING_FILLER.sub("", strip_clause(text))


def _head(text: str, words: int = 2) -> str:
    return "_".join(snake(w) for w in keywords(text)[:words])


def _is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?")


def _user_sentence(sentence: str) -> str:
    return capitalize_first(third_person(_clause(_lead_stripped(sentence))))


# --- follow-ups -----------------------------------------------------------------------

_REMIND_ME = _rx(r"\bremind me (?P<what>(?:to|about|that|of)\b.+)")
_REMIND_YOU = _rx(r"\bi(?:'ll| will) (?:remind|ping|nudge) you (?P<what>(?:to|about|that|of)\b.+)")
_APPOINTMENT = _rx(
    r"\b(?:appointment|appt|doctor|doctor's|dentist|check-?up|surgery|physio|therapy|"
    r"therapist|vet|interview|flight|meeting|deadline|dinner|lunch|party|visit|exam)\b"
)


def _reminder(
    pattern: re.Pattern[str], sentence: str, to_third: Callable[[str], str]
) -> _Moment | None:
    m = pattern.search(sentence)
    if not m:
        return None
    what = to_third(_clause(m.group("what")))
    return _Moment("follow_up", f"Remind user {what}", 7, topic_text=what, status="open")


def _remind_me(sentence: str) -> _Moment | None:
    return _reminder(_REMIND_ME, sentence, third_person)


def _remind_you(sentence: str) -> _Moment | None:
    return _reminder(_REMIND_YOU, sentence, second_to_third)


def _appointment(sentence: str) -> _Moment | None:
    if _is_question(sentence) or not _APPOINTMENT.search(sentence):
        return None
    if not find_time_expression(sentence):
        return None
    content = _user_sentence(sentence)
    return _Moment("follow_up", content, 7, topic_text=sentence, status="open")


# --- facts ----------------------------------------------------------------------------

_COUNT_NOUNS = (
    r"grandchildren|grandkids|children|kids|sons|daughters|grandsons|granddaughters|"
    r"siblings|brothers|sisters|cats|dogs|pets"
)
_COUNT_HAVE = _rx(rf"\bi (?:have|'ve got|have got) (?P<n>{NUMBER}) (?P<noun>{_COUNT_NOUNS})\b")
_COUNT_BARE = _rx(rf"\b(?P<n>{NUMBER}) (?P<noun>{_COUNT_NOUNS})\b")
_SINGLE_RELATIONS = word_set(
    "wife husband partner mother mom mum father dad boss doctor neighbor neighbour"
)
_RELATION_NAME = re.compile(
    rf"(?i:\bmy (?P<rel>{RELATIONS})(?:'s name is| is called| is named|,? named|"
    r",? called)?),? (?P<v>[A-Z][a-z]+)\b"
)
_FACTS: list[tuple[re.Pattern[str], str, int]] = [
    (re.compile(r"(?i:\bmy name(?:'s| is)) (?P<v>[A-Za-z][\w'-]*(?: [A-Z][\w'-]*)?)"), "name", 8),
    (_rx(r"\bi(?:'m| am) allergic to (?P<v>[^,;]+)"), "allergy_{v}", 8),
    (
        _rx(r"\bi (?:live|'m living|am living) in (?P<v>[^,;]+?)(?= with | since | and |$)"),
        "home_location",
        7,
    ),
    (_rx(r"\bmy (?:(?P<rel>[a-z]+)'s )?birthday is (?:on )?(?P<v>[^,;]+)"), "{rel}birthday", 7),
    (_rx(r"\bi(?:'m| am) (?P<v>\d{1,3}) years? old\b"), "age", 6),
    (_rx(r"\bi work (?:at|for) (?P<v>[^,;]+?)(?= as | since | and |$)"), "employer", 6),
    (_rx(r"\bi work as (?:an? )?(?P<v>[^,;]+?)(?= at | for | since | and |$)"), "occupation", 6),
]


def _corrected(sentence: str) -> dict[str, Any]:
    if not _CORRECTION.search(sentence):
        return {}
    replaced = _REPLACED.search(sentence)
    return (
        {"correction": True, "replaces": replaced.group("old").strip()}
        if replaced
        else {"correction": True}
    )


def _count_fact(sentence: str) -> _Moment | None:
    details = _corrected(sentence)
    m = _COUNT_HAVE.search(sentence) or (_COUNT_BARE.search(sentence) if details else None)
    if not m or _is_question(sentence):
        return None
    count, noun = parse_number(m.group("n")), canonical(m.group("noun"))
    replaced = parse_number(str(details.get("replaces", "")))
    if replaced is not None:
        details["replaces"] = str(replaced)
    suffix = f" (corrected from {replaced})" if replaced is not None else ""
    return _Moment(
        "fact",
        f"User has {count} {noun}{suffix}",
        8 if details else 7,
        key=f"{noun}_count",
        claim=(f"{noun}_count", str(count)),
        topic_text=noun,
        details=details,
    )


def _relation_name(sentence: str) -> _Moment | None:
    m = _RELATION_NAME.search(sentence)
    if not m or m.group("v").lower() in STOP_WORDS or _is_question(sentence):
        return None
    rel, name = m.group("rel").lower(), m.group("v")
    key = f"{rel}_name" if rel in _SINGLE_RELATIONS else f"{rel}_{snake(name)}"
    opens_clause = not _lead_stripped(sentence[: m.start()]).strip()
    content = _user_sentence(sentence) if opens_clause else f"User has a {rel} named {name}"
    details = _corrected(sentence)
    return _Moment("fact", content, 7, key=key, claim=(key, name), topic_text=rel, details=details)


def _stable_fact(sentence: str) -> _Moment | None:
    if _is_question(sentence):
        return None
    for pattern, key_template, importance in _FACTS:
        m = pattern.search(sentence)
        if not m:
            continue
        value = _clause(m.group("v"))
        rel = m.groupdict().get("rel")
        key = key_template.format(v=snake(value)[:40], rel=f"{rel}_" if rel else "")
        details = _corrected(sentence)
        content = _user_sentence(sentence)
        if key == "name":
            content, value = content.replace(value, value.title()), value.title()
        return _Moment(
            "fact",
            content,
            importance + (1 if details else 0),
            key=key,
            claim=(key, value),
            topic_text=key.replace("_", " "),
            details=details,
        )
    return None


# --- decisions ------------------------------------------------------------------------

_DECISION_FORMS: list[tuple[str, str]] = [
    (
        r"let'?s go with|(?:we|i)(?:'ll| will) go with|(?:we'?re|we are|i'?m|i am) going with",
        "Decided to go with",
    ),
    (r"let'?s use|(?:we|i)(?:'ll| will) use|(?:we'?re|we are) going to use", "Decided to use"),
    (r"(?:we|i)(?:'ve| have)? decided not to|^decided not to", "Decided not to"),
    (r"(?:we|i)(?:'ve| have)? decided to|^decided to|(?:the )?decision is to", "Decided to"),
    (r"(?:we|i)(?:'ve| have)? decided on|^decided on", "Decided on"),
    (
        r"(?:we'?re|we are|i'?m|i am) switching to|let'?s switch to",
        "Decided to switch to",
    ),
    (r"let'?s stick with|(?:we|i)(?:'ll| will) stick with", "Decided to stick with"),
    (r"(?:the |our |my )?final (?:answer|decision) is:?|final decision:", "Final decision:"),
]
_CHOOSING_LEADS = frozenset(
    {
        "Decided to go with",
        "Decided to use",
        "Decided on",
        "Decided to switch to",
        "Decided to stick with",
    }
)
_DECISIONS = [(_rx(rf"(?:\b|^)(?:{form})\s+(?P<obj>.+)"), lead) for form, lead in _DECISION_FORMS]
_CHOICE_VERB = _rx(r"^(?:use|go with|switch to|stick with|move to|migrate to|adopt)\s+(?P<c>.+)")
_PURPOSE = _rx(r"\s+(?:for|as) (?:the |our |a |an )?(?P<p>[\w -]+)")
_REASON = _rx(r"\s+(?:because|since|so that|as it|instead of|rather than)\b.*$")
_AFTERTHOUGHT = _rx(r",\s+(?:it|that|this|since|but|so|which|though|and then)\b.*$")


def _decision_claim(lead: str, obj: str) -> tuple[str, str] | None:
    """(predicate, value) when the decision picks a thing, e.g. uses_database=Postgres."""
    choice = obj
    if lead not in _CHOOSING_LEADS:
        inner = _CHOICE_VERB.match(obj) if lead != "Decided not to" else None
        if not inner:
            return None
        choice = inner.group("c")
    choice = _REASON.sub("", choice)
    purpose = _PURPOSE.search(choice)
    thing = choice[: purpose.start()] if purpose else choice
    category = category_of(thing)
    if category:
        return f"uses_{category}", strip_clause(thing)
    if purpose and keywords(purpose.group("p")):
        return f"uses_for_{_head(purpose.group('p'), 3)}", strip_clause(thing)
    return None


def _decision(sentence: str) -> _Moment | None:
    if _is_question(sentence):
        return None
    hits = [(m, lead) for pattern, lead in _DECISIONS if (m := pattern.search(sentence))]
    if not hits:
        return None
    m, lead = min(hits, key=lambda hit: hit[0].start())
    if _CONDITIONAL.search(sentence[: m.start()]):
        return None
    obj = _clause(_AFTERTHOUGHT.sub("", m.group("obj")))
    if not keywords(obj):
        return None
    firm = lead in ("Decided to", "Decided not to", "Decided on", "Final decision:")
    return _Moment(
        "decision",
        f"{lead} {obj}",
        9 if firm else 8,
        claim=_decision_claim(lead, obj),
        topic_text=obj,
        status="closed",
    )


# --- commitments ----------------------------------------------------------------------

_COMMIT = _rx(
    r"\b(?:i will|i'll|i promise(?: to)?|i'?m going to|i am going to|i'?m gonna)\s+(?P<act>.+)"
)
_ASSISTANT_COMMIT = _rx(r"\bi(?:'ll| will)\s+(?P<act>.+)")
_WEAK_ACT = word_set(
    """be try think see let have probably maybe just need it that this you we they the a an
    i bed sleep also go head keep do get help explain walk look happy gladly"""
)
_FILLER_WORDS = frozenset({"now", "then", "later", "soon", "again", "too", "today"})


def _act(pattern: re.Pattern[str], sentence: str) -> str | None:
    m = pattern.search(sentence)
    if not m or _is_question(sentence):
        return None
    act = _clause(m.group("act"))
    words = [w for w in act.lower().split() if w not in _FILLER_WORDS]
    if len(words) < 2 or words[0] in _WEAK_ACT or _REMIND_YOU.search(sentence):
        return None
    return act


def _commitment(sentence: str) -> _Moment | None:
    act = _act(_COMMIT, sentence)
    if act is None:
        return None
    act = third_person(act)
    return _Moment("commitment", f"User committed to {act}", 7, topic_text=act, status="open")


def _assistant_commitment(sentence: str) -> _Moment | None:
    """Only timed promises count ("I'll send you the summary tomorrow")."""
    act = _act(_ASSISTANT_COMMIT, sentence)
    if act is None or not find_time_expression(act):
        return None
    act = second_to_third(act)
    return _Moment("commitment", f"Assistant committed to {act}", 6, topic_text=act, status="open")


# --- open threads ---------------------------------------------------------------------

_OPEN_THREADS: list[tuple[re.Pattern[str], str, int]] = [
    (_rx(r"\b(?:blocked|stuck) (?:on|by) (?P<obj>.+)"), "Blocked on", 8),
    (_rx(r"\bwaiting (?:for|on) (?P<obj>(?!you\b|me\b).+)"), "Waiting for", 7),
    (
        _rx(r"\b(?:need to|have to|can'?t|haven'?t|not sure how to) figure(?:d)? out (?P<obj>.+)"),
        "Need to figure out",
        7,
    ),
    (re.compile(r"(?:\bTODO\b|(?i:\btodo:))[:\s-]*(?P<obj>.+)"), "TODO:", 7),
    (
        _rx(
            r"\b(?:still need to|have yet to|haven'?t) decided? (?P<obj>(?:on|whether|which|if|between|what|how)\b.+)"
        ),
        "Still to decide",
        7,
    ),
]
_BLOCKERS = frozenset({"Blocked on", "Waiting for"})


def _open_thread(sentence: str) -> _Moment | None:
    for pattern, lead, importance in _OPEN_THREADS:
        m = pattern.search(sentence)
        if m and keywords(m.group("obj")):
            obj = third_person(_clause(m.group("obj")))
            details = {"blocker": True} if lead in _BLOCKERS else {}
            return _Moment(
                "open_thread",
                f"{lead} {obj}",
                importance,
                topic_text=obj,
                status="open",
                details=details,
            )
    return None


_CANNOT_ANSWER = _rx(
    r"\b(?:i don'?t know|i do not know|i'?m not sure|i am not sure|i couldn'?t find|"
    r"i could not find|i can'?t find|i don'?t have (?:that|any|access|enough)|i'?m unable to|"
    r"i am unable to|i can'?t answer|no idea)\b"
)


def _unanswered(turn: CaptureTurn, previous: CaptureTurn | None) -> MemoryCandidate | None:
    """An open thread when the assistant could not answer the user's question."""
    if previous is None or previous.role != "user" or not _CANNOT_ANSWER.search(turn.content):
        return None
    asked = triage(previous)
    questions = (
        [s for s in split_sentences(asked.prose) if _is_question(s)]
        if not asked.skip_reason
        else []
    )
    if not questions:
        return None
    question = _lead_stripped(questions[-1])
    moment = _Moment(
        "open_thread",
        f'Unanswered question from user: "{question}"',
        7,
        topic_text=question,
        status="open",
    )
    return _build(moment, turn, questions[-1], asked.prose, extra_ids=(previous.message_id,))


# --- preferences ----------------------------------------------------------------------

_SETTING_KEYS = {
    "volume": "volume_level",
    "brightness": "brightness_level",
    "font size": "font_size",
    "text size": "font_size",
    "speaking speed": "speech_rate",
    "speech rate": "speech_rate",
    "speed": "speech_rate",
}
_SETTING = _rx(
    r"\b(?:i (?:like|prefer|want|need)|i'?d like|keep|always (?:keep|set))\b[^.]*?"
    rf"\b(?P<setting>{'|'.join(_SETTING_KEYS)})\b[^.]*?\b(?:at|to|on|around)\s+"
    r"(?P<v>\d{1,3}\s*%|\d{1,3}|low|medium|high|max(?:imum)?|loud|quiet|slow|fast)"
)
_FAVORITE = _rx(r"\bmy fav(?:ou|o)rite (?P<thing>[a-z ]{2,30}?) (?:is|are) (?P<v>[^,;]+)")
_PREFER = _rx(
    r"\bi(?:'d| would)? (?:really |much |generally |usually |definitely )?prefer (?P<obj>.+)"
)
_PREFER_SPLIT = _rx(r"\s+(?:over|to|rather than|instead of)\s+")
_LIKE = _rx(
    r"\bi (?:really |absolutely |just |honestly |kind of |do )?(?P<verb>love|like|enjoy|hate|"
    r"dislike|can'?t stand|cannot stand|don'?t like|do not like|don'?t enjoy)\s+(?P<obj>.+)"
)
_LIKE_VALUES = {"love": "loves", "like": "likes", "enjoy": "likes", "hate": "hates"}
_RULE = _rx(
    r"^(?:please\s+)?(?P<mode>always|never)\s+(?P<obj>.+)|^please\s+(?P<dont>don'?t|do not)\s+"
    r"(?P<obj2>.+)|^(?:don'?t|do not) ever\s+(?P<obj3>.+)|\bfrom now on,?\s+(?P<obj4>.+)"
)
_NOT_RULES = re.compile(r"^(?:mind|forget|worry|bother|know)\b", _I)


def _setting(sentence: str) -> _Moment | None:
    m = _SETTING.search(sentence)
    if not m:
        return None
    setting, value = m.group("setting").lower(), re.sub(r"\s+", "", m.group("v").lower())
    return _Moment(
        "preference",
        f"User prefers the {setting} at {value}",
        7,
        key=_SETTING_KEYS[setting],
        claim=(_SETTING_KEYS[setting], value),
        topic_text=setting,
    )


def _favorite(sentence: str) -> _Moment | None:
    m = _FAVORITE.search(sentence)
    if not m:
        return None
    key = f"favorite_{snake(m.group('thing'))}"
    value = _clause(m.group("v"))
    return _Moment(
        "preference",
        _user_sentence(sentence),
        6,
        key=key,
        claim=(key, value),
        topic_text=m.group("thing"),
    )


def _prefer(sentence: str) -> _Moment | None:
    m = _PREFER.search(sentence)
    if not m:
        return None
    obj = _clause(m.group("obj"))
    choice = _PREFER_SPLIT.split(obj, maxsplit=1)[0]
    head = category_of(choice) or _head(choice)
    if not head:
        return None
    content = f"User prefers {third_person(obj)}"
    key = f"preferred_{head}"
    return _Moment("preference", content, 7, key=key, claim=(key, choice), topic_text=choice)


def _like(sentence: str) -> _Moment | None:
    m = _LIKE.search(sentence)
    if not m or _PRONOUN_START.match(m.group("obj")):
        return None
    obj = _clause(m.group("obj"))
    head = _head(obj)
    if not head:
        return None
    value = _LIKE_VALUES.get(m.group("verb").lower(), "dislikes")
    content = f"User {value} {third_person(obj)}"
    key = f"likes_{head}"
    return _Moment("preference", content, 6, key=key, claim=(key, value), topic_text=obj)


def _rule(sentence: str) -> _Moment | None:
    m = _RULE.search(_lead_stripped(sentence))
    if not m:
        return None
    obj = _clause(
        next(g for g in (m.group("obj"), m.group("obj2"), m.group("obj3"), m.group("obj4")) if g)
    )
    if _NOT_RULES.match(obj) or not keywords(obj):
        return None
    never = (m.group("mode") or "").lower() == "never" or bool(m.group("dont"))
    mode = "never" if never else "always"
    obj = re.sub(r"\byour\b", "its", obj, flags=_I)
    content = f"User wants the assistant to {mode} {third_person(obj)}"
    key = f"rule_{_head(obj, 3)}"
    return _Moment("preference", content, 8, key=key, claim=(key, f"{mode} {obj}"), topic_text=obj)


def _preference(sentence: str) -> _Moment | None:
    if _is_question(sentence):
        return None
    for rule in (_setting, _favorite, _prefer, _rule, _like):
        moment = rule(sentence)
        if moment:
            return moment
    return None


# --- wellbeing ------------------------------------------------------------------------

_FEELING = _rx(
    r"\bi(?:'m| am| feel|'m feeling| am feeling|'ve been feeling| have been feeling)\s+"
    r"(?:(?:so|really|very|a bit|quite|pretty|kind of|a little|super|extremely)\s+)*"
    r"(?P<f>lonely|sad|tired|exhausted|stressed|anxious|worried|frustrated|overwhelmed|"
    r"depressed|down|sick|unwell|dizzy|in pain|happy|excited|better|worse|angry|upset|"
    r"scared|confused)\b"
)


def _feeling(sentence: str) -> _Moment | None:
    if not _FEELING.search(sentence) or _is_question(sentence):
        return None
    return _Moment("wellbeing", _user_sentence(sentence), 6, topic_text=sentence)


_USER_RULES: tuple[_Rule, ...] = (
    _remind_me,
    _count_fact,
    _stable_fact,
    _decision,
    _open_thread,
    _preference,
    _commitment,
    _relation_name,
    _appointment,
    _feeling,
)
_ASSISTANT_RULES: tuple[_Rule, ...] = (_remind_you, _decision, _assistant_commitment)


# --- building candidates --------------------------------------------------------------


def _provenance(turn: CaptureTurn) -> Provenance:
    if turn.source == "system":
        return "system"
    return "user_explicit" if turn.role == "user" else "inference"


def _tags(turn: CaptureTurn, moment: _Moment, sentence: str, prose: str) -> list[str]:
    tags = [f"topic:{topic_slug(moment.topic_text or sentence)}"]
    tags += [f"project:{p}" for p in extract_projects(prose)]
    tags += [f"person:{snake(p)}" for p in extract_people(sentence)]
    if moment.status:
        tags.append(f"status:{moment.status}")
    tags += [f"source:{turn.source}", f"session:{turn.session_id}"]
    return list(dict.fromkeys(tags))


def _build(
    moment: _Moment,
    turn: CaptureTurn,
    sentence: str,
    prose: str,
    *,
    extra_ids: tuple[str, ...] = (),
) -> MemoryCandidate:
    provenance = _provenance(turn)
    confidence = _BASE_CONFIDENCE[provenance] - (0.2 if _HEDGE.search(sentence) else 0.0)
    when = find_time_expression(sentence) if moment.kind in _TIMED_KINDS else None
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
        moment = _Moment(
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
        moment = _Moment("context", f'User agreed to proceed ("{prose}")', 5, topic_text=prose)
        return _build(moment, turn, prose, prose)
    sentences = split_sentences(proposal)
    questions = [s for s in sentences if _is_question(s)]
    what = questions[-1] if questions else sentences[0]
    moment = _Moment("context", f'User agreed ("{prose}") to: "{what}"', 5, topic_text=what)
    return _build(moment, turn, prose, prose, extra_ids=(previous.message_id,))


def detect_key_moments(
    turn: CaptureTurn,
    *,
    previous: CaptureTurn | None = None,
    max_writes: int = DEFAULT_MAX_WRITES,
) -> list[MemoryCandidate]:
    """Memories worth keeping from one turn, most important first, at most `max_writes`.

    `previous` is the turn before this one in the same session; it lets an acknowledgment
    name what was agreed to and an assistant's "I don't know" mark the user's question
    as an open thread.
    """
    checked = triage(turn)
    if checked.skip_reason:
        return []
    rules = _USER_RULES if turn.role == "user" else _ASSISTANT_RULES
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
    return _rank(found, max_writes)


def _rank(found: list[MemoryCandidate], limit: int) -> list[MemoryCandidate]:
    """Dedupe by kind + key (or content), then keep the `limit` most important, stable."""
    unique: dict[tuple[str, str], MemoryCandidate] = {}
    for candidate in found:
        ident = (candidate.kind, candidate.key or normalize_for_key(candidate.content))
        unique.setdefault(ident, candidate)
    ranked = sorted(unique.values(), key=lambda c: -c.importance)
    return ranked[:limit]
