"""The LoCoMo dataset: conversations as timestamped turns, scored questions with their
evidence turns, and the conversations written as OpenClaw-style session transcripts.

Only turns reach a system (transcripts, baselines); the questions' evidence is the scorer's.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.eval.scoring import CATEGORIES

TURN_SPACING = timedelta(seconds=30)  # LoCoMo dates sessions only; turns follow its start
_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")  # also 'D:11:26' and 'D30:05' as written in the data


@dataclass(frozen=True)
class Turn:
    dia_id: str  # LoCoMo's turn id (`D3:7`), the transcript message id
    at: datetime
    role: str  # speaker A is the user, speaker B the assistant
    text: str  # "<speaker>: <text>" plus " [shares image: <caption>]"


@dataclass(frozen=True)
class Session:
    id: str
    started_at: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Conversation:
    instance: str  # `locomo-<sample_id>`: one OpenClaw instance, one namespace
    sessions: tuple[Session, ...]

    @property
    def turns(self) -> list[Turn]:
        """Every turn, oldest first."""
        return sorted((t for s in self.sessions for t in s.turns), key=lambda t: t.at)


@dataclass(frozen=True)
class Question:
    qid: str  # `<sample_id>#<index in the sample's qa list>`
    instance: str
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Split:
    conversations: list[Conversation]
    questions: list[Question]
    dropped: int  # questions of a scored category without a valid evidence turn


def parse_time(text: str) -> datetime:
    """LoCoMo's '1:56 pm on 8 May, 2023'; it gives no time zone, so UTC."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares image: {turn['blip_caption']}]"
    return text


def evidence_ids(evidence: list[Any], valid: set[str]) -> tuple[str, ...]:
    """The distinct valid turn ids of an evidence list, in order. Entries may hold several
    ids ('D8:6; D9:17') and odd spellings ('D:11:26', 'D30:05' for D30:5)."""
    found: list[str] = []
    for entry in evidence:
        for token in re.split(r"[;,\s]+", str(entry)):
            match = _EVIDENCE.fullmatch(token)
            if match is None:
                continue
            dia_id = f"D{match[1]}:{int(match[2])}"
            if dia_id in valid and dia_id not in found:
                found.append(dia_id)
    return tuple(found)


def _conversation(sample: dict[str, Any]) -> Conversation:
    conv, sample_id = sample["conversation"], sample["sample_id"]
    numbers = sorted(int(m[1]) for key in conv if (m := _SESSION_KEY.fullmatch(key)))
    sessions = []
    for number in numbers:
        if not conv[f"session_{number}"]:
            continue
        start = parse_time(conv[f"session_{number}_date_time"])
        turns = tuple(
            Turn(
                dia_id=turn["dia_id"],
                at=start + index * TURN_SPACING,
                role="user" if turn["speaker"] == conv["speaker_a"] else "assistant",
                text=turn_text(turn),
            )
            for index, turn in enumerate(conv[f"session_{number}"])
        )
        session_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"locomo:{sample_id}:session_{number}"))
        sessions.append(Session(session_id, start, turns))
    return Conversation(f"locomo-{sample_id}", tuple(sessions))


def load(path: Path) -> Split:
    """The conversations and the scored questions (categories 1-4 with valid evidence)."""
    conversations, questions, dropped = [], [], 0
    for sample in json.loads(path.read_text()):
        conversation = _conversation(sample)
        conversations.append(conversation)
        valid = {
            turn["dia_id"]
            for key, turns in sample["conversation"].items()
            if _SESSION_KEY.fullmatch(key)
            for turn in turns
        }
        for index, qa in enumerate(sample["qa"]):
            if qa["category"] not in CATEGORIES:
                continue
            evidence = evidence_ids(qa["evidence"], valid)
            if not evidence:
                dropped += 1
                continue
            qid = f"{sample['sample_id']}#{index}"
            questions.append(
                Question(qid, conversation.instance, qa["question"], qa["category"], evidence)
            )
    return Split(conversations, questions, dropped)


def _iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def write_transcripts(conversations: list[Conversation], root: Path) -> list[Path]:
    """One OpenClaw instance directory per conversation under `root`, one JSONL file per
    session (a `session` header, then `message` entries whose id is the turn's dia_id);
    returns the instance directories."""
    instances = []
    for conversation in conversations:
        instance = root / conversation.instance
        directory = instance / "agents" / "main" / "sessions"
        directory.mkdir(parents=True, exist_ok=True)
        for session in conversation.sessions:
            header = {"type": "session", "version": 3, "id": session.id,
                      "timestamp": _iso(session.started_at), "cwd": "/locomo"}  # fmt: skip
            entries: list[dict[str, Any]] = [header]
            parent = None
            for turn in session.turns:
                message = {"role": turn.role, "content": [{"type": "text", "text": turn.text}]}
                entries.append({"type": "message", "id": turn.dia_id, "parentId": parent,
                                "timestamp": _iso(turn.at), "message": message})  # fmt: skip
                parent = turn.dia_id
            lines = (json.dumps(entry, ensure_ascii=False) + "\n" for entry in entries)
            (directory / f"{session.id}.jsonl").write_text("".join(lines))
        instances.append(instance)
    return instances
