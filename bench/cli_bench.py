"""CLI startup: whole `continuum` processes (`--help`, and `emit` of one event to the running
broker) timed over many runs, beside `python -c pass` (the interpreter's own start) measured
in the same run."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
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


def _process_ms(argv: list[str], runs: int) -> dict[str, float]:
    """min / median / p95 wall time of `argv` as a whole process; each run must exit 0."""
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        samples.append((time.perf_counter() - started) * 1000)
        if done.returncode != 0:
            raise RuntimeError(f"{argv[:3]} exited {done.returncode}: {done.stderr[-2000:]}")
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


def run(urls: dict[str, str], options: Options) -> list[Section]:
    return [startup(urls, runs=10 if options.quick else 20)]
