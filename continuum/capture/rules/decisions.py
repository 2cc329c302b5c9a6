"""Decision rules: explicit choices ("let's go with", "we decided to", "final decision:"),
with a claim when the choice picks a thing; questions and conditional choices are not
decisions.
"""

from __future__ import annotations

from continuum.capture.rules.clauses import Moment, head_words, is_question, rx, trim_clause
from continuum.capture.topics import category_of, keywords
from continuum.domain.text import strip_clause

_CONDITIONAL = rx(r"\b(?:if|whether|unless|maybe|perhaps|might|could|should we|would|not sure)\b")
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
_DECISIONS = [(rx(rf"(?:\b|^)(?:{form})\s+(?P<obj>.+)"), lead) for form, lead in _DECISION_FORMS]
_CHOICE_VERB = rx(r"^(?:use|go with|switch to|stick with|move to|migrate to|adopt)\s+(?P<c>.+)")
_PURPOSE = rx(r"\s+(?:for|as) (?:the |our |a |an )?(?P<p>[\w -]+)")
_REASON = rx(r"\s+(?:because|since|so that|as it|instead of|rather than)\b.*$")
_AFTERTHOUGHT = rx(
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
        return f"uses_for_{head_words(purpose.group('p'), 3)}", strip_clause(thing)
    return None


def decision(sentence: str) -> Moment | None:
    if is_question(sentence):
        return None
    hits = [(m, lead) for pattern, lead in _DECISIONS if (m := pattern.search(sentence))]
    if not hits:
        return None
    m, lead = min(hits, key=lambda hit: hit[0].start())
    if _CONDITIONAL.search(sentence[: m.start()]):
        return None
    obj = trim_clause(_AFTERTHOUGHT.sub("", m.group("obj")))
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
