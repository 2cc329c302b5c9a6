"""Wellbeing rule: how the user says they feel."""

from __future__ import annotations

from continuum.capture.rules.clauses import Moment, is_question, rx, user_sentence

_FEELING = rx(
    r"\bi(?:'m| am| feel|'m feeling| am feeling|'ve been feeling| have been feeling)\s+"
    r"(?:(?:so|really|very|a bit|quite|pretty|kind of|a little|super|extremely)\s+)*"
    r"(?P<f>lonely|sad|tired|exhausted|stressed|anxious|worried|frustrated|overwhelmed|"
    r"depressed|down|sick|unwell|dizzy|in pain|happy|excited|better|worse|angry|upset|"
    r"scared|confused)\b"
)


def feeling(sentence: str) -> Moment | None:
    if not _FEELING.search(sentence) or is_question(sentence):
        return None
    return Moment("wellbeing", user_sentence(sentence), 6, topic_text=sentence)
