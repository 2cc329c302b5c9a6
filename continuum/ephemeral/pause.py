"""Capture paused for one session (`continuum claude-code pause`, the Claude Code plugin's
`/continuum:pause`): the turns a runtime's hooks spool for a paused session are dropped when
the spool is flushed, never sent (`continuum.runtimes.spool`).

A pause is a window in Redis, `continuum:<ns>:capture-paused:<session>`: a hash from each
pause's start to its end (milliseconds; "" while it is still paused). A turn is judged by its
own time (`ts`), not by when its flush runs, so a turn said while paused stays unsent after a
resume, and one said before the pause is sent after it. The key lives PAUSE_TTL_S after the
last pause or resume of the session; it holds times only, no content.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from continuum.ephemeral.keys import key, ms
from continuum.redis_client import get_redis

PAUSE_TTL_S = 30 * 86400
_OPEN = ""

# Open a window at ARGV[1] unless one is open; returns 1 when it opened one.
_PAUSE = """
for _, finish in ipairs(redis.call('hvals', KEYS[1])) do
  if finish == '' then return 0 end
end
redis.call('hset', KEYS[1], ARGV[1], '')
redis.call('expire', KEYS[1], ARGV[2])
return 1
"""
# Close the open window at ARGV[1]; returns 1 when one was open.
_RESUME = """
local windows = redis.call('hgetall', KEYS[1])
for i = 1, #windows, 2 do
  if windows[i + 1] == '' then
    local finish = ARGV[1]
    if tonumber(finish) < tonumber(windows[i]) then finish = windows[i] end
    redis.call('hset', KEYS[1], windows[i], finish)
    redis.call('expire', KEYS[1], ARGV[2])
    return 1
  end
end
return 0
"""


def _key(namespace: str, session_id: str) -> str:
    return key(namespace, "capture-paused", session_id)


def pause(namespace: str, session_id: str, at: datetime | None = None) -> bool:
    """Pause capture of the session from `at` (default now); False if it already was."""
    when = ms(at or datetime.now(UTC))
    return bool(get_redis().eval(_PAUSE, 1, _key(namespace, session_id), when, PAUSE_TTL_S))


def resume(namespace: str, session_id: str, at: datetime | None = None) -> bool:
    """Capture the session again from `at` (default now); False if it was not paused."""
    when = ms(at or datetime.now(UTC))
    return bool(get_redis().eval(_RESUME, 1, _key(namespace, session_id), when, PAUSE_TTL_S))


def _windows(raw: dict[str, str]) -> list[tuple[int, float]]:
    return [(int(start), float(end) if end != _OPEN else float("inf"))
            for start, end in raw.items()]  # fmt: skip


def said_while_paused(
    turns: Iterable[tuple[str, str, datetime]],
) -> set[tuple[str, str, datetime]]:
    """Of `(namespace, session id, time)` turns, those said while their session was paused
    (one Redis round trip for all)."""
    turns = list(turns)
    sessions = sorted({(namespace, session) for namespace, session, _ in turns})
    if not sessions:
        return set()
    pipe = get_redis().pipeline(transaction=False)
    for namespace, session in sessions:
        pipe.hgetall(_key(namespace, session))
    windows = dict(zip(sessions, (_windows(raw) for raw in pipe.execute()), strict=True))
    return {
        (namespace, session, when)
        for namespace, session, when in turns
        if any(start <= ms(when) < end for start, end in windows[(namespace, session)])
    }
