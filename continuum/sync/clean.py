"""Making transcript text storable: Postgres `text` refuses NUL characters and `jsonb`
refuses `\\u0000` and unpaired surrogates, all of which real transcripts can contain."""

from __future__ import annotations

import json
from typing import Any


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
    dumped = json.dumps(value, ensure_ascii=False, default=str)
    if "\\u0000" in dumped or clean_text(dumped) is not dumped:
        dumped = json.dumps(clean_json(value), ensure_ascii=False, default=str)
    return dumped
