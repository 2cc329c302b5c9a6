"""Handoffs said in a turn (R5): "I'll continue on Discord", "let's pick this up in the
voice call", "continue this in telegram later" name the channel the user moves to. Pure and
deterministic; the ingest pipeline records what it finds (`continuum.ephemeral.handoff`).

Precision over recall: a sentence announces a handoff only when it says, in the first person
or as "let's" (or as an imperative opening the sentence or a clause: "continue … on X",
"I have to go, talk later on Discord"), that the conversation continues,
moves or is picked up on a known channel. Questions, conditions and hypotheticals ("if",
"maybe", "should we …"), negations and channels that are not in `CHANNEL_WORDS` announce
nothing, and neither does a sentence naming the channel the turn is already on.

`mentioned_channel` is the wide net beside it: a turn naming any other known channel. With
an LLM configured, such turns are also asked about (`continuum.pipeline.handoffs`), which
finds the phrasings the rule leaves out ("let's take this to Telegram").
"""

from __future__ import annotations

import re

from continuum.domain.text import channel_family, split_sentences

# The words a person uses for a channel → the channel's name in Continuum.
CHANNEL_WORDS: dict[str, str] = {
    "discord": "discord",
    "telegram": "telegram",
    "slack": "slack",
    "whatsapp": "whatsapp",
    "signal": "signal",
    "voice": "voice",
    "voice call": "voice",
    "voice chat": "voice",
    "claude code": "claude-code",
}

_WHO = r"(?:i'?ll|i will|i'?m going to|i am going to|i'?m gonna|let'?s|let us|we'?ll|we will)"
# "continue … on X"; "switch … to X" (only moving verbs take "to": "talk to X" is no move).
_ON = (
    r"(?:continue|carry on|keep going|resume|pick (?:this|it|that|things) (?:back )?up"
    r"|finish|take (?:this|it|that)|talk|chat)\b[\w' ]{0,30}?\b(?:on|in|over|via)"
)
_TO = r"(?:move|switch|head over|jump over)\b[\w' ]{0,30}?\bto"
CHANNELS: tuple[str, ...] = tuple(sorted(set(CHANNEL_WORDS.values())))
_CHANNEL = "|".join(sorted((re.escape(word) for word in CHANNEL_WORDS), key=len, reverse=True))
_MENTION = re.compile(rf"\b(?P<channel>{_CHANNEL})\b")
_ANNOUNCE = re.compile(
    rf"(?:^|[,;]\s*|\b{_WHO}\s+(?:just\s+|then\s+)?)(?:{_ON}|{_TO})"
    rf"\s+(?:the\s+|my\s+|our\s+)?(?P<channel>{_CHANNEL})\b"
)
_HEDGED = re.compile(
    r"\b(?:if|unless|maybe|perhaps|might|could|would|should|whether|not|never|no)\b|n't\b"
)


def handoff_target(content: str, channel: str) -> str | None:
    """The channel a turn on `channel` says the conversation moves to, or None."""
    here = channel_family(channel)
    for said in split_sentences(content.replace("’", "'")):
        sentence = said.lower()
        if sentence.endswith("?") or _HEDGED.search(sentence):
            continue
        found = _ANNOUNCE.search(sentence)
        if found is not None and CHANNEL_WORDS[found["channel"]] != here:
            return CHANNEL_WORDS[found["channel"]]
    return None


def mentioned_channel(content: str, channel: str) -> str | None:
    """The first known channel a turn on `channel` names other than its own, or None."""
    here = channel_family(channel)
    for found in _MENTION.finditer(content.replace("’", "'").lower()):
        if CHANNEL_WORDS[found["channel"]] != here:
            return CHANNEL_WORDS[found["channel"]]
    return None
