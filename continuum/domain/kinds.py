"""The memory kinds: one row per kind with every per-kind property the rest of Continuum
reads — which kinds the LLM may extract and the memory tools may store, the importance and
claim of an explicit write, where recall and `MEMORY.md` show a kind, how maintenance
decays, prunes, compresses and archives it, whether it is a digest or becomes a task.

Adding a kind: add its name to `MemoryKind` and a `KindSpec` row to `KINDS` (same order);
every consumer derives its table from `KINDS`, and the tests check that each one agrees.
A deterministic capture rule (`continuum.capture.rules`) is only needed if capture itself
should produce the kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

MemoryKind = Literal[
    "decision",
    "preference",
    "fact",
    "commitment",
    "open_thread",
    "follow_up",
    "context",
    "history",
    "wellbeing",
    "session_snapshot",
    "conversation_summary",
    "reflection",
    "statement",
    "document",
]
# Sections of the context block a memory can land in (the block's order: recall.items.SECTIONS).
ContextSection = Literal[
    "Recent conversations", "Decisions", "Open threads", "Preferences", "Relevant memories"
]
# Sections of MEMORY.md, in the order the file lists them.
MemoryMdSection = Literal["Preferences", "Decisions", "Facts", "Open threads and follow-ups"]


@dataclass(frozen=True)
class KindSpec:
    """One memory kind and how each part of Continuum treats it."""

    name: MemoryKind
    description: str  # one line, served by `GET /v1/memories/kinds`
    llm_extracts: bool = False  # the LLM extraction schema offers it
    tool_storable: bool = False  # `memory_type` of the memory tools accepts it
    explicit_importance: int = 5  # importance of a memory stored outright (tools, preferences)
    explicit_claim: bool = False  # an explicit `key: value` write carries a claim on the key
    timed: bool = False  # capture keeps the time expression of its sentence
    digest: bool = False  # spans several turns: content may be MAX_DIGEST_CHARS long
    becomes_task: bool = False  # the writer creates a user task for it
    pre_compaction: bool = True  # the pre-compaction dump keeps key moments of this kind
    context_section: ContextSection = "Relevant memories"
    memory_md: MemoryMdSection | None = None  # None: not listed in MEMORY.md
    slow_decay: bool = False  # importance halves every decision_half_life_days, not half_life_days
    pruned_when_decayed: bool = True  # deleted once decayed to 1 and untouched long enough
    compressible: bool = False  # maintenance folds many small ones on a topic into one
    merged_when_alike: bool = True  # maintenance merges near-identical ones of a user and key
    archived_when_old: bool = False  # maintenance archives it after summary_archive_days
    # An index of its source turn: search scores the turn by it and shows the turn in its
    # place; no recency or importance channel of the block reads it.
    indexes_turn: bool = False


KINDS: tuple[KindSpec, ...] = (
    KindSpec(
        "decision",
        "A choice that was made, e.g. which contractor or database to use.",
        llm_extracts=True,
        explicit_claim=True,
        timed=True,
        context_section="Decisions",
        memory_md="Decisions",
        slow_decay=True,
        pruned_when_decayed=False,
    ),
    KindSpec(
        "preference",
        "How the user likes things: favourites, settings, standing rules.",
        llm_extracts=True,
        tool_storable=True,
        explicit_importance=7,
        explicit_claim=True,
        context_section="Preferences",
        memory_md="Preferences",
        pruned_when_decayed=False,
    ),
    KindSpec(
        "fact",
        "A stable fact about the user or their world: people, places, relations.",
        llm_extracts=True,
        tool_storable=True,
        explicit_importance=6,
        explicit_claim=True,
        memory_md="Facts",
    ),
    KindSpec(
        "commitment",
        "Something the user or the assistant committed to do.",
        llm_extracts=True,
        timed=True,
        becomes_task=True,
        memory_md="Open threads and follow-ups",
    ),
    KindSpec(
        "open_thread",
        "A question or issue still open: unanswered, undecided or blocked.",
        llm_extracts=True,
        timed=True,
        context_section="Open threads",
        memory_md="Open threads and follow-ups",
    ),
    KindSpec(
        "follow_up",
        "Something to come back to or be reminded of, often at a given time.",
        llm_extracts=True,
        tool_storable=True,
        explicit_importance=7,
        timed=True,
        becomes_task=True,
        memory_md="Open threads and follow-ups",
    ),
    KindSpec(
        "context",
        "Background of a conversation: agreements, positive reactions, circumstances.",
        llm_extracts=True,
        tool_storable=True,
        pre_compaction=False,
        compressible=True,
    ),
    KindSpec(
        "history",
        "Something that happened in the past.",
        tool_storable=True,
        compressible=True,
    ),
    KindSpec(
        "wellbeing",
        "How the user is doing: frustration, urgency, health, mood.",
        tool_storable=True,
        explicit_importance=6,
        pre_compaction=False,
        compressible=True,
    ),
    KindSpec(
        "session_snapshot",
        "Where a session stood at an idle pause or before compaction.",
        digest=True,
    ),
    KindSpec(
        "conversation_summary",
        "The summary of one finished session.",
        digest=True,
        context_section="Recent conversations",
        archived_when_old=True,
    ),
    KindSpec("reflection", "A conclusion drawn from several memories."),
    KindSpec(
        "statement",
        "One sentence a person said in a longer turn, named for its speaker; cites the turn.",
        pre_compaction=False,
        pruned_when_decayed=False,
        indexes_turn=True,
    ),
    KindSpec(
        "document",
        "A JSON document an application keeps under a namespace path and key (a LangGraph "
        "store item); found by search, never merged, pruned or archived.",
        pre_compaction=False,
        pruned_when_decayed=False,
        merged_when_alike=False,
    ),
)
KIND_SPECS: dict[str, KindSpec] = {spec.name: spec for spec in KINDS}


def kind_names(where: Callable[[KindSpec], bool]) -> tuple[MemoryKind, ...]:
    """The names of the kinds `where` accepts, in registry order."""
    return tuple(spec.name for spec in KINDS if where(spec))


def kind_literal(names: tuple[MemoryKind, ...]) -> Any:
    """`Literal[*names]` for a pydantic field that accepts only these kinds (its JSON schema is
    an enum of them). Not a static type: callers declare `MemoryKind` for type checkers."""
    return Literal[names]
