"""The handoff (R5): does the user's last turn say the conversation continues on another
channel, which one, and what should that channel's first context know of where it stands."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Self

from pydantic import BaseModel, Field, model_validator

from continuum.capture.handoffs import CHANNELS
from continuum.inference.prompts.base import Prompt

if TYPE_CHECKING:
    Channel = str
else:  # the channels a handoff can name (the rule's channel words)
    Channel = Literal[CHANNELS]


class LLMHandoff(BaseModel):
    moving: bool = Field(
        description="true only if the user's last line says the conversation continues, "
        "or is picked up, on another channel"
    )
    to_channel: Channel | None = Field(
        default=None, description="the channel it moves to; null when the user names none"
    )
    summary: str = Field(
        default="",
        max_length=400,
        description="for the next channel: where the conversation stands, what is open",
    )

    @model_validator(mode="after")
    def _summarised(self) -> Self:
        """A move needs a summary to hand over."""
        if self.moving and len(self.summary.strip()) < 10:
            raise ValueError("a move needs a summary of at least 10 characters")
        return self


PROMPT = Prompt(
    name="handoff",
    version="1",
    instructions=(
        "A user talking with an assistant on one channel may say that the conversation "
        'continues elsewhere ("let\'s take this to Telegram", "I\'ll pick it up on Discord '
        'tonight"). Judge only the LAST line of the transcript, said by the user. `moving` is '
        "true only when it states, not asks or supposes, that the conversation moves to "
        "another channel; questions, conditions, the past, negations and mere mentions of a "
        "channel are not moves. `to_channel` is that channel, or null when none is named. "
        "`summary`: one or two plain sentences, at most 300 characters, telling the "
        "assistant on the next channel where the conversation stands and what is still open, "
        "in the third person; empty when `moving` is false."
    ),
    schema=LLMHandoff,
    max_tokens=300,
)
