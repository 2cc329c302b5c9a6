"""Open-thread rules: blockers, waits, things to figure out or still to decide, TODOs."""

from __future__ import annotations

import re

from continuum.capture.rules.clauses import Moment, rx, trim_clause
from continuum.capture.topics import keywords
from continuum.domain.text import third_person

_OPEN_THREADS: list[tuple[re.Pattern[str], str, int]] = [
    (rx(r"\b(?:blocked|stuck) (?:on|by) (?P<obj>.+)"), "Blocked on", 8),
    (rx(r"\bwaiting (?:for|on) (?P<obj>(?!you\b|me\b).+)"), "Waiting for", 7),
    (
        rx(r"\b(?:need to|have to|can'?t|haven'?t|not sure how to) figure(?:d)? out (?P<obj>.+)"),
        "Need to figure out",
        7,
    ),
    (re.compile(r"(?:\bTODO\b|(?i:\btodo:))[:\s-]*(?P<obj>.+)"), "TODO:", 7),
    (
        rx(
            r"\b(?:still need to|have yet to|haven'?t) decided? (?P<obj>(?:on|whether|which|if|between|what|how)\b.+)"
        ),
        "Still to decide",
        7,
    ),
]
_BLOCKERS = frozenset({"Blocked on", "Waiting for"})


def open_thread(sentence: str) -> Moment | None:
    for pattern, lead, importance in _OPEN_THREADS:
        m = pattern.search(sentence)
        if m and keywords(m.group("obj")):
            obj = third_person(trim_clause(m.group("obj")))
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
