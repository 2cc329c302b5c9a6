"""Deterministic (no-LLM) capture: turn conversation messages into compact memory
candidates, session summaries and snapshots. Pure functions; nothing here touches a
database."""

from continuum.capture.chunking import chunk_messages
from continuum.capture.filters import Triage, detect_sentiment, triage
from continuum.capture.keymoments import detect_key_moments
from continuum.capture.summarize import (
    STORE_THRESHOLD,
    ChunkJudgement,
    judge_chunk,
    session_snapshot,
    summarize_session,
)
from continuum.capture.topics import extract_entities, extract_projects, topic_slug
from continuum.domain.kinds import MemoryKind
from continuum.domain.memory import (
    CaptureTurn,
    Claim,
    MemoryCandidate,
    Provenance,
    SessionSummary,
)

__all__ = [
    "STORE_THRESHOLD",
    "CaptureTurn",
    "ChunkJudgement",
    "Claim",
    "MemoryCandidate",
    "MemoryKind",
    "Provenance",
    "SessionSummary",
    "Triage",
    "chunk_messages",
    "detect_key_moments",
    "detect_sentiment",
    "extract_entities",
    "extract_projects",
    "judge_chunk",
    "session_snapshot",
    "summarize_session",
    "topic_slug",
    "triage",
]
