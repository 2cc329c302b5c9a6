"""No credential reaches a log line of our servers. uvicorn's access log writes each
request's path with its query string, where a client may have put its bearer token
(`?token=ctm_...`); `continuum api` and `continuum mcp --http` configure uvicorn's logging
with `server_log_config()`, whose handlers (and the root logger's) redact every record first.
"""

from __future__ import annotations

import copy
import logging
import re
from typing import Any

from continuum.security.tokens import TOKEN_PREFIX

REDACTED = "[redacted]"
_SECRETS = (
    # A query or form parameter that names a credential: ?token=..., &api_key=...
    re.compile(
        r"(?<![A-Za-z0-9_])((?:access_|api_|auth_|bearer_|id_|refresh_)?(?:token|key|secret|"
        r"password|passwd|apikey|signature)=)[^&\s\"']+",
        re.IGNORECASE,
    ),
    re.compile(r"(\bBearer\s+)[^\s\"',;]+", re.IGNORECASE),  # an Authorization header value
    re.compile(rf"({re.escape(TOKEN_PREFIX)})[A-Za-z0-9_\-]+"),  # one of our tokens, anywhere
)


def redact(text: str) -> str:
    """`text` with every credential it holds replaced by [redacted]."""
    for pattern in _SECRETS:
        text = pattern.sub(rf"\g<1>{REDACTED}", text)
    return text


def _redacted(value: Any) -> Any:
    if isinstance(value, int | float) or value is None:
        return value
    text = str(value)
    cleaned = redact(text)
    return value if cleaned == text else cleaned


class RedactCredentials(logging.Filter):
    """Redacts a record's message and arguments in place (uvicorn's access formatter reads
    the arguments one by one, so they keep their places)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = _redacted(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_redacted(arg) for arg in record.args)
        elif isinstance(record.args, dict):
            record.args = {key: _redacted(arg) for key, arg in record.args.items()}
        return True


def server_log_config() -> dict[str, Any]:
    """uvicorn's logging configuration with every handler redacting, and the application's
    own warnings sent through the same (redacting) handler instead of Python's last resort."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["filters"] = {"redact_credentials": {"()": f"{__name__}.RedactCredentials"}}
    for handler in config["handlers"].values():
        handler["filters"] = ["redact_credentials"]
    config["root"] = {"handlers": ["default"], "level": "WARNING"}
    return config
