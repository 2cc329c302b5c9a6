"""Making text storable: Postgres `text` refuses NUL characters and `jsonb` refuses
`\\u0000` and unpaired surrogates, all of which real transcripts and buggy producers send.
Transcript text is cleaned (`clean_*`); a dead letter keeps what was sent, escaped."""

from __future__ import annotations

import json
import math
import re
from typing import Any

# What Postgres refuses in text: NUL and unpaired UTF-16 surrogates (producers refuse it too).
UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")
MAX_DEPTH = 64  # deeper parts of an escaped value are kept as their repr
# `json.dumps` with arguments builds an encoder per call; a backfill calls it per message.
_dumps = json.JSONEncoder(ensure_ascii=False, default=str).encode


def clean_text(value: str) -> str:
    """Text Postgres accepts: NUL characters dropped, lone surrogates replaced by `?`."""
    if "\x00" in value:
        value = value.replace("\x00", "")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            value = value.encode("utf-8", "replace").decode("utf-8")
    return value


def clean_json(value: Any) -> Any:
    """`value` with every string (keys included) passed through `clean_text`."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(str(k)): clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_json(v) for v in value]
    return value


def json_text(value: dict[str, Any]) -> str:
    """JSON text for a `jsonb` column, cleaned only when it needs to be (the common case
    costs one `dumps`)."""
    dumped = _dumps(value)
    if "\\u0000" in dumped or clean_text(dumped) is not dumped:
        dumped = _dumps(clean_json(value))
    return dumped


def escape_text(value: str) -> str:
    """`value` with NUL characters and unpaired surrogates written as escapes (`\\x00`)."""
    if not UNSTORABLE.search(value):
        return value
    return UNSTORABLE.sub(lambda match: ascii(match.group())[1:-1], value)


def escaped_json(value: Any, depth: int = 0) -> Any:
    """`value` in a form `jsonb` accepts with nothing dropped: refused text escaped, numbers
    JSON cannot hold as text, other types and nesting past MAX_DEPTH as their reprs."""
    if isinstance(value, str):
        return escape_text(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if depth >= MAX_DEPTH:
        return escape_text(repr(value)[:2000])
    if isinstance(value, dict):
        return {escape_text(str(key)): escaped_json(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [escaped_json(item, depth + 1) for item in value]
    return escape_text(repr(value)[:2000])
