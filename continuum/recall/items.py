"""The vocabulary of a recall (R10, R26, R31): its knobs (`RecallConfig`), its inputs
(`RecallRequest`), a candidate on its way into the context block, an item that made it, one
that did not and why, and the result with its rendered block.

Kept in a module of its own so that the stages of a recall — the SQL channels
(`recall.candidates`), the pure scoring and packing (`recall.packing`), the rendering
(`recall.render`), the assembly and its log (`recall.context`, `recall.recall_log`) — share
one definition of each without importing one another. Nothing here reads or writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any, Literal

from continuum.domain.kinds import KINDS
from continuum.domain.records import ContextBlock, ContextBlockExcluded, ContextBlockItem
from continuum.recall.fusion import FusionWeights

ItemSource = Literal["memory", "message", "task", "handoff"]
# Tasks capture proposed that wait for the user's yes (CONTINUUM_CONFIRM_TASKS): the heading
# tells the agent what to do with them.
SUGGESTED_TASKS = "Suggested tasks (ask the user; confirm or dismiss by id)"
SECTIONS = (  # block order
    "Pending handoff",
    "Recent conversations",
    "Decisions",
    "Open threads",
    "Active tasks",
    SUGGESTED_TASKS,
    "Preferences",
    "Relevant memories",
)
_SECTION_OF_KIND: dict[str, str] = {spec.name: spec.context_section for spec in KINDS}


@dataclass(frozen=True)
class ScoreWeights:
    relevance: float = 0.55
    importance: float = 0.25
    recency: float = 0.2
    pinned: float = 0.25  # bonus of pinned items (summaries, open threads, tasks, preferences)
    pinned_with_seed: float = 0.0  # their bonus when a seed is given: relevance decides


@dataclass(frozen=True)
class RecallConfig:
    """Channel sizes, scoring and dedupe knobs of `context()`."""

    weights: ScoreWeights = field(default_factory=ScoreWeights)
    fusion: FusionWeights = field(default_factory=FusionWeights)
    recency_n: int = 5
    relevance_n: int = 32
    relevance_candidates: int = 40  # ranks each search channel contributes to the fusion
    importance_n: int = 10
    importance_min: int = 8
    importance_days: int = 30
    pinned_n: int = 8
    summaries_n: int = 3
    half_life_days: float = 14.0
    duplicate_cosine: float = 0.92
    max_item_chars: int = 300
    max_summary_chars: int = 700
    main_channels: frozenset[str] = frozenset({"main", "dm", "direct"})


@dataclass(frozen=True)
class RecallRequest:
    """One recall as asked: for whom, where, with what seed and budget, at what time."""

    namespace: str
    seed_text: str
    max_tokens: int
    user_id: str | None
    channel: str | None
    explain: bool
    now: datetime
    config: RecallConfig
    pinned: bool = True  # recency, importance and pinned channels (off for topic shifts)
    skip_refs: frozenset[str] = frozenset()
    since_topic: str | None = None

    @property
    def zone(self) -> tzinfo:
        """The time zone the request's days are read in: `now`'s (the tenant's)."""
        return self.now.tzinfo or UTC


@dataclass
class Candidate:
    """A row some channel proposed for the block, with why it was picked and, once scored,
    its score and the parts of it."""

    source: ItemSource
    ref: str
    kind: str
    content: str
    created_at: datetime | None
    channel: str | None = None
    importance: int | None = None
    db_id: int | None = None  # memories.id / messages.id, for embedding dedupe
    session_id: str | None = None
    source_message_ids: list[str] = field(default_factory=list)
    channels: dict[str, str] = field(default_factory=dict)  # channel → why it was picked
    covers: list[str] = field(default_factory=list)  # memory refs a task was created from
    relevance: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)
    score: float = 0.0

    @property
    def section(self) -> str:
        if self.source == "handoff":
            return "Pending handoff"
        if self.source == "task":
            return SUGGESTED_TASKS if self.kind == "suggested" else "Active tasks"
        return _SECTION_OF_KIND.get(self.kind, "Relevant memories")  # a raw turn: kind = role


# A line of the block, and a candidate left out of it (reported with `explain`): the records
# the API answers with and the client reads (`continuum.domain.records`), built here as they go.
ContextItem = ContextBlockItem
Excluded = ContextBlockExcluded


@dataclass
class ContextResult:
    block: str
    items: list[ContextItem]
    excluded: list[Excluded]
    tokens_used: int
    query_id: str
    topic: str

    def record(self) -> ContextBlock:
        """The answer: the block, its items, what was left out, and the memory ids injected."""
        return ContextBlock(
            block=self.block,
            items=self.items,
            excluded=self.excluded,
            tokens_used=self.tokens_used,
            query_id=self.query_id,
            topic=self.topic,
            memory_ids=[item.memory_id for item in self.items if item.memory_id is not None],
        )

    def as_dict(self) -> dict[str, Any]:
        return self.record().model_dump(mode="json")
