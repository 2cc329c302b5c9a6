"""Evidence held at a token budget: what a context block must beat.

- **Packed search** (the split's `packed.py`, same definition): a run's ranked turns, each
  rendered as one block line (PREFIX tokens for its date/channel prefix plus the turn's text),
  added in rank order until the next would pass the budget; the figure is the evidence recall
  of everything packed. A block of the same budget that holds less evidence spends tokens on
  lines that bring none.
- **The block by section**: which of the block's sections carried the evidence, and the
  tokens each spent.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from rich import box
from rich.table import Table

from bench.eval.locomo import Question
from bench.eval.scoring import coverage

PREFIX_TOKENS = 18  # "- 2023-05-08 (Mon, 2 years ago) [openclaw] ", as the split's packed.py


@dataclass(frozen=True)
class Held:
    """Whole-pack evidence recall at a budget, and the mean lines and tokens it took."""

    name: str
    budget: int
    recall: float
    lines: float
    tokens: float


def packed_search(
    name: str,
    results: Mapping[str, Sequence[str]],
    questions: Sequence[Question],
    texts: Mapping[tuple[str, str], str],
    budget: int,
    count: Callable[[str], int],
) -> Held:
    """`results` (ranked turn ids per question) packed one line a turn into `budget`."""
    recalls, lines, spent = [], [], []
    for question in questions:
        used, ids = 0, []
        for turn_id in dict.fromkeys(results.get(question.qid, [])):
            text = texts.get((question.instance, turn_id))
            if text is None:
                continue
            cost = count(text) + PREFIX_TOKENS
            if used + cost > budget:
                break
            used += cost
            ids.append(turn_id)
        recalls.append(coverage(ids, question.evidence))
        lines.append(len(ids))
        spent.append(used)
    return Held(
        name, budget, statistics.fmean(recalls), statistics.fmean(lines), statistics.fmean(spent)
    )


@dataclass
class Section:
    """One section of a block: the turn ids its lines cite and the tokens they cost."""

    ids: list[str] = field(default_factory=list)
    tokens: int = 0
    lines: int = 0


Block = dict[str, Section]  # section name -> what it held, for one question's block


def block_held(
    name: str,
    budget: int,
    blocks: Mapping[str, Block],
    tokens: Mapping[str, int],
    questions: Sequence[Question],
) -> Held:
    """Whole-block evidence recall of `blocks` (one per question), `tokens` each used."""
    recalls, lines, spent = [], [], []
    for question in questions:
        sections = blocks.get(question.qid, {})
        ids = [turn_id for section in sections.values() for turn_id in section.ids]
        recalls.append(coverage(ids, question.evidence))
        lines.append(sum(section.lines for section in sections.values()))
        spent.append(tokens.get(question.qid, 0))
    return Held(
        name, budget, statistics.fmean(recalls), statistics.fmean(lines), statistics.fmean(spent)
    )


def by_section(
    blocks: Mapping[str, Block], questions: Sequence[Question]
) -> dict[str, tuple[float, float, float]]:
    """Per section: the mean share of a question's evidence its lines cite, and its mean
    lines and tokens per block (0 where a block has no such section)."""
    found: dict[str, list[float]] = defaultdict(list)
    lines: dict[str, list[int]] = defaultdict(list)
    tokens: dict[str, list[int]] = defaultdict(list)
    names = sorted({name for block in blocks.values() for name in block})
    for question in questions:
        block = blocks.get(question.qid, {})
        for name in names:
            section = block.get(name, Section())
            found[name].append(coverage(section.ids, question.evidence))
            lines[name].append(section.lines)
            tokens[name].append(section.tokens)
    return {
        name: (
            statistics.fmean(found[name]),
            statistics.fmean(lines[name]),
            statistics.fmean(tokens[name]),
        )
        for name in names
    }


HEADERS = ("what", "budget", "evidence recall", "lines", "tokens")
TITLE = "Evidence held at equal tokens"
NOTE = "A block's tokens are all it used; a section's are its lines', headings apart."


def held_rows(
    held: Sequence[Held], sections: Mapping[str, tuple[float, float, float]]
) -> list[list[str]]:
    """The cells of the table: each block and packed search, then the block's sections."""
    rows = [
        [r.name, str(r.budget), f"{r.recall:.4f}", f"{r.lines:.1f}", f"{r.tokens:.0f}"]
        for r in held
    ]
    rows += [
        [f"block section: {name}", "", f"{recall:.4f}", f"{lines:.1f}", f"{tokens:.0f}"]
        for name, (recall, lines, tokens) in sections.items()
    ]
    return rows


def held_table(rows: list[list[str]]) -> Table:
    out = Table(title=f"{TITLE}. {NOTE}", box=box.SIMPLE_HEAD, pad_edge=False)
    for header in HEADERS:
        out.add_column(header, justify="left" if header == "what" else "right")
    for row in rows:
        out.add_row(*row)
    return out


def held_markdown(rows: list[list[str]]) -> str:
    lines = [f"## {TITLE}", "", NOTE, "", "| " + " | ".join(HEADERS) + " |",
             "| --- |" + " ---: |" * (len(HEADERS) - 1)]  # fmt: skip
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join([*lines, ""])
