"""Cheap topic extraction: stop-word filtered keywords, a synonym map, topic slugs,
technology categories, entity / project / person names, and the noun phrases a session
was about, weighted against the tenant's own vocabulary."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from continuum.domain.text import clean, snake, split_sentences, word_set

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


def topic_tags(topics: Iterable[str]) -> list[str]:
    """The `topic:<slug>` tags of a summary's topics, each slug once, in order."""
    return list(dict.fromkeys(f"topic:{topic_slug(topic)}" for topic in topics))


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


# --- session topics -----------------------------------------------------------------------
# What a conversation was about, as a reader would put it: noun phrases and names, weighted
# against the tenant's own vocabulary so words it uses everywhere ("garden" for a gardener,
# the assistant's name) rank below what set this conversation apart. No tagger: a phrase is
# a run of content words, and the words around it tell verbs, adjectives and fillers apart.

FILLER = word_set(
    """
    says said saying tells call calls called calling comes coming came come goes went keep
    keeps kept looks looking seem seems seemed sounds sounded feel feels felt happen happens
    happened works worked start starts started stop stops find finds found give gives
    gave take takes took put puts bring brings brought send sends sent check checks wait waits
    waiting hope hoped mean means meant guess wish help helps turn turns leave left hear heard
    short long big small little large huge tiny nice fine easy hard high low lower higher
    early late whole same different important possible ready happy sad free busy full empty
    cheap cheaper expensive sure true real simple quick slow slower fast faster loud quiet
    tall sore lovely wonderful awful terrible annoying interesting hot cold warm main own
    half first second third last least less more most fewer enough several various every
    alone together again ago away back soon later often sometimes usually twice once
    yet though although however instead else almost quite rather pretty kind sort bit way
    ouch wow oh ah hmm uh um dear please sorry perfect fantastic awesome cool fun funny
    three four five six seven eight nine ten eleven twelve twenty thirty forty fifty hundred
    thousand million dozen zero none nothing everything everyone someone anyone nobody
    including regarding according worse worst consider fix buy write prepare cancel remove
    add confirm include includes explain runs hurting understood alright set january
    february march april june july august september october november december
    """
)
_GREETINGS = word_set("hi hello hey morning good evening afternoon thanks thank dear bye night")
_VERB_BEFORE = word_set(
    "i we you they he she it can could will would should must might shall 'll 'd to don't "
    "didn't can't won't let's lets"
)
_VERB_AFTER = word_set("the a an my your his our their its it them him me us whether")
_GERUND_AFTER = word_set("before after without while since by")  # "before signing"
_BE = word_set("am is are was were be been being 'm 're 's it's that's i'm we're they're")
_NOUNS_IN_LY = word_set("family supply reply italy july assembly rally anomaly belly jelly ally")
_TOKEN = re.compile(
    r"\b(?:Dr|Mr|Mrs|Ms|St)\.|[A-Za-z0-9][\w'+#-]*[\w+#]|[A-Za-z0-9]|[^\sA-Za-z0-9]"
)
_MAX_PHRASE = 3
_NAME_BOOST = 1.3


def lemma(word: str) -> str:
    """The counting form of a word: canonical alias, no possessive, singular."""
    word = canonical(word.lower().removesuffix("'s"))
    if len(word) > 3 and not word.endswith(("ss", "us", "is")):
        if word.endswith("ies"):
            return word[:-3] + "y"
        if word.endswith(("sses", "shes", "ches", "xes")):
            return word[:-2]
        if word.endswith("s"):
            return word[:-1]
    return word


def _is_filler(word: str) -> bool:
    return (
        word in STOP_WORDS
        or lemma(word) in STOP_WORDS
        or word in FILLER
        or len(word) < 2
        or bool(_NUMERIC.match(word))
        or word.endswith(("n't", "'ve", "'ll", "'re", "'d", "'m"))
        or (word.endswith("ly") and len(word) > 4 and word not in _NOUNS_IN_LY)
        or (word.endswith("ed") and not word.endswith("eed") and len(word) > 4)
    )


def noun_phrases(text: str) -> list[list[str]]:
    """Runs of content words of `text` (at most three, the last three of a longer run), as
    written. A word right after a subject, modal or "to", right before an article or
    object pronoun, or an -ing word right after "before"/"after"…, is read as a verb; right
    after a form of "be", as an adjective; a name right after a greeting is the person
    addressed. Names mid-sentence always count."""
    phrases: list[list[str]] = []
    for sentence in split_sentences(clean(text)):
        tokens = _TOKEN.findall(sentence)
        run: list[str] = []
        greeting = True  # still in the sentence's opening greeting ("Morning Pearl")
        for i, token in enumerate(tokens):
            word = token.lower()
            before = tokens[i - 1].lower() if i else ""
            after = tokens[i + 1].lower() if i + 1 < len(tokens) else ""
            name = (
                token[0].isupper()
                and i > 0
                and token not in _NOT_NAMES
                and word not in FILLER
                and lemma(word) not in STOP_WORDS
            )
            vocative = name and greeting
            greeting = greeting and (word in _GREETINGS or not token[0].isalnum())
            verb = not name and (
                before in _VERB_BEFORE
                or after in _VERB_AFTER
                or (before in _BE and not run)
                or (before in _GERUND_AFTER and word.endswith("ing"))
            )
            idiom = before == "of" and word == "course"
            skip = vocative or verb or idiom or (_is_filler(word) and not name)
            if not token[0].isalnum() or skip:
                if run:
                    phrases.append(run[-_MAX_PHRASE:])
                run = []
                continue
            run.append(token.removesuffix("'s") if name else word)
        if run:
            phrases.append(run[-_MAX_PHRASE:])
    return phrases


def content_lemmas(text: str) -> set[str]:
    """The counting forms of the content words of `text`'s noun phrases."""
    return {lemma(word) for phrase in noun_phrases(text) for word in phrase}


class Vocabulary:
    """How many of a tenant's recent turns use each word (document frequency): a word the
    tenant uses in many turns says little about any one conversation. Every word of a turn
    is counted (no phrase reading: it only has to be cheap and cover the nouns)."""

    def __init__(self, texts: Iterable[str] = ()) -> None:
        self.documents = 0
        self.frequency: Counter[str] = Counter()
        for text in texts:
            self.documents += 1
            self.frequency.update({lemma(word) for word in set(_WORD.findall(clean(text).lower()))})

    def weight(self, word: str) -> float:
        """Smoothed inverse document frequency; 1 for every word when empty."""
        if not self.documents:
            return 1.0
        return math.log((self.documents + 1) / (self.frequency[word] + 1)) + 1


def session_topics(
    texts: Sequence[tuple[str, float]], limit: int, vocabulary: Vocabulary | None = None
) -> list[str]:
    """Up to `limit` phrases the weighted `texts` are about, most telling first: each word
    scores its weighted count times its weight in `vocabulary`; a phrase, the sum of its
    words; a phrase sharing a word with a better one is left out. Each phrase is shown as
    most often written."""
    vocabulary = vocabulary or Vocabulary()
    counts: dict[str, float] = {}
    names: set[str] = set()
    written: dict[tuple[str, ...], Counter[str]] = {}
    for text, weight in texts:
        for phrase in noun_phrases(text):
            key = tuple(lemma(w) for w in phrase)
            for word, key_word in zip(phrase, key, strict=True):
                counts[key_word] = counts.get(key_word, 0.0) + weight
                if word[0].isupper():
                    names.add(key_word)
            written.setdefault(key, Counter())[" ".join(phrase)] += 1

    def score(key: tuple[str, ...]) -> float:
        return sum(
            counts[w] * vocabulary.weight(w) * (_NAME_BOOST if w in names else 1) for w in key
        )

    chosen: list[tuple[str, ...]] = []
    for key in sorted(written, key=score, reverse=True):
        if len(chosen) == limit:
            break
        if not any(set(key) & set(other) for other in chosen):
            chosen.append(key)
    return [written[key].most_common(1)[0][0] for key in chosen]
