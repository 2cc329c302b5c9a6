"""Choosing what goes into the context block, once the candidates are read: merging what
several channels proposed, scoring, dropping duplicates, and packing greedily by score into
the token budget.

    score = w_relevance · relevance + w_importance · importance/10 + w_recency · decay + pin

These are pure functions of the candidates, the config and `now` (and, for dedupe, the
near-duplicate pairs `recall.candidates.near_duplicates` read from Postgres): the decisions
that shape the block can be tested and reasoned about without a database. Every candidate
left out is reported as `Excluded` with its reason, for `explain`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from continuum.domain.memory import DIGEST_KINDS
from continuum.domain.text import normalize_for_key
from continuum.inference.tokenizer import count_block_tokens, count_tokens
from continuum.recall.items import SECTIONS, Candidate, ContextItem, Excluded, RecallConfig
from continuum.recall.render import day_of, header, line, render

PINNED_CHANNELS = {"summaries", "open_threads", "preferences", "tasks", "handoff"}
MESSAGE_IMPORTANCE = 4  # raw turns carry no rating; they rank below rated memories

OVER_BUDGET = "over the token budget"


def merge(groups: Iterable[list[Candidate]]) -> list[Candidate]:
    """One candidate per ref; channels and relevance of repeats are combined."""
    merged: dict[str, Candidate] = {}
    for group in groups:
        for candidate in group:
            seen = merged.get(candidate.ref)
            if seen is None:
                merged[candidate.ref] = candidate
                continue
            seen.channels.update(candidate.channels)
            seen.relevance = max(seen.relevance, candidate.relevance)
            seen.parts.update(candidate.parts)
    return list(merged.values())


def score(candidate: Candidate, now: datetime, config: RecallConfig, seeded: bool) -> None:
    """Set `candidate.score` and its parts. Recency halves every `half_life_days`; a pinned
    channel's item earns the pinned bonus, which a seed (`seeded`) turns off by default."""
    w = config.weights
    importance = (candidate.importance or MESSAGE_IMPORTANCE) / 10
    recency = 1.0
    if candidate.created_at is not None:
        age_days = max(0.0, (now - candidate.created_at).total_seconds() / 86400)
        recency = 0.5 ** (age_days / config.half_life_days)
    bonus = w.pinned_with_seed if seeded else w.pinned
    pinned = bonus if PINNED_CHANNELS & candidate.channels.keys() else 0.0
    candidate.parts.update(
        relevance=round(candidate.relevance, 4),
        importance=round(importance, 4),
        recency=round(recency, 4),
        pinned=pinned,
    )
    candidate.score = round(
        w.relevance * candidate.relevance
        + w.importance * importance
        + w.recency * recency
        + pinned,
        6,
    )


def drop_tracked(candidates: list[Candidate], excluded: list[Excluded]) -> list[Candidate]:
    """The candidates without the memories a task candidate was created from: the task
    stands for them (each dropped one is added to `excluded`)."""
    tracked = {ref: c.ref for c in candidates if c.source == "task" for ref in c.covers}
    for candidate in [c for c in candidates if c.ref in tracked]:
        excluded.append(
            Excluded(
                ref=candidate.ref,
                kind=candidate.kind,
                reason=f"tracked as {tracked[candidate.ref]}",
                score=candidate.score,
            )
        )
    return [c for c in candidates if c.ref not in tracked]


def duplicate_of(
    candidate: Candidate, kept: list[Candidate], pairs: set[frozenset[str]], keys: dict[str, str]
) -> str | None:
    """Why `candidate` repeats one of `kept` (same normalized text, a near-duplicate pair,
    or a raw turn a kept memory was extracted from), or None."""
    for other in kept:
        if keys[other.ref] == keys[candidate.ref]:
            return f"same text as {other.ref}"
        if frozenset((candidate.ref, other.ref)) in pairs:
            return f"near-duplicate of {other.ref}"
        if (
            candidate.source == "message"
            and other.source == "memory"
            and other.kind not in DIGEST_KINDS  # a summary does not say what the turn said
            and candidate.session_id == other.session_id
            and candidate.source_message_ids[0] in other.source_message_ids
        ):
            return f"covered by {other.ref}, extracted from this turn"
    return None


def dedupe(
    candidates: list[Candidate], pairs: set[frozenset[str]], excluded: list[Excluded]
) -> list[Candidate]:
    """The candidates without duplicates, the best-scored of each kept; `pairs` are the refs
    whose embeddings are near-duplicates. Memories are judged before raw turns, so a turn is
    judged against what was extracted from it."""
    keys = {c.ref: normalize_for_key(c.content) for c in candidates}
    kept: list[Candidate] = []
    for candidate in sorted(candidates, key=lambda c: (c.source == "message", -c.score, c.ref)):
        reason = duplicate_of(candidate, kept, pairs, keys)
        if reason:
            excluded.append(
                Excluded(
                    ref=candidate.ref, kind=candidate.kind, reason=reason, score=candidate.score
                )
            )
        else:
            kept.append(candidate)
    return kept


def _block_order(item: ContextItem, now: datetime) -> tuple[object, ...]:
    """Sections in SECTIONS order; in a dated section, lines in time order (undated first),
    under their day; newest conversations first; else by score."""
    section = SECTIONS.index(item.section)
    when = item.created_at.timestamp() if item.created_at else 0.0
    if day_of(item.section, item.created_at, now):
        return (section, 1, when, item.ref)
    if item.section == "Recent conversations":
        return (section, 0, -when, item.ref)
    return (section, 0, -item.score, item.ref)


def _why(candidate: Candidate) -> str:
    reasons = [candidate.channels[name] for name in sorted(candidate.channels)]
    return "; ".join(reasons) + f"; score {candidate.score:g}"


def pack(
    candidates: list[Candidate],
    max_tokens: int,
    now: datetime,
    config: RecallConfig,
    excluded: list[Excluded],
    seeded: bool = False,
) -> tuple[list[ContextItem], str, int]:
    """Greedy by score (a long relevant turn before a short weak one); the handoff first.
    With a seed (`seeded`), what the seed did not reach (tasks, preferences, summaries that
    no search found) only fills the room the relevant items leave.
    An item that no longer fits is skipped for smaller ones after it. Token counts add up across the
    whitespace that joins lines, so the sum is the block's exact count (checked after, on the
    rendered block).
    Returns the items, the rendered block and its token count."""
    used = count_tokens(header(now))
    opened: set[tuple[str, str]] = set()  # (section, heading) already charged
    items: list[ContextItem] = []
    lines = {c.ref: line(c, now, config) for c in candidates}
    tokens_of = {ref: count_tokens(text) for ref, text in lines.items()}
    order = sorted(
        candidates,
        key=lambda c: (
            c.source != "handoff",
            seeded and not c.relevance,
            -c.score,
            tokens_of[c.ref],
            c.ref,
        ),
    )
    for candidate in order:
        text, tokens = lines[candidate.ref], tokens_of[candidate.ref]
        section = candidate.section
        day = day_of(section, candidate.created_at, now)
        headings = [(section, f"## {section}"), *([(section, day)] if day else [])]
        cost = tokens + sum(count_tokens(h) for s, h in headings if (s, h) not in opened)
        if used + cost > max_tokens:
            excluded.append(
                Excluded(
                    ref=candidate.ref,
                    kind=candidate.kind,
                    reason=OVER_BUDGET,
                    score=candidate.score,
                )
            )
            continue
        used += cost
        opened.update(headings)
        items.append(
            ContextItem(
                ref=candidate.ref,
                kind=candidate.kind,
                section=section,
                text=text,
                score=candidate.score,
                tokens=tokens,
                why=_why(candidate),
                parts=candidate.parts,
                memory_id=candidate.db_id if candidate.source == "memory" else None,
                source_message_ids=candidate.source_message_ids,
                created_at=candidate.created_at,
            )
        )
    items.sort(key=lambda item: _block_order(item, now))
    block = render(items, now)
    while (tokens_used := count_block_tokens(block)) > max_tokens:  # never over the budget
        dropped = min(items, key=lambda i: (i.score / max(i.tokens, 1), i.ref))
        items.remove(dropped)
        excluded.append(
            Excluded(ref=dropped.ref, kind=dropped.kind, reason=OVER_BUDGET, score=dropped.score)
        )
        block = render(items, now)
    return items, block, tokens_used
