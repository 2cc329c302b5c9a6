"""Cheap topic extraction: stop-word filtered keywords, a synonym map, topic slugs,
technology categories, and entity / project / person names."""

from __future__ import annotations

import re
from collections import Counter

from continuum.capture.text import clean, snake, word_set

STOP_WORDS = word_set(
    """
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing done down during
    each few for from further had has have having he her here hers herself him himself
    his how i if in into is it its itself just me more most my myself no nor not now of
    off on once only or other our ours ourselves out over own same she should so some
    such than that the their theirs them themselves then there these they this those
    through to too under until up very was we were what when where which while who whom
    why will with would you your yours yourself yourselves i'm i've i'll i'd we're we'll
    we've let's it's that's don't can't won't isn't aren't didn't doesn't wasn't there's
    here's what's you're you'll they're ok okay yes yeah yep no nope hi hello hey thanks
    thank please sure maybe really actually just still already even well lot lots much
    many thing things stuff something anything get got getting make made go going gone
    goes use using used want wanted need needs needed like likes love think thought know
    knew see say says said tell tells told ask asks asked talk talked discuss let lets try
    trying plan planning quick
    decide decided decision user today tomorrow tonight yesterday week weekend month
    year day morning afternoon evening night next last time monday tuesday wednesday
    thursday friday saturday sunday am pm remind reminder prefer prefers preferred
    always never new old good great bad better best right one two
    especially probably definitely basically totally
    """
)

# Aliases → canonical word (used in slugs and keyword counts).
SYNONYMS = {
    "db": "database",
    "dbs": "database",
    "databases": "database",
    "postgres": "database",
    "postgresql": "database",
    "pg": "database",
    "psql": "database",
    "k8s": "kubernetes",
    "kube": "kubernetes",
    "doc": "doctor",
    "doctor's": "doctor",
    "doctors": "doctor",
    "dr": "doctor",
    "gp": "doctor",
    "appt": "appointment",
    "appointments": "appointment",
    "grandkids": "grandchildren",
    "kids": "children",
    "js": "javascript",
    "ts": "typescript",
    "py": "python",
    "repo": "repository",
    "repos": "repository",
    "meds": "medication",
    "medications": "medication",
    "pills": "medication",
    "migrations": "migration",
    "deploy": "deployment",
    "deploys": "deployment",
}

# Technology / thing → category, for claim predicates such as `uses_database`.
CATEGORIES = {
    "database": "database",
    "mysql": "database",
    "sqlite": "database",
    "mongodb": "database",
    "mongo": "database",
    "redis": "cache",
    "memcached": "cache",
    "cache": "cache",
    "celery": "task_queue",
    "rabbitmq": "message_broker",
    "kafka": "message_broker",
    "python": "language",
    "rust": "language",
    "golang": "language",
    "javascript": "language",
    "typescript": "language",
    "java": "language",
    "english": "language",
    "spanish": "language",
    "german": "language",
    "french": "language",
    "react": "frontend_framework",
    "vue": "frontend_framework",
    "svelte": "frontend_framework",
    "django": "web_framework",
    "fastapi": "web_framework",
    "flask": "web_framework",
    "kubernetes": "deployment",
    "docker": "deployment",
    "aws": "cloud",
    "gcp": "cloud",
    "azure": "cloud",
    "tea": "drink",
    "coffee": "drink",
}

_WORD = re.compile(r"[a-z0-9][a-z0-9'+#.-]*[a-z0-9+#]|[a-z0-9]")
_NUMERIC = re.compile(r"^\d[\d:.,]*(?:am|pm|%|st|nd|rd|th|s)?$")
_MENTION = re.compile(r"(?<![\w@])[@#][A-Za-z0-9_][\w-]*")
_CAPITALIZED = re.compile(r"\b[A-Z][a-z]+(?:[ -][A-Z][a-z]+)*\b")
_PROJECT = re.compile(
    r"\bproject\s+(?P<a>[A-Z][\w-]*)|\bthe\s+(?P<b>[A-Z][\w-]*)\s+project\b", re.IGNORECASE
)
RELATIONS = (
    "wife|husband|partner|daughter|son|granddaughter|grandson|grandchild|mother|mom|mum|"
    "father|dad|brother|sister|friend|doctor|neighbor|neighbour|boss|colleague|dog|cat"
)
_PERSON_CONTEXT = re.compile(
    rf"\b(?:{RELATIONS}|call|calling|called|meet|meeting|visit|visiting|ask|tell|email|text|"
    r"see|named|(?:meeting|lunch|dinner|coffee|call|chat|talk|date|dance) with)\s+"
    r"(?P<name>[A-Z][a-z]+(?: [A-Z][a-z]+)?)\b"
)
_NOT_NAMES = word_set(
    """
    I The A An And But Or So If Then This That These Those It We You They He She Ok Okay
    Yes No Hi Hello Hey Thanks Please Monday Tuesday Wednesday Thursday Friday Saturday
    Sunday January February March April May June July August September October November
    December Today Tomorrow Tonight Actually Also Maybe Sure Great Let Let's Dr Mr Mrs
    Ms
    """
)


def canonical(word: str) -> str:
    """Map an alias to its canonical word (`db` → `database`)."""
    word = word.lower().strip("'.-")
    return SYNONYMS.get(word, word)


def keywords(text: str) -> list[str]:
    """Canonical content words of `text`, in order of appearance (repeats kept)."""
    words = (canonical(w) for w in _WORD.findall(clean(text).lower()))
    return [w for w in words if w not in STOP_WORDS and len(w) > 1 and not _NUMERIC.match(w)]


def top_keywords(text: str, limit: int) -> list[str]:
    """The `limit` most frequent keywords (ties by first appearance), in order of appearance."""
    words = keywords(text)
    counts = Counter(words)
    first = {w: i for i, w in reversed(list(enumerate(words)))}
    best = sorted(counts, key=lambda w: (-counts[w], first[w]))[:limit]
    return sorted(best, key=first.__getitem__)


def topic_slug(text: str, max_words: int = 3) -> str:
    """`"Let's plan the Postgres migration"` → `database-migration`; `general` if no keywords."""
    words = top_keywords(text, max_words)
    return "-".join(re.sub(r"[^a-z0-9]+", "-", w).strip("-") for w in words) or "general"


def category_of(text: str) -> str | None:
    """Category of the first known technology/thing mentioned (`Postgres` → `database`)."""
    for word in keywords(text):
        if word in CATEGORIES:
            return CATEGORIES[word]
    return None


def extract_projects(text: str) -> list[str]:
    """Project names from "project Atlas" / "the Atlas project", as lower-case slugs."""
    names = (m.group("a") or m.group("b") for m in _PROJECT.finditer(text))
    found = [snake(n) for n in names if n[0].isupper() and n not in _NOT_NAMES]
    return list(dict.fromkeys(found))


def extract_people(text: str) -> list[str]:
    """Names that follow a relation or social verb ("my daughter Sarah", "call Tom")."""
    found = [m.group("name") for m in _PERSON_CONTEXT.finditer(text)]
    return list(dict.fromkeys(n for n in found if n.split()[0] not in _NOT_NAMES))


def extract_entities(text: str) -> list[str]:
    """@mentions, #channels and capitalized names. A single capitalized word that opens a
    sentence is skipped: it is more often an ordinary word than a name."""
    names = []
    for m in _CAPITALIZED.finditer(text):
        opens_sentence = not text[: m.start()].strip() or text[: m.start()].rstrip()[-1] in ".!?:"
        if m.group().split()[0] in _NOT_NAMES or (opens_sentence and " " not in m.group()):
            continue
        names.append(m.group())
    return list(dict.fromkeys([*_MENTION.findall(text), *names]))
