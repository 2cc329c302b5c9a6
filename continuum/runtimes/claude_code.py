"""Claude Code hooks: the command Claude Code runs at each hook event, fed the event's JSON
on stdin (`session_id`, `transcript_path`, `cwd`, `hook_event_name`, and per event `prompt`,
`source`, `trigger` or `reason`).

- `SessionStart` prints the context block as additional context for the session
  (`{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": ...}}`).
- `UserPromptSubmit` sends the user turn (the prompt).
- `Stop` sends the assistant turn: its text blocks since the last user prompt, read from the
  end of the session's transcript (`transcript_path`); its message id is the transcript
  entry's uuid, the one transcript sync gives it.
- `PreCompact` sends `pre_compaction`; `SessionEnd` sends `session_end` with its reason.

Events go through the local spool (`continuum.runtimes.spool`) and a background flush, so an
event hook costs one process start and a file write, and an unreachable broker delays events
instead of losing them. A hook never fails Claude Code: it always exits 0, and whatever goes
wrong is written to `<home>/hooks.log`.

The command line carries what `continuum hooks install` resolved from the configuration:
`python -m continuum.runtimes.claude_code --home H --namespace N [--user U] EVENT`. Only the
standard library loads for the event hooks; SessionStart loads the read plane. The Claude Code
plugin's hooks run `continuum claude-code hook EVENT` instead, which resolves the same values
when it runs (slower to start: the CLI and the configuration load first).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from continuum.runtimes import spool

CHANNEL = "claude-code"
EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd")
_TAIL_CHUNK = 256 * 1024
_TAIL_LIMIT = 16 * 1024 * 1024  # never read more than this of a transcript's end


class HookArgs:
    """The parsed command line: `--home H --namespace N [--user U] EVENT`."""

    def __init__(self, argv: list[str]) -> None:
        options: dict[str, str] = {}
        rest: list[str] = []
        items = iter(argv)
        for item in items:
            if item in ("--home", "--namespace", "--user"):
                options[item[2:]] = next(items)
            else:
                rest.append(item)
        if len(rest) != 1 or rest[0] not in EVENTS or "home" not in options:
            raise ValueError(f"usage: --home H --namespace N [--user U] {'|'.join(EVENTS)}")
        self.event: str = rest[0]
        self.home = Path(options["home"])
        self.namespace: str = options.get("namespace", CHANNEL)
        self.user: str | None = options.get("user")


def hook_argv(event: str, home: Path, namespace: str, user: str | None) -> list[str]:
    """The arguments `HookArgs` reads: what `continuum hooks install` writes after
    `python -m continuum.runtimes.claude_code`, and what `continuum claude-code hook` (the
    plugin's hooks) resolves from the configuration."""
    return ["--home", str(home.resolve()), "--namespace", namespace,
            *(["--user", user] if user else []), event]  # fmt: skip


def _event_id() -> str:
    """A random (version 4) UUID: the uuid module would add ~10 ms to every hook's start."""
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40
    raw[8] = raw[8] & 0x3F | 0x80
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _reverse_lines(path: Path) -> Iterator[bytes]:
    """The lines of `path`, last first, reading its end in chunks (at most _TAIL_LIMIT)."""
    with path.open("rb") as handle:
        position = handle.seek(0, os.SEEK_END)
        stop = max(0, position - _TAIL_LIMIT)
        partial = b""
        while position > stop:
            size = min(_TAIL_CHUNK, position - stop)
            position -= size
            handle.seek(position)
            lines = (handle.read(size) + partial).split(b"\n")
            partial = lines.pop(0)
            yield from reversed(lines)
        if stop == 0:
            yield partial


def _text(content: object) -> str:
    """The text of a message's content: a string, or its `text` blocks joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [block.get("text") for block in content if isinstance(block, dict)
             and block.get("type") == "text"]  # fmt: skip
    return "\n\n".join(part for part in parts if isinstance(part, str) and part.strip())


def last_assistant_turn(transcript: Path) -> tuple[str, str | None]:
    """(text, message id) of the assistant's answer to the last user prompt: its text blocks
    in order (tool calls and thinking left out), the id of the last one. ("", None) if none."""
    texts: list[str] = []
    message_id: str | None = None
    for raw in _reverse_lines(transcript):
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("isSidechain") is True:
            continue
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if entry.get("type") == "user" and _text(content) and entry.get("isMeta") is not True:
            break  # the prompt this answer answers (tool results carry no text blocks)
        if entry.get("type") == "assistant" and (text := _text(content)):
            texts.append(text)
            if message_id is None and isinstance(entry.get("uuid"), str):
                message_id = entry["uuid"]
    return "\n\n".join(reversed(texts)), message_id


def hook_event(args: HookArgs, payload: dict[str, Any]) -> dict[str, Any] | None:
    """The Continuum event for one Claude Code hook payload, or None when there is nothing to
    send (an empty prompt, a stop with no assistant text)."""
    now = _now()
    event: dict[str, Any] = {"event_id": _event_id(), "namespace": args.namespace,
                             "session_id": payload["session_id"], "channel": CHANNEL, "ts": now}  # fmt: skip
    if args.user:
        event["user_id"] = args.user
    metadata = {"cwd": payload["cwd"]} if isinstance(payload.get("cwd"), str) else {}
    if args.event == "UserPromptSubmit":
        prompt = payload.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return None
        return {**event, "kind": "turn", "role": "user", "content": prompt, "metadata": metadata}
    if args.event == "Stop":
        text, message_id = last_assistant_turn(Path(payload["transcript_path"]))
        if not text.strip():
            return None
        turn = {**event, "kind": "turn", "role": "assistant", "content": text,
                "metadata": metadata}  # fmt: skip
        return {**turn, "message_id": message_id} if message_id else turn
    if args.event == "PreCompact":
        return {**event, "kind": "pre_compaction", "compaction_id": event["event_id"]}
    reason = payload.get("reason")
    return {**event, "kind": "session_end", "ended_at": now,
            "reason": reason if isinstance(reason, str) else None}  # fmt: skip


def session_start(args: HookArgs) -> None:
    """Print the context block in SessionStart's output shape (nothing when it is empty)."""
    os.environ["CONTINUUM_HOME"] = str(args.home)
    from continuum.runtimes.context import session_context

    block = session_context(args.namespace, user_id=args.user, channel=CHANNEL)
    if block.strip():
        output = {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                         "additionalContext": block}}  # fmt: skip
        sys.stdout.write(json.dumps(output, ensure_ascii=False) + "\n")


def run(argv: list[str]) -> None:
    """One hook call; every failure is logged (to the home given, else the working
    directory's), never raised."""
    home = Path(".")
    try:
        args = HookArgs(argv)
        home = args.home
        payload = json.loads(sys.stdin.read())
        if args.event == "SessionStart":
            if spool.pending(home):
                spool.start_flush(home)
            session_start(args)
            return
        event = hook_event(args, payload)
        if event is not None:
            spool.write(home, event)
            spool.start_flush(home)
    except Exception:
        import traceback

        spool.log_error(home, f"claude-code hook {argv}:\n{traceback.format_exc()}")


if __name__ == "__main__":
    run(sys.argv[1:])
    sys.exit(0)
