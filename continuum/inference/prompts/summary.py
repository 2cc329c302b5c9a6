"""The session summary (R6, R9): what a finished conversation was about, what was decided,
what is to be done and by when, the facts worth keeping, and how the user felt."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, field_validator

from continuum.domain.memory import Sentiment
from continuum.inference.prompts.base import Prompt

Item = Annotated[str, Field(min_length=3, max_length=300)]


class ActionItem(BaseModel):
    text: Item
    owner: Literal["user", "assistant", "other"] | None = None
    due: str | None = Field(
        default=None, description="ISO 8601 date or date-time, resolved from the conversation"
    )

    @field_validator("due")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        """A due time must be a real ISO date or date-time; it is kept normalised."""
        return None if value is None else datetime.fromisoformat(value).isoformat()


class LLMSessionSummary(BaseModel):
    summary: str = Field(min_length=10, max_length=1200)
    topics: list[Annotated[str, Field(min_length=2, max_length=60)]] = Field(max_length=5)
    decisions: list[Item] = Field(default_factory=list, max_length=8)
    action_items: list[ActionItem] = Field(default_factory=list, max_length=8)
    key_facts: list[Item] = Field(default_factory=list, max_length=8)
    sentiment: Sentiment


PROMPT = Prompt(
    name="session_summary",
    version="1",
    instructions=(
        "You summarise a finished conversation between a user and an assistant for the "
        "user's long-term memory. Write `summary` as two to four plain sentences a person "
        "would accept: what the conversation was about and how it ended. `topics`: up to 5 "
        "short noun phrases (names, things, projects), never filler words. `decisions`: what "
        "was decided. `action_items`: what someone committed or was asked to do, each once, "
        "with its owner and, when a time was said, `due` as an ISO 8601 date or date-time "
        "resolved against the conversation's date. `key_facts`: stable facts about the user "
        "worth remembering. `sentiment`: the user's mood overall. Use only what the "
        "conversation says; leave a list empty rather than guess."
    ),
    schema=LLMSessionSummary,
    max_tokens=1000,
)
