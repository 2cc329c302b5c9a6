"""What every sentence rule shares: the `Moment` a rule returns, the `Rule` signature, and
the clause helpers: filler stripping, questions, the user's sentence in the third person.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from continuum.capture.topics import keywords
from continuum.domain.kinds import MemoryKind
from continuum.domain.text import capitalize_first, snake, strip_clause, third_person

_I = re.IGNORECASE
_LEAD_FILLER = re.compile(
    r"^(?:(?:actually|oh|and|also|so|well|ok|okay|by the way|btw|fyi|just so you know|sorry|"
    r"oops|correction|no|wait|great|cool|alright|right|anyway|hey|yes|yeah)\b[,:;!.]?\s*)+",
    _I,
)
_TRAILING_FILLER = re.compile(
    r"(?:[\s,]+(?:then|for now|now|too|as well|please|ok|okay|for the time being))+$", _I
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


Rule = Callable[[str], Moment | None]


def rx(pattern: str) -> re.Pattern[str]:
    """A case-insensitive pattern (every rule's default)."""
    return re.compile(pattern, _I)


def lead_stripped(sentence: str) -> str:
    """The sentence without its leading fillers ("actually", "oh", "by the way", ...)."""
    return _LEAD_FILLER.sub("", sentence).strip()


def trim_clause(text: str) -> str:
    """The clause without trailing punctuation or fillers ("then", "for now", "please")."""
    return _TRAILING_FILLER.sub("", strip_clause(text))


def head_words(text: str, words: int = 2) -> str:
    """The first `words` keywords of `text`, snake_cased and joined by `_` (for keys)."""
    return "_".join(snake(w) for w in keywords(text)[:words])


def is_question(sentence: str) -> bool:
    """Whether the sentence ends with a question mark."""
    return sentence.rstrip().endswith("?")


def user_sentence(sentence: str) -> str:
    """The user's clause retold in the third person ("I live in Rome" -> "User lives in Rome")."""
    return capitalize_first(third_person(trim_clause(lead_stripped(sentence))))
