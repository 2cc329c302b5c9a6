"""Summary quality: the deterministic session summariser scored on the gold set in
`bench/gold/summaries.json` (precision and recall of topics, decisions and action items, and
how many dated action items are found with the right date) beside the previous version, whose outputs on
the same conversations are frozen in `bench/gold/summaries.baseline.json`.

`python -m bench.summary_bench --freeze` rewrites that file from the current code: run it
before changing the summariser, so the next report compares against what was there.

Matching is by content words, independent of the summariser's own word lists: an item
matches a gold item when the Dice overlap of their content words is at least 0.5 (each
gold item matched at most once); a topic matches when it shares a word with one of the
gold topic's alternatives.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import ROOT, Options, Section
from continuum.domain.text import word_set

GOLD = ROOT / "bench" / "gold" / "summaries.json"
BASELINE = ROOT / "bench" / "gold" / "summaries.baseline.json"
NEEDS_SERVERS = False
TURN_GAP = timedelta(seconds=30)
MIN_DICE = 0.5
# Function words, and the words summaries add around an item ("User committed to …",
# "Decided to …") or put in its time phrase (scored separately, as the due date).
_IGNORED = word_set(
    """a an the to of for on in at by with and or but from about into it its this that these
    those is are was were be been will would can could should i me my we our you your they
    them their he she his her user assistant committed decided decision go going remind
    reminder today tonight tomorrow morning afternoon evening night week next last monday
    tuesday wednesday thursday friday saturday sunday before after has have had if"""
)
_WORD = re.compile(r"[a-z0-9][a-z0-9_'-]*")


def content_words(text: str) -> set[str]:
    """Lower-case content words of `text`, possessives and plural -s dropped."""
    words = set()
    for word in _WORD.findall(text.lower()):
        word = word.removesuffix("'s").strip("'-")
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        if word and word not in _IGNORED:
            words.add(word)
    return words


def _dice(a: set[str], b: set[str]) -> float:
    return 2 * len(a & b) / (len(a) + len(b)) if a and b else 0.0


def match_items(predicted: list[str], gold: list[str]) -> list[tuple[int, int]]:
    """(predicted index, gold index) pairs, best overlaps first (then earlier items), each
    side used once."""
    pairs = sorted(
        (
            (_dice(content_words(p), content_words(g)), i, j)
            for i, p in enumerate(predicted)
            for j, g in enumerate(gold)
        ),
        key=lambda pair: (-pair[0], pair[1], pair[2]),
    )
    used_p: set[int] = set()
    used_g: set[int] = set()
    matched = []
    for overlap, i, j in pairs:
        if overlap >= MIN_DICE and i not in used_p and j not in used_g:
            used_p.add(i)
            used_g.add(j)
            matched.append((i, j))
    return matched


def match_topics(predicted: list[str], gold: list[str]) -> int:
    """How many gold topics a distinct predicted topic covers."""
    used: set[int] = set()
    covered = 0
    for topic in gold:
        wanted = [content_words(alt) for alt in topic.split("|")]
        hit = next(
            (
                i
                for i, p in enumerate(predicted)
                if i not in used and any(content_words(p) & w for w in wanted)
            ),
            None,
        )
        if hit is not None:
            used.add(hit)
            covered += 1
    return covered


def load_gold() -> list[dict[str, Any]]:
    conversations: list[dict[str, Any]] = json.loads(GOLD.read_text())["conversations"]
    return conversations


def _turns(conversation: dict[str, Any]) -> list[Any]:
    from continuum.capture import CaptureTurn

    start = datetime.fromisoformat(conversation["at"])
    return [
        CaptureTurn(
            message_id=f"{conversation['id']}:{index}",
            role=role,
            content=text,
            created_at=start + index * TURN_GAP,
            session_id=conversation["id"],
            channel=conversation["channel"],
        )
        for index, (role, text) in enumerate(conversation["turns"])
    ]


def vocabulary(gold: list[dict[str, Any]]) -> Any:
    """The gold set as one tenant's recent turns: its users' words and how many turns use each."""
    from continuum.capture.topics import Vocabulary

    return Vocabulary(text for c in gold for role, text in c["turns"] if role == "user")


def summarize(conversation: dict[str, Any], words: Any) -> dict[str, Any]:
    """What the current summariser makes of one gold conversation."""
    from continuum.capture import summarize_session

    summary = summarize_session(_turns(conversation), words)
    said = datetime.fromisoformat(conversation["at"]).date()
    due = {item: (when.date() - said).days for item, when in summary.due_at.items()}
    return {
        "summary": summary.summary,
        "topics": summary.topics,
        "decisions": summary.key_decisions,
        "action_items": [
            {"text": item, "due_days": due.get(item)} for item in summary.action_items
        ],
    }


def score(gold: Iterable[dict[str, Any]], outputs: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Micro-averaged precision and recall (in %) of each field over the gold set, and the
    share of gold action items with a due date that were found with that date."""
    counts = dict.fromkeys(
        ("topics_p", "topics_g", "topics_m", "decisions_p", "decisions_g", "decisions_m",
         "actions_p", "actions_g", "actions_m", "due_g", "due_ok"), 0
    )  # fmt: skip
    for conversation in gold:
        expected, got = conversation["expected"], outputs[conversation["id"]]
        counts["topics_p"] += len(got["topics"])
        counts["topics_g"] += len(expected["topics"])
        counts["topics_m"] += match_topics(got["topics"], expected["topics"])
        decisions = match_items(got["decisions"], expected["decisions"])
        counts["decisions_p"] += len(got["decisions"])
        counts["decisions_g"] += len(expected["decisions"])
        counts["decisions_m"] += len(decisions)
        predicted = [item["text"] for item in got["action_items"]]
        wanted = [item["text"] for item in expected["action_items"]]
        actions = match_items(predicted, wanted)
        counts["actions_p"] += len(predicted)
        counts["actions_g"] += len(wanted)
        counts["actions_m"] += len(actions)
        counts["due_g"] += sum(
            1 for item in expected["action_items"] if item["due_days"] is not None
        )
        counts["due_ok"] += sum(
            1
            for i, j in actions
            if expected["action_items"][j]["due_days"] is not None
            and got["action_items"][i]["due_days"] == expected["action_items"][j]["due_days"]
        )

    def pct(part: int, whole: int) -> float:
        return round(100 * part / whole, 1) if whole else 0.0

    result = {}
    for field in ("topics", "decisions", "actions"):
        result[f"{field}_precision"] = pct(counts[f"{field}_m"], counts[f"{field}_p"])
        result[f"{field}_recall"] = pct(counts[f"{field}_m"], counts[f"{field}_g"])
    result["due_accuracy"] = pct(counts["due_ok"], counts["due_g"])
    return result


_ROWS = [
    ("topics_precision", "topics: precision"),
    ("topics_recall", "topics: recall"),
    ("decisions_precision", "decisions: precision"),
    ("decisions_recall", "decisions: recall"),
    ("actions_precision", "action items: precision"),
    ("actions_recall", "action items: recall"),
    ("due_accuracy", "action items: right due date"),
]


def outputs(gold: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The current summariser's output on each gold conversation, by id."""
    words = vocabulary(gold)
    return {c["id"]: summarize(c, words) for c in gold}


def run(urls: dict[str, str], options: Options) -> list[Section]:
    gold = load_gold()
    ours = score(gold, outputs(gold))
    frozen = json.loads(BASELINE.read_text())
    before = score(gold, frozen["outputs"])
    section = Section(f"Deterministic session summaries ({len(gold)} gold conversations)")
    for key, label in _ROWS:
        section.add(label, ours[key], before[key], "%", f"summariser at {frozen['revision']}")
    return [section]


def freeze() -> Path:
    """Record the current summariser's outputs on the gold set as the baseline."""
    revision = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    frozen = {"revision": revision, "outputs": outputs(load_gold())}
    BASELINE.write_text(json.dumps(frozen, indent=1, ensure_ascii=False) + "\n")
    return BASELINE


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--freeze", action="store_true", help="rewrite the baseline file")
    if parser.parse_args().freeze:
        print(f"wrote {freeze()}")
    else:
        parser.print_help()
