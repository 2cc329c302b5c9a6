"""Follow-up rules: reminders the user asks for or the assistant promises, and upcoming
appointments with a time (not ones that are already over).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from continuum.capture.due import PAST
from continuum.capture.rules.clauses import (
    Moment,
    is_question,
    rx,
    trim_clause,
    user_sentence,
)
from continuum.domain.text import find_time_expression, second_to_third, third_person

_WHEN = r"(?P<when>\s+(?:on|this|next|tomorrow|tonight|today|in|at|by)\b[^,;]*?)?\s+"
_WHAT = r"(?P<what>(?:to|about|that|of)\b.+)"
_REMIND_ME = rx(rf"\bremind me{_WHEN}{_WHAT}")
REMIND_YOU = rx(rf"\bi(?:'ll| will) (?:remind|ping|nudge) you{_WHEN}{_WHAT}")
_APPOINTMENT = rx(
    r"\b(?:appointment|appt|doctor|doctor's|dentist|check-?up|surgery|physio|therapy|"
    r"therapist|vet|interview|flight|meeting|deadline|dinner|lunch|party|visit|exam)\b"
)
_PAST_EVENT = rx(
    r"\b(?:i|we)\s+(?:just\s+|already\s+)?(?:went|was|were|had|did|attended|visited|saw|met|"
    r"came|returned|enjoyed|missed|finished|left)\b"
)
_FUTURE = rx(r"\b(?:will|'ll|going to|gonna|next|tomorrow|upcoming|coming up)\b")


def _reminder(
    pattern: re.Pattern[str], sentence: str, to_third: Callable[[str], str]
) -> Moment | None:
    m = pattern.search(sentence)
    if not m:
        return None
    what = to_third(trim_clause(m.group("what")))
    when = m.group("when") or ""
    return Moment("follow_up", f"Remind user{when} {what}", 7, topic_text=what, status="open")


def remind_me(sentence: str) -> Moment | None:
    return _reminder(_REMIND_ME, sentence, third_person)


def remind_you(sentence: str) -> Moment | None:
    return _reminder(REMIND_YOU, sentence, second_to_third)


def _is_past(sentence: str) -> bool:
    """Whether the sentence tells of something over ("Last Friday I went to a meeting")."""
    if PAST.search(sentence):
        return True
    return bool(_PAST_EVENT.search(sentence)) and not _FUTURE.search(sentence)


def appointment(sentence: str) -> Moment | None:
    if is_question(sentence) or not _APPOINTMENT.search(sentence) or _is_past(sentence):
        return None
    if not find_time_expression(sentence):
        return None
    content = user_sentence(sentence)
    return Moment("follow_up", content, 7, topic_text=sentence, status="open")
