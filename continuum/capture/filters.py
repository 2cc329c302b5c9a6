"""Cheap filters in front of key-moment detection (R63, R29): tool output, heartbeats,
pasted code/logs/JSON/web pages and small talk never become memories; short messages
are only worth keeping for sentiment or an acknowledgment."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from continuum.domain.memory import CaptureTurn, Sentiment
from continuum.domain.text import clean, word_set

SHORT_MESSAGE_CHARS = 50
MAX_PROSE_CHARS = 1500  # longer "prose" is a pasted article, not conversation
SkipReason = Literal["tool_output", "heartbeat", "pasted_content", "small_talk"]
ShortSignal = Literal["sentiment", "acknowledgment"]

_HEARTBEAT_MARKER = re.compile(r"\bHEARTBEAT(?:_OK|\.md)?\b|\bNO_REPLY\b")
_HEARTBEAT_ONLY = re.compile(r"^\s*\[?(?:heartbeat|ping|pong)\]?[\s.!]*$", re.IGNORECASE)
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_URL = re.compile(r"https?://\S+")
_HTML_TAG = re.compile(r"</?(?:html|head|body|div|span|p|a|ul|li|script|style|meta|table|h\d)\b")
_NON_PROSE_LINE = re.compile(
    r"""^(?:\s{4}|\t)                         # indented code or log continuation
    |^\s*(?:File\ "|at\ [\w.$<>]+\(|Traceback\ \(most\ recent
      |[\w.]+(?:Error|Exception|Warning)(?::|$)
      |[{}\[\]],?\s*$|"[^"]+"\s*:
      |<[a-zA-Z!/][^>]*>
      |(?:def|class|import|from|return|const|let|var|function|SELECT|INSERT|UPDATE)\s.*[;:(){}=]
      |\$\ |>>>\ |\#\ |https?://\S+\s*$)""",
    re.VERBOSE,
)
_SMALL_TALK_WORDS = word_set(
    """
    hi hello hey yo hiya morning evening afternoon night good gn gm there all everyone
    thanks thank thx ty you u so much a lot again too very ok okay k kk sure yes yeah yep yup
    no nope nah bye goodbye see ya cya later cool nice great awesome perfect fine alright
    right got it lol haha hah hmm hm mhm wow oh ah um uh oops welcome how are doing what's
    up sup np noted
    """
)
_ACKNOWLEDGMENT = re.compile(
    r"\b(?:let'?s do (?:it|that|this)|go ahead|go for it|sounds good|sounds like a plan|"
    r"works for me|that works|agreed|deal|ship it|approved|make it so|do it|i'?m in)\b",
    re.IGNORECASE,
)
_URGENT = re.compile(
    r"\b(?:urgent(?:ly)?|asap|emergency|immediately|right now|right away|as soon as possible|"
    r"critical|(?:prod(?:uction)?|site|server) is down)\b",
    re.IGNORECASE,
)
_FRUSTRATED = re.compile(
    r"\b(?:frustrat\w*|annoy\w*|ugh+|argh+|fed up|sick of|tired of|hate (?:this|it|that)|"
    r"(?:does ?n[o']t|not) work(?:ing)?|still broken|broken again|wtf|useless|ridiculous|"
    r"give up|not (?:so |that |very )?(?:great|good|helpful))\b",
    re.IGNORECASE,
)
_POSITIVE = re.compile(
    r"\b(?:great|awesome|amazing|perfect|excellent|wonderful|fantastic|brilliant|helpful|"
    r"love (?:it|this|that)|thank you so much|thanks so much|works now|that worked|"
    r"nice work|well done|glad|happy)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Triage:
    """What the filters made of a turn: the prose left to analyse, or why it is skipped."""

    prose: str
    skip_reason: SkipReason | None = None

    @property
    def is_short(self) -> bool:
        return len(self.prose) < SHORT_MESSAGE_CHARS


def detect_sentiment(text: str) -> Sentiment:
    """Lexicon sentiment: urgent beats frustrated beats positive; otherwise neutral."""
    if _URGENT.search(text):
        return "urgent"
    if _FRUSTRATED.search(text):
        return "frustrated"
    if _POSITIVE.search(text):
        return "positive"
    return "neutral"


def short_signal(text: str) -> ShortSignal | None:
    """Why a short message is still worth a memory (R63): sentiment or acknowledgment."""
    if detect_sentiment(text) != "neutral":
        return "sentiment"
    if _ACKNOWLEDGMENT.search(text):
        return "acknowledgment"
    return None


def is_small_talk(text: str) -> bool:
    """Greetings, thanks and bare acknowledgments ("hi", "ok", "thanks!")."""
    words = re.findall(r"[a-z']+", text.lower())
    return all(w in _SMALL_TALK_WORDS for w in words)


def _is_json(text: str) -> bool:
    if not text.startswith(("{", "[")):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def strip_pasted(text: str) -> str:
    """The conversational prose of `text` without code fences, logs, stack traces, JSON,
    HTML or URL lists; empty if what is left looks like a pasted document."""
    stripped = text.strip()
    if _is_json(stripped) or len(_HTML_TAG.findall(stripped)) >= 2:
        return ""
    without_fences = _FENCE.sub("\n", stripped)
    lines = (clean(ln) for ln in without_fences.splitlines() if not _NON_PROSE_LINE.search(ln))
    prose = "\n".join(ln for ln in lines if ln)
    if len(prose) > MAX_PROSE_CHARS or len(_URL.findall(prose)) >= 2:
        return ""
    return prose


def triage(turn: CaptureTurn) -> Triage:
    """Apply the noise filters to one turn."""
    if turn.source == "tool":
        return Triage("", "tool_output")
    if _HEARTBEAT_MARKER.search(turn.content) or _HEARTBEAT_ONLY.match(turn.content):
        return Triage("", "heartbeat")
    prose = strip_pasted(turn.content)
    if not prose:
        return Triage("", "pasted_content")
    if is_small_talk(prose):
        return Triage(prose, "small_talk")
    return Triage(prose)
