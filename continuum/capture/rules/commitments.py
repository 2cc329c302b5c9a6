"""Commitment rules: what the user promises to do, and the assistant's timed promises."""

from __future__ import annotations

import re

from continuum.capture.rules.clauses import Moment, is_question, rx, trim_clause
from continuum.capture.rules.followups import REMIND_YOU
from continuum.domain.text import find_time_expression, second_to_third, third_person, word_set

_COMMIT = rx(
    r"\b(?:i will|i'll|i promise(?: to)?|i'?m going to|i am going to|i'?m gonna)\s+(?P<act>.+)"
)
_ASSISTANT_COMMIT = rx(r"\bi(?:'ll| will)\s+(?P<act>.+)")
_WEAK_ACT = word_set(
    """be try think see let have probably maybe just need it that this you we they the a an
    i bed sleep also go head keep do get help explain walk look happy gladly"""
)
_FILLER_WORDS = frozenset({"now", "then", "later", "soon", "again", "too", "today"})


def _act(pattern: re.Pattern[str], sentence: str) -> str | None:
    m = pattern.search(sentence)
    if not m or is_question(sentence):
        return None
    act = trim_clause(m.group("act"))
    words = [w for w in act.lower().split() if w not in _FILLER_WORDS]
    if len(words) < 2 or words[0] in _WEAK_ACT or REMIND_YOU.search(sentence):
        return None
    return act


def commitment(sentence: str) -> Moment | None:
    act = _act(_COMMIT, sentence)
    if act is None:
        return None
    act = third_person(act)
    return Moment("commitment", f"User committed to {act}", 7, topic_text=act, status="open")


def assistant_commitment(sentence: str) -> Moment | None:
    """Only timed promises count ("I'll send you the summary tomorrow")."""
    act = _act(_ASSISTANT_COMMIT, sentence)
    if act is None or not find_time_expression(act):
        return None
    act = second_to_third(act)
    return Moment("commitment", f"Assistant committed to {act}", 6, topic_text=act, status="open")
