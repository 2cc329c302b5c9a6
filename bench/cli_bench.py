"""CLI startup: whole `continuum` processes (`--help`, and `emit` of one event to the running
broker) and the Claude Code hooks (each event hook fed its hook payload on stdin, and
SessionStart) timed over many runs, beside `python -c pass` (the interpreter's own start)
measured in the same run."""

from __future__ import annotations

import json
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bench.common import Options, Section, percentile

_STATS = ("min", "median", "p95")


def _continuum() -> str:
    """The `continuum` console script of this interpreter's environment."""
    found = shutil.which("continuum", path=str(Path(sys.executable).parent)) or shutil.which(
        "continuum"
    )
    if found is None:
        raise RuntimeError("no `continuum` console script: install the project (make install)")
    return found


def _process_ms(
    argv: list[str], runs: int, stdin: str | None = None, after: Callable[[], None] | None = None
) -> dict[str, float]:
    """min / median / p95 wall time of `argv` as a whole process (fed `stdin`); each run must
    exit 0. `after` runs after each run, outside the timing."""
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=120)
        samples.append((time.perf_counter() - started) * 1000)
        if done.returncode != 0:
            raise RuntimeError(f"{argv[:3]} exited {done.returncode}: {done.stderr[-2000:]}")
        if after is not None:
            after()
    return {
        "min": min(samples),
        "median": statistics.median(samples),
        "p95": percentile(samples, 0.95),
    }


def _event() -> str:
    return json.dumps(
        {
            "namespace": "bench-cli",
            "session_id": "cli",
            "channel": "cli",
            "ts": datetime.now(UTC).isoformat(),
            "role": "user",
            "content": "We'll keep the command line fast to start.",
        }
    )


def startup(urls: dict[str, str], runs: int) -> Section:
    import redis

    from continuum.contract import ledger
    from continuum.contract.queues import EVENTS

    section = Section(f"CLI startup (whole processes, {runs} runs each)")
    continuum = _continuum()
    base = _process_ms([sys.executable, "-c", "pass"], runs)
    timed = {
        "continuum --help": _process_ms([continuum, "--help"], runs),
        "continuum emit turn": _process_ms([continuum, "emit", "turn", "--json", _event()], runs),
    }
    for command, stats in timed.items():
        for stat in _STATS:
            section.add(f"{command} {stat}", stats[stat], base[stat], "ms",
                        f"python -c pass {stat}", higher_is_better=False)  # fmt: skip
    broker = redis.Redis.from_url(urls["broker_url"])
    broker.delete(EVENTS, ledger.ENTRIES, ledger.INDEX)  # nobody consumes these in the benchmark
    return section


def _transcript(path: Path) -> None:
    """A Claude Code transcript ending with an assistant answer (text, a tool call, text)."""
    entries = [("user", "Let's keep the hooks fast."), ("assistant", "I'll time them."),
               ("assistant", None), ("assistant", "Timed: see the table.")]  # fmt: skip
    lines = []
    for role, text in entries:
        content = [{"type": "text", "text": text}] if text else [
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "make bench"}}]  # fmt: skip
        lines.append(json.dumps({"type": role, "uuid": str(uuid.uuid4()),
                                 "message": {"role": role, "content": content}}))  # fmt: skip
    path.write_text("\n".join(lines) + "\n")


def _flushing(home: Path) -> bool:
    """Whether a background flush of the spool under `home` is still running."""
    import psutil

    wanted = ["-m", "continuum.runtimes.spool", str(home)]
    for process in psutil.process_iter(["cmdline"]):
        if (process.info["cmdline"] or [])[1:] == wanted:
            return True
    return False


def hooks(runs: int) -> Section:
    """The Claude Code hooks as Claude Code runs them. Each event hook spools its event and
    starts a background flush; the next run starts once that flush has exited (untimed):
    hooks of a real session are seconds apart, and a flush still running would take a core
    from the next run on a 2-core machine."""
    from continuum.runtimes import spool
    from continuum.runtimes.claude_settings import hook_command

    section = Section(f"Claude Code hooks (whole processes, {runs} runs each)")
    base = _process_ms([sys.executable, "-c", "pass"], runs)
    with tempfile.TemporaryDirectory() as directory:
        home = Path(directory)
        transcript = home / "session.jsonl"
        _transcript(transcript)
        common = {"session_id": "bench-hooks", "transcript_path": str(transcript),
                  "cwd": directory, "permission_mode": "default"}  # fmt: skip
        fields = {"UserPromptSubmit": {"prompt": "Let's keep the hooks fast."},
                  "Stop": {"stop_hook_active": False}, "PreCompact": {"trigger": "auto"},
                  "SessionEnd": {"reason": "other"}, "SessionStart": {"source": "startup"}}  # fmt: skip

        def flushed() -> None:
            """Wait until the flush the hook started has sent everything and exited."""
            deadline = time.monotonic() + 60
            while _flushing(home) and time.monotonic() < deadline:
                time.sleep(0.02)
            if spool.pending(home):
                raise RuntimeError(f"the spool did not drain: see {home / spool.LOG_FILE}")

        for event, extra in fields.items():
            argv = shlex.split(hook_command(event, home, "bench-hooks", None))
            body = json.dumps({**common, "hook_event_name": event, **extra})
            stats = _process_ms(argv, runs, stdin=body, after=flushed)
            for stat in _STATS:
                section.add(f"{event} {stat}", stats[stat], base[stat], "ms",
                            f"python -c pass {stat}", higher_is_better=False)  # fmt: skip
    return section


def run(urls: dict[str, str], options: Options) -> list[Section]:
    runs = 10 if options.quick else 20
    return [startup(urls, runs), hooks(runs)]
