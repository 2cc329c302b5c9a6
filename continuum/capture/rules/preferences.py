"""Preference rules: settings, favourites, preferences, likes and dislikes, and standing
rules for the assistant ("always ...", "never ...", "from now on ...").
"""

from __future__ import annotations

import re

from continuum.capture.rules.clauses import (
    Moment,
    head_words,
    is_question,
    lead_stripped,
    rx,
    trim_clause,
    user_sentence,
)
from continuum.capture.topics import category_of, keywords
from continuum.domain.text import snake, third_person

_PRONOUN_START = rx(
    r"^(?:it|that|this|them|you|him|her|those|these|when|how|what|we|they|he|she|i)\b"
)
_SETTING_KEYS = {
    "volume": "volume_level",
    "brightness": "brightness_level",
    "font size": "font_size",
    "text size": "font_size",
    "speaking speed": "speech_rate",
    "speech rate": "speech_rate",
    "speed": "speech_rate",
}
_SETTING = rx(
    r"\b(?:i (?:like|prefer|want|need)|i'?d like|keep|always (?:keep|set))\b[^.]*?"
    rf"\b(?P<setting>{'|'.join(_SETTING_KEYS)})\b[^.]*?\b(?:at|to|on|around)\s+"
    r"(?P<v>\d{1,3}\s*%|\d{1,3}|low|medium|high|max(?:imum)?|loud|quiet|slow|fast)"
)
_FAVORITE = rx(r"\bmy fav(?:ou|o)rite (?P<thing>[a-z ]{2,30}?) (?:is|are) (?P<v>[^,;]+)")
_PREFER = rx(
    r"\bi(?:'d| would)? (?:really |much |generally |usually |definitely )?prefer (?P<obj>.+)"
)
_PREFER_SPLIT = rx(r"\s+(?:over|to|rather than|instead of)\s+")
_LIKE = rx(
    r"\bi (?:really |absolutely |just |honestly |kind of |do )?(?P<verb>love|like|enjoy|hate|"
    r"dislike|can'?t stand|cannot stand|don'?t like|do not like|don'?t enjoy)\s+(?P<obj>.+)"
)
_LIKE_VALUES = {"love": "loves", "like": "likes", "enjoy": "likes", "hate": "hates"}
_RULE = rx(
    r"^(?:please\s+)?(?P<mode>always|never)\s+(?P<obj>.+)|^please\s+(?P<dont>don'?t|do not)\s+"
    r"(?P<obj2>.+)|^(?:don'?t|do not) ever\s+(?P<obj3>.+)|\bfrom now on,?\s+(?P<obj4>.+)"
)
_NOT_RULES = rx(r"^(?:mind|forget|worry|bother|know)\b")


def _setting(sentence: str) -> Moment | None:
    m = _SETTING.search(sentence)
    if not m:
        return None
    setting, value = m.group("setting").lower(), re.sub(r"\s+", "", m.group("v").lower())
    return Moment(
        "preference",
        f"User prefers the {setting} at {value}",
        7,
        key=_SETTING_KEYS[setting],
        claim=(_SETTING_KEYS[setting], value),
        topic_text=setting,
    )


def _favorite(sentence: str) -> Moment | None:
    m = _FAVORITE.search(sentence)
    if not m:
        return None
    key = f"favorite_{snake(m.group('thing'))}"
    value = trim_clause(m.group("v"))
    return Moment(
        "preference",
        user_sentence(sentence),
        6,
        key=key,
        claim=(key, value),
        topic_text=m.group("thing"),
    )


def _prefer(sentence: str) -> Moment | None:
    m = _PREFER.search(sentence)
    if not m:
        return None
    obj = trim_clause(m.group("obj"))
    choice = _PREFER_SPLIT.split(obj, maxsplit=1)[0]
    head = category_of(choice) or head_words(choice)
    if not head:
        return None
    content = f"User prefers {third_person(obj)}"
    key = f"preferred_{head}"
    return Moment("preference", content, 7, key=key, claim=(key, choice), topic_text=choice)


def _like(sentence: str) -> Moment | None:
    m = _LIKE.search(sentence)
    if not m or _PRONOUN_START.match(m.group("obj")):
        return None
    obj = trim_clause(m.group("obj"))
    head = head_words(obj)
    if not head:
        return None
    value = _LIKE_VALUES.get(m.group("verb").lower(), "dislikes")
    content = f"User {value} {third_person(obj)}"
    key = f"likes_{head}"
    return Moment("preference", content, 6, key=key, claim=(key, value), topic_text=obj)


def _rule(sentence: str) -> Moment | None:
    m = _RULE.search(lead_stripped(sentence))
    if not m:
        return None
    obj = trim_clause(
        next(g for g in (m.group("obj"), m.group("obj2"), m.group("obj3"), m.group("obj4")) if g)
    )
    if _NOT_RULES.match(obj) or not keywords(obj):
        return None
    never = (m.group("mode") or "").lower() == "never" or bool(m.group("dont"))
    mode = "never" if never else "always"
    obj = re.sub(r"\byour\b", "its", obj, flags=re.IGNORECASE)
    content = f"User wants the assistant to {mode} {third_person(obj)}"
    key = f"rule_{head_words(obj, 3)}"
    return Moment("preference", content, 8, key=key, claim=(key, f"{mode} {obj}"), topic_text=obj)


def preference(sentence: str) -> Moment | None:
    if is_question(sentence):
        return None
    for rule in (_setting, _favorite, _prefer, _rule, _like):
        moment = rule(sentence)
        if moment:
            return moment
    return None
