"""Small text helpers shared by every layer: one line, cleaning, sentences, clipping,
third-person rewriting, number words, time expressions and the calendar's words (month and
weekday names, read by `capture.due` and `recall.timeparse` too)."""

from __future__ import annotations

import re


def word_set(text: str) -> frozenset[str]:
    """A frozenset of the whitespace-separated words of `text` (for word lists)."""
    return frozenset(text.split())


_ABBREVIATIONS = ("Dr", "Mr", "Mrs", "Ms", "St", "vs", "e.g", "i.e", "etc")
_SENTENCE_END = re.compile(
    r"(?<=[.!?])"
    + "".join(rf"(?<!\b{re.escape(abbreviation)}\.)" for abbreviation in _ABBREVIATIONS)
    + r"\s+(?=[\"'(A-Za-z0-9])|\n+"
)
# A speaker's name opening a turn; Postgres reads the same (`recall.textquery.speakers`).
_SPEAKER = re.compile(r"^([^\W\d_](?:[^\W\d_]|[.'-]){0,30}):\s")
# Words a turn opens with as a label, not a speaker's name ("Update: I moved to Berlin").
_LABELS = word_set(
    "note notes update reminder todo edit ps fyi btw question answer summary tip warning "
    "important re subject step example result error status agenda goal idea problem issue fix "
    "reason context background correction addendum ok okay well so also quick"
)
_CLAUSE_BREAK = re.compile(
    r";\s+|,?\s+(?:and|but|also|plus)\s+(?=(?:i|i'm|i've|i'll|my|we|we're|we'll|let's)\b)",
    re.IGNORECASE,
)
_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"'})

NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a dozen": 12,
}
NUMBER = r"(?:\d{1,3}|" + "|".join(NUMBER_WORDS) + r")"

MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december"]  # fmt: skip
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
MONTH_PATTERN = (  # a month's name or its abbreviation, as a regex alternation
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_MONTH_ABBR = {m[:3]: i for i, m in enumerate(MONTHS, start=1)} | {"sept": 9}
_WEEKDAY = f"(?:{'|'.join(WEEKDAYS)})"
_MONTH = f"(?:{MONTH_PATTERN})"


def month_number(word: str) -> int:
    """1-12 for a word `MONTH_PATTERN` matches."""
    return _MONTH_ABBR[word.lower()[:4] if word.lower().startswith("sept") else word.lower()[:3]]


_DAYPART = r"(?:\s+(?:morning|afternoon|evening|night))?"
_CLOCK = r"\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)|\d{1,2}:\d{2}|noon|midnight"
TIME_EXPRESSION = re.compile(
    "|".join(
        (
            rf"\b(?:on\s+|this\s+|next\s+|by\s+|until\s+)?{_WEEKDAY}{_DAYPART}\b",
            rf"\b(?:tomorrow|tonight|today){_DAYPART}\b",
            r"\b(?:this|next)\s+(?:morning|afternoon|evening|weekend|week|month|year)\b",
            r"\b(?:by\s+)?(?:the\s+)?end\s+of\s+(?:the\s+)?(?:day|week|month)\b",
            rf"\b(?:at|by|around|before|after|from)\s+(?:{_CLOCK})",
            rf"\b(?:{_CLOCK})",
            rf"\b(?:in|within)\s+(?:{NUMBER}|a|an|the)\s+(?:minutes?|hours?|days?|weeks?|months?)\b",
            rf"\b(?:on\s+)?{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b",
            rf"\b(?:on\s+)?(?:the\s+)?\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b",
            r"\b\d{4}-\d{2}-\d{2}\b",
        )
    ),
    re.IGNORECASE,
)

# First-person → third-person rewrites, applied in order (contractions before bare "I").
_THIRD_PERSON = [
    (re.compile(r"\bI'm\b|\bI am\b"), "the user is"),
    (re.compile(r"\bI've\b|\bI have\b"), "the user has"),
    (re.compile(r"\bI'll\b|\bI will\b"), "the user will"),
    (re.compile(r"\bI'd\b"), "the user would"),
    (re.compile(r"\bI was\b"), "the user was"),
    (re.compile(r"\bI do\b"), "the user does"),
    (re.compile(r"\bI\b(?=\s+\w)"), "the user"),
    (re.compile(r"^my\b", re.IGNORECASE), "User's"),
    (re.compile(r"\bmyself\b", re.IGNORECASE), "themselves"),
    (re.compile(r"\bmy\b", re.IGNORECASE), "their"),
    (re.compile(r"\bmine\b", re.IGNORECASE), "theirs"),
    (re.compile(r"\bme\b", re.IGNORECASE), "them"),
]
_BARE_VERB = re.compile(r"\bthe user (\w+)")
_NO_AGREEMENT = word_set(
    "is has will would was does can could should must might may did had also really "
    "just never always still often"
)
# Irregular past forms: "the user went" stays as it is (regular ones end in -ed).
PAST_FORMS = word_set(
    """went was were had did got saw met came took made said told bought ran left gave found
    felt thought brought sent spent kept ate drank wrote began knew paid lost sat stood heard
    won wore slept drove flew broke chose forgot spoke woke became caught taught fell held
    built sold understood"""
)
_SECOND_PERSON = [
    (re.compile(r"\byou're\b|\byou are\b", re.IGNORECASE), "the user is"),
    (re.compile(r"\byour\b", re.IGNORECASE), "their"),
    (
        re.compile(
            r"\byou(?=\s+(?:have|are|need|should|can|will|want|were|had|must|might|could|"
            r"would|like)\b)",
            re.IGNORECASE,
        ),
        "they",
    ),
    (re.compile(r"\byourself\b", re.IGNORECASE), "themselves"),
    (re.compile(r"\byou\b", re.IGNORECASE), "them"),
]


def one_line(text: str) -> str:
    """`text` with every run of whitespace (newlines included) as one space: nothing a
    producer sends can start a line of its own where it is written."""
    return " ".join(text.split())


def clean(text: str) -> str:
    """Straighten quotes and collapse whitespace."""
    return one_line(text.translate(_QUOTES))


def normalize_for_key(text: str) -> str:
    """Lower-case, whitespace-collapsed form used for dedupe and idempotency keys."""
    return clean(text).lower()


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences on terminal punctuation and line breaks."""
    return [s for s in (clean(part) for part in _SENTENCE_END.split(text)) if s]


def channel_family(channel: str) -> str:
    """A channel's family: `discord:dm` and `Discord` are both `discord`."""
    return channel.split(":", 1)[0].strip().lower()


def speaker_of(content: str) -> str | None:
    """The name a turn opens with (`Caroline: …`, as a group transcript writes its turns),
    if it does; a label (`Note: …`, `Update: …`) is no name."""
    match = _SPEAKER.match(content)
    if match is None or not match.group(1)[0].isupper() or match.group(1).lower() in _LABELS:
        return None
    return match.group(1)


def split_clauses(sentence: str) -> list[str]:
    """Split a sentence where a new first-person clause starts ("…, and I live in Ohio")."""
    return [c for c in (part.strip() for part in _CLAUSE_BREAK.split(sentence)) if c]


def clip(text: str, limit: int) -> str:
    """Cut `text` to at most `limit` characters at a word boundary, marking the cut with '…'."""
    text = clean(text)
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:-")
    return cut + "…"


def strip_clause(text: str) -> str:
    """Trim surrounding whitespace and trailing punctuation from a captured clause."""
    return clean(text).strip(" \"'").rstrip(" .!?,;:").strip()


def capitalize_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _agree(match: re.Match[str]) -> str:
    verb = match.group(1)
    past = verb.lower() in PAST_FORMS or (verb.endswith("ed") and not verb.endswith("eed"))
    if verb.lower() in _NO_AGREEMENT or past:
        return match.group(0)
    if verb.endswith(("s", "sh", "ch", "x", "o")):
        return f"the user {verb}es"
    if re.search(r"[^aeiou]y$", verb):
        return f"the user {verb[:-1]}ies"
    return f"the user {verb}s"


def third_person(text: str) -> str:
    """Rewrite a first-person clause about the user in the third person ("User has …")."""
    for pattern, replacement in _THIRD_PERSON:
        text = pattern.sub(replacement, text)
    text = _BARE_VERB.sub(_agree, text)
    return "User" + text[len("the user") :] if text.startswith("the user") else text


def second_to_third(text: str) -> str:
    """Rewrite what an assistant says to the user ("remind you to call your mom") in the
    third person ("remind them to call their mom")."""
    for pattern, replacement in _SECOND_PERSON:
        text = pattern.sub(replacement, text)
    return text


def snake(text: str) -> str:
    """`"Font Size!"` → `font_size`."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def parse_number(token: str) -> int | None:
    """`"4"` or `"four"` → 4; anything else → None."""
    token = token.strip().lower()
    if token.isdigit():
        return int(token)
    return NUMBER_WORDS.get(token)


def find_time_expression(text: str) -> str | None:
    """All time phrases in `text`, in order, joined: "tomorrow at 3pm", "on Tuesday"."""
    found = [m.group(0).strip() for m in TIME_EXPRESSION.finditer(text)]
    return " ".join(found) if found else None
