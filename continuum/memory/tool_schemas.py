"""What an LLM or MCP client sees of the memory tools (R40–R43, R49): each tool's name,
description and argument model, the message a malformed call gets back, and
`tool_definitions("openai" | "anthropic")`, the function schemas generated from the same
argument models that validate a call, so definitions and validation never drift apart.
Running a call is `continuum.memory.tool_calls`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from continuum.domain.kinds import MemoryKind, kind_literal, kind_names
from continuum.domain.text import snake

if TYPE_CHECKING:
    ToolMemoryType = MemoryKind
else:  # the kinds a model may store through the tools
    ToolMemoryType = kind_literal(kind_names(lambda spec: spec.tool_storable))
ToolFormat = Literal["openai", "anthropic"]


class ToolArgs(BaseModel):
    """The arguments of a memory tool: unknown fields refused, text stripped."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


def _key(value: str) -> str:
    key = snake(value)
    if not key or not key[0].isalpha():
        raise ValueError("must contain letters and start with one, e.g. favorite_color")
    return key


Key = Annotated[str, Field(min_length=1, max_length=80), AfterValidator(_key)]


class StoreMemoryArgs(ToolArgs):
    """Remember something about the user for future conversations."""

    memory_type: ToolMemoryType = Field(description="What kind of memory this is.")
    key: Key = Field(description="Short name, e.g. favorite_color.")
    value: str = Field(min_length=1, max_length=280, description="What to remember.")
    confidence: float = Field(default=0.8, ge=0, le=1, description="How sure you are, 0 to 1.")
    suggest_reminder: bool = Field(
        default=False, description="For a follow_up with a time: suggest a reminder."
    )


class UpdateMemoryArgs(ToolArgs):
    """Replace what is remembered under a key (creates it when unknown)."""

    existing_key: Key = Field(description="Key to update (any case).")
    new_value: str = Field(min_length=1, max_length=280, description="The new value.")
    memory_type: ToolMemoryType | None = Field(default=None, description="Kind, if it changes.")
    confidence: float | None = Field(default=None, ge=0, le=1, description="0 to 1.")


class MemoryTarget(ToolArgs):
    """The memories a call acts on: every version under a key, or one id."""

    key: str | None = Field(default=None, description="Key of the memory (every version).")
    memory_id: int | None = Field(default=None, description="Id of one memory.")

    @model_validator(mode="after")
    def _one_target(self) -> MemoryTarget:
        if (self.key is None) == (self.memory_id is None):
            raise ValueError("give exactly one of key or memory_id")
        return self


class ForgetMemoryArgs(MemoryTarget):
    """Forget a memory: hidden at once, purged for good by the next maintenance."""


class MarkPrivateArgs(MemoryTarget):
    """Mark a memory private: never shown in group or non-main contexts."""

    private: bool = Field(default=True, description="False makes it visible again.")


class ListMemoriesArgs(ToolArgs):
    """List what is remembered, newest first."""

    memory_type: ToolMemoryType | None = Field(default=None, description="Only this kind.")
    channel: str | None = Field(
        default=None, max_length=200, description="Only memories from this channel, e.g. voice."
    )
    limit: int = Field(default=20, ge=1, le=100, description="At most this many.")


def validation_problems(exc: ValidationError) -> str:
    """Every missing, unknown or wrong field of a call, in one message for the LLM."""
    parts = []
    for error in exc.errors():
        field = ".".join(str(p) for p in error["loc"]) or "arguments"
        if error["type"] == "missing":
            parts.append(f"missing required field '{field}'")
        elif error["type"] == "extra_forbidden":
            parts.append(f"unknown field '{field}'")
        else:
            parts.append(f"'{field}': {error['msg']}")
    return "; ".join(parts)


@dataclass(frozen=True)
class Tool:
    """One memory tool as a client sees it: its name and argument model."""

    name: str
    args: type[ToolArgs]

    def schema(self) -> dict[str, Any]:
        schema = _clean(self.args.model_json_schema())
        schema.pop("description", None)  # the tool's own description says it
        return dict(schema)


def _clean(schema: Any) -> Any:
    """Pydantic's JSON schema without titles and `anyOf [T, null]` noise."""
    if isinstance(schema, list):
        return [_clean(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    options = schema.get("anyOf")
    if options and {"type": "null"} in options and len(options) == 2:
        rest = {k: v for k, v in schema.items() if k not in ("anyOf", "default")}
        schema = {**next(o for o in options if o != {"type": "null"}), **rest}
    return {k: _clean(v) for k, v in schema.items() if k != "title"}


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool("store_memory", StoreMemoryArgs),
        Tool("update_memory", UpdateMemoryArgs),
        Tool("forget_memory", ForgetMemoryArgs),
        Tool("mark_private", MarkPrivateArgs),
        Tool("list_memories", ListMemoriesArgs),
    )
}


def tool_definitions(fmt: ToolFormat = "openai") -> list[dict[str, Any]]:
    """Tool (function) definitions for an LLM API: OpenAI `tools` or Anthropic `tools`."""
    definitions = []
    for tool in TOOLS.values():
        description = (tool.args.__doc__ or "").strip()
        if fmt == "anthropic":
            definitions.append(
                {"name": tool.name, "description": description, "input_schema": tool.schema()}
            )
        else:
            definitions.append(
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": description,
                        "parameters": tool.schema(),
                    },
                }
            )
    return definitions
