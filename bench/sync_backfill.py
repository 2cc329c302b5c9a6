"""Backfill benchmark: transcript sync against three baselines on the same rows.

Generates a deterministic OpenClaw corpus (default 900 sessions, ~170 messages each,
with thinking blocks, tool calls and channel envelopes to parse), then measures on the
embedded servers under `.continuum-bench/`, database `continuum_bench`:

- sync:        `continuum.sync.sync(backfill=True)` end to end (discover, parse, COPY into
               `messages` for a session without rows, else COPY to staging and INSERT …
               ON CONFLICT; sessions, cursors);
- row-by-row:  one `INSERT … ON CONFLICT DO NOTHING` per message into a copy of
               `messages` (same indexes), one commit per session, for a time budget
               per round (its rate holds for the corpus: every session is alike);
- COPY:        the already parsed rows COPYed into a plain table with the same columns
               and no index (the ceiling: no parsing, no index, no conflict check), and
               into a table shaped like `messages` (its generated English tsvector and
               indexes), which bounds any way into `messages`.

Each is measured `--rounds` times (default 3) into empty tables after a checkpoint, in
alternating order, and reported as its best round: this machine's I/O alone moves one run
by a third.

Run: `.venv/bin/python -m bench.sync_backfill --sessions 900`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import Options, Section, alternating, bench_servers

CORPUS_KINDS = ("openclaw_jsonl",)  # the generated corpus holds OpenClaw JSONL files only

_VOCABULARY = (
    "postgres redis celery worker queue memory session transcript sync cursor offset "
    "backfill deadline launch pricing landing page logo wordmark dashboard dark mode "
    "standup demo invoice budget roadmap milestone customer feedback release staging "
    "password rotation migration index vector embedding recall summary decision prefer "
    "always never tomorrow friday march april team design review bug fix test coverage"
)
WORDS = _VOCABULARY.split(" ")
T0_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(low, high))).capitalize() + "."


def _session_lines(rng: random.Random, index: int, messages: int) -> list[str]:
    """One OpenClaw v3 transcript: header, model entries, then user/assistant turns."""
    session_id = f"{rng.getrandbits(32):08x}-0000-4000-8000-{index:012d}"
    at = T0_MS + index * 3_600_000
    entries: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": session_id, "timestamp": _iso(at), "cwd": "/w"},
        {
            "type": "model_change",
            "id": f"{rng.getrandbits(32):08x}",
            "parentId": None,
            "timestamp": _iso(at),
            "provider": "anthropic",
            "modelId": "claude-opus-4-6",
        },
    ]
    parent = entries[-1]["id"]
    for turn in range(messages):
        at += rng.randint(2_000, 90_000)
        entry_id = f"{rng.getrandbits(32):08x}"
        if turn % 2 == 0:
            text = _text(rng, 8, 60)
            if turn % 6 == 0:
                meta = {"message_id": str(turn), "sender": "Jason", "sender_id": "6013056728"}
                text = (
                    "Conversation info (untrusted metadata):\n```json\n"
                    f"{json.dumps(meta)}\n```\n\n{text}"
                )
            message: dict[str, Any] = {
                "role": "user",
                "content": [{"type": "text", "text": text}],
                "timestamp": at,
            }
        else:
            content: list[dict[str, Any]] = [
                {"type": "thinking", "thinking": _text(rng, 5, 30), "thinkingSignature": "sig"}
            ]
            if turn % 5 == 1:
                content.append(
                    {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "a"}}
                )
            content.append({"type": "text", "text": _text(rng, 10, 80)})
            message = {
                "role": "assistant",
                "content": content,
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-opus-4-6",
                "usage": {"input": 3, "output": 90, "totalTokens": 93},
                "stopReason": "stop",
                "timestamp": at,
            }
        entries.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": _iso(at),
                "message": message,
            }
        )
        parent = entry_id
    return [json.dumps(entry, separators=(",", ":")) for entry in entries]


def generate_corpus(root: Path, sessions: int, messages: int, seed: int = 7) -> Path:
    """Write `sessions` transcripts under `root/.openclaw-bench/agents/main/sessions`."""
    rng = random.Random(seed)
    directory = root / ".openclaw-bench" / "agents" / "main" / "sessions"
    directory.mkdir(parents=True, exist_ok=True)
    for index in range(sessions):
        count = messages + rng.randint(-20, 20)
        lines = _session_lines(rng, index, count)
        session_id = json.loads(lines[0])["id"]
        (directory / f"{session_id}.jsonl").write_text("\n".join(lines) + "\n")
    return root


def _parsed_rows(home: Path) -> list[list[tuple[Any, ...]]]:
    """The rows the sync writes, per session, parsed once for the baselines (a plaintext
    tenant's: content as is, no keyed terms)."""
    from continuum.domain.storable import json_text
    from continuum.sync.engine import namespace_for
    from continuum.sync.rows import message_rows
    from continuum.sync.sources import session_facts
    from continuum.transcripts import discover, parser_for, read_complete_lines

    sessions = []
    for source in discover(None, home, CORPUS_KINDS).sources:
        parser = parser_for(source)
        result = parser.feed(read_complete_lines(source.path))
        facts = session_facts(source, namespace_for(source.instance), parser.state, source.channel)
        rows = message_rows(facts, result.messages, {})
        sessions.append([(*row[:-1], json_text(row.details), None) for row in rows])
    return sessions


def _row_by_row(dsn: str, sessions: list[list[tuple[Any, ...]]], budget_s: float) -> float:
    import psycopg

    from continuum.conversations.writer import COLUMNS

    columns = ", ".join(COLUMNS)
    placeholders = ", ".join(["%s"] * len(COLUMNS))
    statement = (
        f"INSERT INTO bench_row_by_row ({columns}) VALUES ({placeholders}) "
        "ON CONFLICT (namespace, session_id, message_id) DO NOTHING"
    )
    rows = 0
    with psycopg.connect(dsn) as conn:
        _fresh_table(conn, "bench_row_by_row", MESSAGES_SHAPED_TABLE)
        started = time.perf_counter()
        for session in sessions:
            with conn.transaction():
                for row in session:
                    conn.execute(statement, row)
            rows += len(session)
            if time.perf_counter() - started > budget_s:
                break
        return rows / (time.perf_counter() - started)


PLAIN_TABLE = (
    "CREATE TABLE {} (namespace text, session_id text, message_id text, parent_id text,"
    " role text, content text, channel text, sender text, user_id text, source text,"
    " created_at timestamptz, event_id uuid, details jsonb, tsv_keyed tsvector)"
)
MESSAGES_SHAPED_TABLE = "CREATE TABLE {} (LIKE messages INCLUDING ALL)"


def _fresh_table(conn: Any, table: str, ddl: str) -> None:
    """An empty `table` made by `ddl`, after a checkpoint: each round starts alike."""
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(ddl.format(table))
    conn.commit()
    conn.execute("CHECKPOINT")


def _copy(dsn: str, sessions: list[list[tuple[Any, ...]]], table: str, ddl: str) -> float:
    import psycopg

    from continuum.conversations.writer import COLUMNS

    columns = ", ".join(COLUMNS)
    rows = sum(len(session) for session in sessions)
    with psycopg.connect(dsn) as conn:
        _fresh_table(conn, table, ddl)
        started = time.perf_counter()
        with conn.cursor() as cur, cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for session in sessions:
                for row in session:
                    copy.write_row(row)
        conn.commit()
        return rows / (time.perf_counter() - started)


def _sync_rate(dsn: str, home: Path) -> tuple[float, int]:
    """Backfill `home` into empty tables: its messages/s and messages inserted."""
    import psycopg

    from continuum.sync import sync

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("TRUNCATE messages, sessions, transcript_cursors, sync_problems CASCADE")
        conn.execute("CHECKPOINT")
    summary = sync(home, backfill=True, feed_capture=False, kinds=CORPUS_KINDS)
    return summary.rate, summary.messages_inserted


def measure(
    sessions: int = 900, messages: int = 170, row_budget_s: float = 10.0, rounds: int = 3
) -> dict[str, Any]:
    """Generate the corpus, measure the ways in (best of `rounds`, alternating), print a
    table, return the figures. Expects `bench.common.bench_servers()` to have pointed the
    environment at the servers."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    dsn = os.environ["CONTINUUM_DATABASE_URL"].replace("+psycopg", "")
    work = Path(tempfile.mkdtemp(prefix="continuum-bench-"))
    try:
        started = time.perf_counter()
        home = generate_corpus(work, sessions, messages)
        console.print(f"corpus: {sessions} sessions in {time.perf_counter() - started:.1f}s")
        parse_started = time.perf_counter()
        parsed = _parsed_rows(home)
        parse_seconds = time.perf_counter() - parse_started
        inserted: list[int] = []

        def backfill(round_no: int) -> float:
            rate, count = _sync_rate(dsn, home)
            inserted.append(count)
            return rate

        rates = alternating(
            rounds,
            {
                "sync": backfill,
                "shaped": lambda _: _copy(dsn, parsed, "bench_shaped", MESSAGES_SHAPED_TABLE),
                "plain": lambda _: _copy(dsn, parsed, "bench_plain", PLAIN_TABLE),
                "row_by_row": lambda _: _row_by_row(dsn, parsed, row_budget_s),
            },
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total = sum(len(rows) for rows in parsed)
    assert set(inserted) == {total}, f"a backfill round inserted {inserted}, not {total}"
    result: dict[str, Any] = {
        "sessions": sessions,
        "messages": total,
        "rounds": rounds,
        "rates": {**rates, "parse_only": total / parse_seconds},
        "speedup_vs_row_by_row": rates["sync"] / rates["row_by_row"],
        "fraction_of_copy": rates["sync"] / rates["plain"],
        "fraction_of_shaped_copy": rates["sync"] / rates["shaped"],
    }
    table = Table("path", "messages/s", title=f"Transcript backfill, best of {rounds} rounds")
    for name, label in (
        ("sync", "sync (parse + COPY, INSERT … ON CONFLICT for known sessions)"),
        ("parse_only", "parse only (no database, one round)"),
        ("plain", "COPY of parsed rows into a plain table (ceiling)"),
        ("shaped", "COPY of parsed rows into a messages-shaped table (tsvector + indexes)"),
        ("row_by_row", f"row-by-row INSERT ({row_budget_s:.0f} s per round)"),
    ):
        table.add_row(label, f"{result['rates'][name]:,.0f}")
    console.print(table)
    console.print(
        f"sync = {result['speedup_vs_row_by_row']:.1f}× row-by-row, "
        f"{result['fraction_of_copy']:.0%} of the plain COPY ceiling, "
        f"{result['fraction_of_shaped_copy']:.0%} of COPY into a messages-shaped table"
    )
    return result


def run(urls: dict[str, str], options: Options) -> list[Section]:
    """The `make bench` section: sync throughput beside its baselines."""
    quick = options.quick
    result = measure(sessions=150 if quick else 900, rounds=1 if quick else 3)
    section = Section(f"Transcript backfill ({result['sessions']} sessions, "
                      f"{result['messages']:,} messages, best of {result['rounds']} rounds)")  # fmt: skip
    rates = result["rates"]
    section.add("sync vs COPY into messages shape", rates["sync"], rates["shaped"], "messages/s",
                "COPY into a table with the tsvector + indexes (target ≥ 0.9×)")  # fmt: skip
    section.add("sync vs row-by-row INSERT", rates["sync"], rates["row_by_row"], "messages/s",
                "row-by-row INSERT (target ≥ 3×)")  # fmt: skip
    section.add("sync vs raw COPY", rates["sync"], rates["plain"], "messages/s",
                "COPY into a plain table, no index (for reference)")  # fmt: skip
    return [section]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=900)
    parser.add_argument("--messages", type=int, default=170, help="per session (±20)")
    parser.add_argument("--row-budget", type=float, default=10.0, help="row-by-row s per round")
    parser.add_argument("--rounds", type=int, default=3, help="best of this many, alternating")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args()
    bench_servers()
    result = measure(args.sessions, args.messages, args.row_budget, args.rounds)
    if args.json:
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
