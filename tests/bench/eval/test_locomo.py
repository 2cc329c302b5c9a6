"""The eval's LoCoMo reader: scored questions and their evidence, and transcripts that
Continuum's own OpenClaw parser reads back as the turns."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from bench.eval.locomo import evidence_ids, load, write_transcripts
from continuum.transcripts import discover, openclaw, parser_for, read_complete_lines

SAMPLE = {
    "sample_id": "conv-1",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Bob", "dia_id": "D1:1", "text": "Hi Ann!"},
            {
                "speaker": "Ann",
                "dia_id": "D1:2",
                "text": "Look at this.",
                "blip_caption": "a photo of a dog",
            },
        ],
        "session_2_date_time": "9:05 am on 10 May, 2023",
        "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "I adopted him."}],
        "session_3_date_time": "9:05 am on 11 May, 2023",
        "session_3": [],
    },
    "qa": [
        {"question": "What did Ann share?", "evidence": ["D1:2"], "category": 4},
        {"question": "Adversarial", "evidence": ["D1:1"], "category": 5},
        {"question": "No evidence", "evidence": ["D9:9"], "category": 1},
        {"question": "When?", "evidence": ["D2:01; D1:2", "D:1:2"], "category": 2},
    ],
}


def test_evidence_ids_are_cleaned_deduplicated_and_checked() -> None:
    valid = {"D8:6", "D9:17", "D11:26", "D30:5"}
    raw = ["D8:6; D9:17", "D:11:26", "D30:05", "D8:6", "D99:1", "D08:6"]
    assert evidence_ids(raw, valid) == ("D8:6", "D9:17", "D11:26", "D30:5")


def test_scored_questions_and_their_ids(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([SAMPLE]))
    split = load(path)
    assert [(q.qid, q.instance, q.category, q.evidence) for q in split.questions] == [
        ("conv-1#0", "locomo-conv-1", 4, ("D1:2",)),
        ("conv-1#3", "locomo-conv-1", 2, ("D2:1", "D1:2")),
    ]
    assert split.dropped == 1  # category 5 is excluded, not dropped


def test_transcripts_parse_back_into_the_turns(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([SAMPLE]))
    [instance] = write_transcripts(load(path).conversations, tmp_path / "out")
    found = discover([instance], tmp_path, (openclaw.KIND,))
    assert {s.instance for s in found.sources} == {"locomo-conv-1"}
    messages = [
        m
        for source in found.sources
        for m in parser_for(source).feed(read_complete_lines(source.path)).messages
    ]
    assert sorted((m.created_at, m.message_id, m.role, m.content) for m in messages) == [
        (datetime(2023, 5, 8, 13, 56, tzinfo=UTC), "D1:1", "assistant", "Bob: Hi Ann!"),
        (datetime(2023, 5, 8, 13, 56, 30, tzinfo=UTC), "D1:2", "user",
         "Ann: Look at this. [shares image: a photo of a dog]"),
        (datetime(2023, 5, 10, 9, 5, tzinfo=UTC), "D2:1", "user", "Ann: I adopted him."),
    ]  # fmt: skip
