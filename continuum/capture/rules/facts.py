"""Fact rules: stable facts about the user (name, allergies, home, birthdays, age, work),
counts of family members and pets, and named relations; a correction is marked as one.
"""

from __future__ import annotations

import re
from typing import Any

from continuum.capture.rules.clauses import (
    Moment,
    is_question,
    lead_stripped,
    rx,
    trim_clause,
    user_sentence,
)
from continuum.capture.topics import RELATIONS, STOP_WORDS, canonical
from continuum.domain.text import NUMBER, parse_number, snake, word_set

_CORRECTION = rx(r"^(?:actually|correction|sorry|oops|wait|no)\b|\bi meant?\b")
_REPLACED = rx(rf"\bnot\s+(?P<old>{NUMBER}|[\w' -]{{1,30}}?)\s*[.!]?$")
_COUNT_NOUNS = (
    r"grandchildren|grandkids|children|kids|sons|daughters|grandsons|granddaughters|"
    r"siblings|brothers|sisters|cats|dogs|pets"
)
_COUNT_HAVE = rx(rf"\bi (?:have|'ve got|have got) (?P<n>{NUMBER}) (?P<noun>{_COUNT_NOUNS})\b")
_COUNT_BARE = rx(rf"\b(?P<n>{NUMBER}) (?P<noun>{_COUNT_NOUNS})\b")
_SINGLE_RELATIONS = word_set(
    "wife husband partner mother mom mum father dad boss doctor neighbor neighbour"
)
_RELATION_NAME = re.compile(
    rf"(?i:\bmy (?P<rel>{RELATIONS})(?:'s name is| is called| is named|,? named|"
    r",? called)?),? (?P<v>[A-Z][a-z]+)\b"
)
_FACTS: list[tuple[re.Pattern[str], str, int]] = [
    (re.compile(r"(?i:\bmy name(?:'s| is)) (?P<v>[A-Za-z][\w'-]*(?: [A-Z][\w'-]*)?)"), "name", 8),
    (rx(r"\bi(?:'m| am) allergic to (?P<v>[^,;]+)"), "allergy_{v}", 8),
    (
        rx(r"\bi (?:live|'m living|am living) in (?P<v>[^,;]+?)(?= with | since | and |$)"),
        "home_location",
        7,
    ),
    (rx(r"\bmy (?:(?P<rel>[a-z]+)'s )?birthday is (?:on )?(?P<v>[^,;]+)"), "{rel}birthday", 7),
    (rx(r"\bi(?:'m| am) (?P<v>\d{1,3}) years? old\b"), "age", 6),
    (rx(r"\bi work (?:at|for) (?P<v>[^,;]+?)(?= as | since | and |$)"), "employer", 6),
    (rx(r"\bi work as (?:an? )?(?P<v>[^,;]+?)(?= at | for | since | and |$)"), "occupation", 6),
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


def count_fact(sentence: str) -> Moment | None:
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


def relation_name(sentence: str) -> Moment | None:
    m = _RELATION_NAME.search(sentence)
    if not m or m.group("v").lower() in STOP_WORDS or is_question(sentence):
        return None
    rel, name = m.group("rel").lower(), m.group("v")
    key = f"{rel}_name" if rel in _SINGLE_RELATIONS else f"{rel}_{snake(name)}"
    opens_clause = not lead_stripped(sentence[: m.start()]).strip()
    content = user_sentence(sentence) if opens_clause else f"User has a {rel} named {name}"
    details = _corrected(sentence)
    return Moment("fact", content, 7, key=key, claim=(key, name), topic_text=rel, details=details)


def stable_fact(sentence: str) -> Moment | None:
    if is_question(sentence):
        return None
    for pattern, key_template, importance in _FACTS:
        m = pattern.search(sentence)
        if not m:
            continue
        value = trim_clause(m.group("v"))
        rel = m.groupdict().get("rel")
        key = key_template.format(v=snake(value)[:40], rel=f"{rel}_" if rel else "")
        details = _corrected(sentence)
        content = user_sentence(sentence)
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
