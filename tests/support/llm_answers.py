"""What the LLM tests ask the fake endpoint about and what it answers: transcript lines and a
chunk of turns about the garden, the chunk judge's verdict on them (one memory citing a line
that does not exist) and a session summary."""

from __future__ import annotations

from tests.support.events import turn

LINES = ["[0] 2026-11-21 09:30 user: hello"]
CHUNK = [
    turn("Let's go with Hoffmann Landscaping for the garden.", message_id="m0", at=0),
    turn("I'm still waiting for Hoffmann to confirm the drainage price.", message_id="m1", at=20),
    turn("Noted, I'll keep the drainage question open.", role="assistant", message_id="m2", at=25),
]
VERDICT = {
    "category": "project_planning",
    "importance": 8,
    "memories": [
        {"kind": "decision", "content": "Jason chose Hoffmann Landscaping for the garden.",
         "importance": 9, "confidence": 0.9, "lines": [0]},
        {"kind": "open_thread", "content": "Drainage cost is not yet confirmed by Hoffmann.",
         "importance": 7, "lines": [1, 2]},
        {"kind": "fact", "content": "Cites a line that does not exist.", "importance": 6,
         "lines": [99]},
    ],
}  # fmt: skip
SUMMARY = {
    "summary": "Jason hired Hoffmann Landscaping for the garden, starting December 2nd; the "
    "drainage price is still to be confirmed.",
    "topics": ["Hoffmann Landscaping", "garden", "drainage"],
    "decisions": ["Hoffmann Landscaping does the garden, starting December 2nd."],
    "action_items": [
        {"text": "Hoffmann confirms whether the price includes drainage.", "owner": "other",
         "due": "2026-11-24"},
    ],
    "key_facts": ["Jason prefers the volume at 75%."],
    "sentiment": "neutral",
}  # fmt: skip
