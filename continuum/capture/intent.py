"""A turn's intent as the transcript buffer records it: question, request, statement or
response (a cheap heuristic, R44)."""

from __future__ import annotations

import re

_REQUEST = re.compile(r"^(please|can you|could you|would you|remind me|let's|tell me)\b", re.I)


def classify_intent(role: str, text: str) -> str:
    if role == "assistant":
        return "response"
    stripped = text.strip()
    if stripped.endswith("?"):
        return "question"
    return "request" if _REQUEST.match(stripped) else "statement"
