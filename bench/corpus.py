"""Deterministic synthetic conversation turns for benchmarks (seeded, no external data)."""

from __future__ import annotations

import random

SUBJECTS = [
    "Postgres",
    "the garden",
    "Hoffmann",
    "the Atlas project",
    "the trip to Lyon",
    "the budget",
    "Emma's birthday",
    "the new laptop",
    "the kitchen",
    "the release",
]
TEMPLATES = [
    "Let's go with {s} for now, it's the simplest option.",
    "I'm still waiting for a reply about {s}, nobody has confirmed yet.",
    "I prefer to talk about {s} in the morning, I'm sharper then.",
    "Remind me to call about {s} on Tuesday at 10.",
    "I will send the notes on {s} by Friday.",
    "We decided to postpone {s} until next month.",
    "Honestly {s} went better than I expected this week.",
    "Can you summarise what we said about {s} last time?",
    "ok",
    "thanks!",
    "Sure, here is what I found about {s}: several options with different trade-offs.",
    "I'm stuck on {s}, the numbers don't add up.",
]  # fmt: skip


def turns(count: int, seed: int = 7) -> list[tuple[str, str]]:
    """`count` (role, text) pairs mixing key moments, small talk and assistant replies."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        text = rng.choice(TEMPLATES).format(s=rng.choice(SUBJECTS))
        out.append(("assistant" if i % 3 == 2 else "user", text))
    return out
