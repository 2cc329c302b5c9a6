"""Claude Code's settings files and our hook entries in them: `continuum hooks install
claude-code` merges one command per hook event into `hooks` (user: `~/.claude/settings.json`;
project: `DIR/.claude/settings.local.json`, the project file that is not committed, since the
command names this machine's Python and home) and `continuum hooks uninstall` takes out only
those entries. Installing twice changes nothing; any change keeps the previous file as
`<name>.bak`.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from continuum.runtimes.claude_code import EVENTS, hook_argv

HOOK_MODULE = "continuum.runtimes.claude_code"
_MARKER = f" -m {HOOK_MODULE} "
# seconds Claude Code gives a command before it stops waiting; ours return long before
_TIMEOUTS = {"SessionStart": 30}
_EVENT_TIMEOUT = 10


class SettingsError(ValueError):
    """The settings file cannot be read as a JSON object; it is left untouched."""


def settings_path(project: Path | None, user: bool) -> Path:
    """The user's settings file, or the project's local one (the current directory's if
    `project` is None)."""
    if user:
        return Path.home() / ".claude" / "settings.json"
    return (project or Path.cwd()).resolve() / ".claude" / "settings.local.json"


def hook_command(event: str, home: Path, namespace: str, user: str | None) -> str:
    """The shell command Claude Code runs for `event`."""
    return shlex.join([sys.executable, "-m", HOOK_MODULE, *hook_argv(event, home, namespace, user)])


def _is_ours(hook: object) -> bool:
    return isinstance(hook, dict) and _MARKER in str(hook.get("command", ""))


def _without_ours(settings: dict[str, Any]) -> dict[str, Any]:
    """`settings` with our hook entries removed, and the groups and events they leave empty."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return settings
    kept: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            kept[event] = groups
            continue
        left = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(inner, list) and any(_is_ours(hook) for hook in inner):
                inner = [hook for hook in inner if not _is_ours(hook)]
                if not inner:
                    continue
                group = {**group, "hooks": inner}
            left.append(group)
        if left:
            kept[event] = left
    result = {key: value for key, value in settings.items() if key != "hooks"}
    return {**result, "hooks": kept} if kept else result


def with_ours(settings: dict[str, Any], commands: dict[str, str]) -> dict[str, Any]:
    """`settings` with exactly our entries, one group per event in `commands`, after any
    hooks of others."""
    result = _without_ours(settings)
    hooks = dict(result.get("hooks") or {})
    for event, command in commands.items():
        entry = {"type": "command", "command": command,
                 "timeout": _TIMEOUTS.get(event, _EVENT_TIMEOUT)}  # fmt: skip
        hooks[event] = [*hooks.get(event, []), {"hooks": [entry]}]
    return {**result, "hooks": hooks}


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise SettingsError(f"{path} is not valid JSON ({exc}); fix it first") from None
    if not isinstance(data, dict) or not isinstance(data.get("hooks", {}), dict):
        raise SettingsError(f"{path} is not a settings object with a `hooks` object")
    return data


def _write(path: Path, before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Write `after` if it differs from `before`, keeping the old file as `.bak`."""
    if after == before:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        shutil.copy2(path, path.with_name(path.name + ".bak"))
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(after, indent=2, ensure_ascii=False) + "\n", "utf-8")
    os.replace(temporary, path)
    return True


def install(path: Path, home: Path, namespace: str, user: str | None) -> bool:
    """Merge our hooks into the settings file at `path`; True if the file changed."""
    before = _read(path)
    commands = {event: hook_command(event, home, namespace, user) for event in EVENTS}
    return _write(path, before, with_ours(before, commands))


def uninstall(path: Path) -> bool:
    """Take our hooks out of the settings file at `path`; True if the file changed."""
    before = _read(path)
    return _write(path, before, _without_ours(before))
