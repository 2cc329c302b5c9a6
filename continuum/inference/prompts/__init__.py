"""The prompts Continuum sends to an LLM, one module per job, each with its response schema
and version: the chunk judge (`chunk`), the session summary (`summary`), the
pre-compaction takeaways (`takeaways`) and the channel handoff (`handoff`). `PROMPTS` is the
registry by name."""

from __future__ import annotations

from typing import Any

from continuum.inference.prompts import chunk, handoff, summary, takeaways
from continuum.inference.prompts.base import Prompt

PROMPTS: dict[str, Prompt[Any]] = {
    p.name: p for p in (chunk.PROMPT, summary.PROMPT, takeaways.PROMPT, handoff.PROMPT)
}
