"""Sentence rules of key-moment capture (R20): each rule reads one clause and returns the
moment it states — a follow-up, fact, decision, commitment, open thread, preference or
feeling — or None. `continuum.capture.keymoments` turns moments into memory candidates.

Every rule needs an explicit phrase; questions and hedged or conditional statements are
not decisions."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from continuum.capture.due import PAST
from continuum.capture.topics import RELATIONS, STOP_WORDS, canonical, category_of, keywords
from continuum.domain.kinds import MemoryKind
from continuum.domain.text import (
    NUMBER,
    capitalize_first,
    find_time_expression,
    parse_number,
    second_to_third,
    snake,
    strip_clause,
    third_person,
    word_set,
)

_I = re.IGNORECASE
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
class Moment:
    """A rule hit, before tags, provenance and confidence are added."""

    kind: MemoryKind
    content: str
    importance: int
    key: str | None = None
    claim: tuple[str, str] | None = None  # (predicate, value) when the moment makes a claim
    topic_text: str = ""
    status: Literal["open", "closed"] | None = None
    details: dict[str, Any] = field(default_factory=dict)


_Rule = Callable[[str], Moment | None]


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, _I)


def lead_stripped(sentence: str) -> str:
    return _LEAD_FILLER.sub("", sentence).strip()


def _clause(text: str) -> str:
    return _TRAILING_FILLER.sub("", strip_clause(text))


def _head(text: str, words: int = 2) -> str:
    return "_".join(snake(w) for w in keywords(text)[:words])


def is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?")


def _user_sentence(sentence: str) -> str:
    return capitalize_first(third_person(_clause(lead_stripped(sentence))))


# --- follow-ups -----------------------------------------------------------------------

_WHEN = r"(?P<when>\s+(?:on|this|next|tomorrow|tonight|today|in|at|by)\b[^,;]*?)?\s+"
_WHAT = r"(?P<what>(?:to|about|that|of)\b.+)"
_REMIND_ME = _rx(rf"\bremind me{_WHEN}{_WHAT}")
_REMIND_YOU = _rx(rf"\bi(?:'ll| will) (?:remind|ping|nudge) you{_WHEN}{_WHAT}")
_APPOINTMENT = _rx(
    r"\b(?:appointment|appt|doctor|doctor's|dentist|check-?up|surgery|physio|therapy|"
    r"therapist|vet|interview|flight|meeting|deadline|dinner|lunch|party|visit|exam)\b"
)
_PAST_EVENT = _rx(
    r"\b(?:i|we)\s+(?:just\s+|already\s+)?(?:went|was|were|had|did|attended|visited|saw|met|"
    r"came|returned|enjoyed|missed|finished|left)\b"
)
_FUTURE = _rx(r"\b(?:will|'ll|going to|gonna|next|tomorrow|upcoming|coming up)\b")


def _reminder(
    pattern: re.Pattern[str], sentence: str, to_third: Callable[[str], str]
) -> Moment | None:
    m = pattern.search(sentence)
    if not m:
        return None
    what = to_third(_clause(m.group("what")))
    when = m.group("when") or ""
    return Moment("follow_up", f"Remind user{when} {what}", 7, topic_text=what, status="open")


def _remind_me(sentence: str) -> Moment | None:
    return _reminder(_REMIND_ME, sentence, third_person)


def _remind_you(sentence: str) -> Moment | None:
    return _reminder(_REMIND_YOU, sentence, second_to_third)


def _is_past(sentence: str) -> bool:
    """Whether the sentence tells of something over ("Last Friday I went to a meeting")."""
    if PAST.search(sentence):
        return True
    return bool(_PAST_EVENT.search(sentence)) and not _FUTURE.search(sentence)


def _appointment(sentence: str) -> Moment | None:
    if is_question(sentence) or not _APPOINTMENT.search(sentence) or _is_past(sentence):
        return None
    if not find_time_expression(sentence):
        return None
    content = _user_sentence(sentence)
    return Moment("follow_up", content, 7, topic_text=sentence, status="open")


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


def _count_fact(sentence: str) -> Moment | None:
    details = _corrected(sentence)
    m = _COUNT_HAVE.search(sentence) or (_COUNT_BARE.search(sentence) if details else None)
    if not m or is_question(sentence):
        return None
    count, noun = parse_number(m.group("n")), canonical(m.group("noun"))
    replaced = parse_number(str(details.get("replaces", "")))
    if replaced is not None:
        details["replaces"] = str(replaced)
    suffix = f" (corrected from {replaced})" if replaced is not None else ""
    return Moment(
        "fact",
        f"User has {count} {noun}{suffix}",
        8 if details else 7,
        key=f"{noun}_count",
        claim=(f"{noun}_count", str(count)),
        topic_text=noun,
        details=details,
    )


def _relation_name(sentence: str) -> Moment | None:
    m = _RELATION_NAME.search(sentence)
    if not m or m.group("v").lower() in STOP_WORDS or is_question(sentence):
        return None
    rel, name = m.group("rel").lower(), m.group("v")
    key = f"{rel}_name" if rel in _SINGLE_RELATIONS else f"{rel}_{snake(name)}"
    opens_clause = not lead_stripped(sentence[: m.start()]).strip()
    content = _user_sentence(sentence) if opens_clause else f"User has a {rel} named {name}"
    details = _corrected(sentence)
    return Moment("fact", content, 7, key=key, claim=(key, name), topic_text=rel, details=details)


def _stable_fact(sentence: str) -> Moment | None:
    if is_question(sentence):
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
        return Moment(
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
    (r"let'?s migrate to|(?:we|i)(?:'ll| will) migrate to", "Decided to migrate to"),
    (r"let'?s stick with|(?:we|i)(?:'ll| will) stick with", "Decided to stick with"),
    (r"(?:the |our |my )?final (?:answer|decision) is:?|final decision:", "Final decision:"),
]
_CHOOSING_LEADS = frozenset(
    {
        "Decided to go with",
        "Decided to use",
        "Decided on",
        "Decided to switch to",
        "Decided to migrate to",
        "Decided to stick with",
    }
)
_DECISIONS = [(_rx(rf"(?:\b|^)(?:{form})\s+(?P<obj>.+)"), lead) for form, lead in _DECISION_FORMS]
_CHOICE_VERB = _rx(r"^(?:use|go with|switch to|stick with|move to|migrate to|adopt)\s+(?P<c>.+)")
_PURPOSE = _rx(r"\s+(?:for|as) (?:the |our |a |an )?(?P<p>[\w -]+)")
_REASON = _rx(r"\s+(?:because|since|so that|as it|instead of|rather than)\b.*$")
_AFTERTHOUGHT = _rx(
    r",\s+(?:it|that|this|since|but|so|which|though|and then|she|he|they|we|i|the|my|our)\b.*$"
)


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


def _decision(sentence: str) -> Moment | None:
    if is_question(sentence):
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
    return Moment(
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
    if not m or is_question(sentence):
        return None
    act = _clause(m.group("act"))
    words = [w for w in act.lower().split() if w not in _FILLER_WORDS]
    if len(words) < 2 or words[0] in _WEAK_ACT or _REMIND_YOU.search(sentence):
        return None
    return act


def _commitment(sentence: str) -> Moment | None:
    act = _act(_COMMIT, sentence)
    if act is None:
        return None
    act = third_person(act)
    return Moment("commitment", f"User committed to {act}", 7, topic_text=act, status="open")


def _assistant_commitment(sentence: str) -> Moment | None:
    """Only timed promises count ("I'll send you the summary tomorrow")."""
    act = _act(_ASSISTANT_COMMIT, sentence)
    if act is None or not find_time_expression(act):
        return None
    act = second_to_third(act)
    return Moment("commitment", f"Assistant committed to {act}", 6, topic_text=act, status="open")


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


def _open_thread(sentence: str) -> Moment | None:
    for pattern, lead, importance in _OPEN_THREADS:
        m = pattern.search(sentence)
        if m and keywords(m.group("obj")):
            obj = third_person(_clause(m.group("obj")))
            details = {"blocker": True} if lead in _BLOCKERS else {}
            return Moment(
                "open_thread",
                f"{lead} {obj}",
                importance,
                topic_text=obj,
                status="open",
                details=details,
            )
    return None


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


def _setting(sentence: str) -> Moment | None:
    m = _SETTING.search(sentence)
    if not m:
        return None
    setting, value = m.group("setting").lower(), re.sub(r"\s+", "", m.group("v").lower())
    return Moment(
        "preference",
        f"User prefers the {setting} at {value}",
        7,
        key=_SETTING_KEYS[setting],
        claim=(_SETTING_KEYS[setting], value),
        topic_text=setting,
    )


def _favorite(sentence: str) -> Moment | None:
    m = _FAVORITE.search(sentence)
    if not m:
        return None
    key = f"favorite_{snake(m.group('thing'))}"
    value = _clause(m.group("v"))
    return Moment(
        "preference",
        _user_sentence(sentence),
        6,
        key=key,
        claim=(key, value),
        topic_text=m.group("thing"),
    )


def _prefer(sentence: str) -> Moment | None:
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
    return Moment("preference", content, 7, key=key, claim=(key, choice), topic_text=choice)


def _like(sentence: str) -> Moment | None:
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
    return Moment("preference", content, 6, key=key, claim=(key, value), topic_text=obj)


def _rule(sentence: str) -> Moment | None:
    m = _RULE.search(lead_stripped(sentence))
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
    return Moment("preference", content, 8, key=key, claim=(key, f"{mode} {obj}"), topic_text=obj)


def _preference(sentence: str) -> Moment | None:
    if is_question(sentence):
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


def _feeling(sentence: str) -> Moment | None:
    if not _FEELING.search(sentence) or is_question(sentence):
        return None
    return Moment("wellbeing", _user_sentence(sentence), 6, topic_text=sentence)


USER_RULES: tuple[_Rule, ...] = (
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
ASSISTANT_RULES: tuple[_Rule, ...] = (_remind_you, _decision, _assistant_commitment)
