"""The producer contract: versioned event models (`turn`, `idle`, `pre_compaction`,
`session_end`) and their validation into clear, field-naming errors."""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from continuum.config import get_settings
from continuum.domain.storable import UNSTORABLE

SCHEMA_VERSION = 1
EVENT_KINDS = ("turn", "idle", "pre_compaction", "session_end")
# Accepted event times: from the Unix epoch to a day ahead of the receiver's clock. Postgres
# stores years up to 294276 and BC dates, Python's datetime neither, so one such row would
# break every read of its tenant.
EARLIEST_TS = datetime(1970, 1, 1, tzinfo=UTC)
MAX_CLOCK_AHEAD = timedelta(days=1)
MAX_NESTING = 32  # levels of objects/arrays inside an event (metadata, message lists)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _plain_identifier(value: str) -> str:
    """Identifiers end up in keys, file lines and log lines: no control characters, no
    surrounding whitespace."""
    if _CONTROL.search(value):
        raise ValueError("must not contain control characters (newlines, tabs, NUL)")
    if value != value.strip():
        raise ValueError("must not start or end with whitespace")
    return value


def _not_a_number(value: Any) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError("must be an ISO-8601 string with a timezone, not a number")
    return value


def in_time_window(value: datetime) -> bool:
    """Whether an (aware) time is one an event or a transcript line may carry."""
    return EARLIEST_TS <= value <= datetime.now(UTC) + MAX_CLOCK_AHEAD


def _in_window(value: datetime) -> datetime:
    if not in_time_window(value):
        raise ValueError(
            f"{value.isoformat()} is outside the accepted window "
            f"{EARLIEST_TS:%Y-%m-%d} .. now + {MAX_CLOCK_AHEAD.days} day"
        )
    return value


Identifier = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_plain_identifier)]
# Its own length, not a narrowed Identifier: pydantic words a limit laid over another type's
# validator generically ("at most 64 items after validation").
Channel = Annotated[str, Field(min_length=1, max_length=64), AfterValidator(_plain_identifier)]
Timestamp = Annotated[AwareDatetime, BeforeValidator(_not_a_number), AfterValidator(_in_window)]


def json_type(value: Any) -> str:
    """What a parsed JSON value is, in JSON's words (`null`, not Python's `NoneType`)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str | bytes):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return "an object" if isinstance(value, Mapping) else type(value).__name__


class EventError(ValueError):
    """An event is invalid. `errors` lists `(field path, message)` pairs."""

    def __init__(self, errors: list[tuple[str, str]], index: int | None = None) -> None:
        self.errors = errors
        self.index = index
        where = f"event #{index}: " if index is not None else ""
        detail = "; ".join(f"{field}: {message}" for field, message in errors)
        super().__init__(f"invalid {where}{detail}")


class EventBase(BaseModel):
    """Fields every event carries."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)

    schema_version: Literal[1] = 1
    event_id: uuid.UUID = Field(default_factory=uuid.uuid4)
    namespace: str
    session_id: Identifier
    channel: Channel
    user_id: Identifier | None = None
    ts: Timestamp

    @field_validator("namespace")
    @classmethod
    def _known_namespace(cls, value: str) -> str:
        get_settings().check_namespace(value)
        return value


class ChatMessage(BaseModel):
    """A message in a list a runtime hands over (pre-compaction turns, session end)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    role: Literal["user", "assistant", "system", "tool", "developer"]
    content: str | list[Any] | None = None
    ts: Timestamp | None = None
    message_id: Identifier | None = None


class TurnEvent(EventBase):
    kind: Literal["turn"] = "turn"
    role: Literal["user", "assistant", "system"]
    content: str
    message_id: Identifier | None = None
    parent_id: Identifier | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("content")
    @classmethod
    def _content_size(cls, value: str) -> str:
        limit = get_settings().max_content_chars
        if not value.strip():
            raise ValueError("must not be empty")
        if len(value) > limit:
            raise ValueError(
                f"is {len(value)} characters, over the limit of {limit} "
                "(CONTINUUM_MAX_CONTENT_CHARS); split the message"
            )
        return value

    @property
    def effective_message_id(self) -> str:
        """The id that makes the message unique in its session (event id when none given)."""
        return self.message_id or str(self.event_id)


class IdleEvent(EventBase):
    kind: Literal["idle"] = "idle"
    idle_ms: Annotated[int, Field(ge=0)]
    last_activity_at: Timestamp


class PreCompactionEvent(EventBase):
    kind: Literal["pre_compaction"] = "pre_compaction"
    compaction_id: Identifier
    tokens_used: Annotated[int, Field(ge=0)] | None = None
    window: Annotated[int, Field(ge=0)] | None = None
    turns: list[ChatMessage] = Field(default_factory=list)


class SessionEndEvent(EventBase):
    kind: Literal["session_end"] = "session_end"
    ended_at: Timestamp
    reason: Annotated[str, Field(max_length=200)] | None = None
    duration_s: Annotated[float, Field(ge=0)] | None = None
    connected: bool = True
    is_reminder: bool = False
    message_count: Annotated[int, Field(ge=0)] | None = None
    messages: list[ChatMessage] = Field(default_factory=list)

    @model_validator(mode="after")
    def _ended_after_start(self) -> SessionEndEvent:
        if self.ended_at < self.ts and (self.ts - self.ended_at).total_seconds() > 1:
            raise ValueError("ended_at is before ts")
        return self


Event = Annotated[
    TurnEvent | IdleEvent | PreCompactionEvent | SessionEndEvent, Field(discriminator="kind")
]
_event_adapter: TypeAdapter[Event] = TypeAdapter(Event)


def _field_errors(exc: ValidationError) -> list[tuple[str, str]]:
    errors = []
    for err in exc.errors():
        # Drop the discriminator tag pydantic puts first in the location.
        loc = [str(part) for part in err["loc"] if str(part) not in EVENT_KINDS]
        message = err["msg"].removeprefix("Value error, ")
        errors.append((".".join(loc) or "event", message))
    return errors


def _unstorable(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Values no store can keep, by field path: NUL characters and unpaired surrogates in any
    text or field name (Postgres refuses them, and one would fail its whole batch), numbers
    that are not finite, and nesting deeper than MAX_NESTING. Walks without recursion."""
    errors: list[tuple[str, str]] = []
    stack: list[tuple[str, Any, int]] = [("", data, 0)]
    while stack:
        path, value, depth = stack.pop()
        if isinstance(value, str):
            if UNSTORABLE.search(value):
                errors.append((path, "contains a NUL character or an unpaired surrogate"))
        elif isinstance(value, float) and not math.isfinite(value):
            errors.append((path, f"must be a finite number, got {value}"))
        elif isinstance(value, Mapping | list | tuple):
            if depth >= MAX_NESTING:
                errors.append((path, f"is nested deeper than {MAX_NESTING} levels"))
                continue
            items = value.items() if isinstance(value, Mapping) else enumerate(value)
            for key, item in items:
                name = str(key)
                bad_name = bool(UNSTORABLE.search(name))
                child = ".".join(filter(None, (path, ascii(name) if bad_name else name)))
                if bad_name:
                    errors.append((child, "the field name contains a NUL or an unpaired surrogate"))
                stack.append((child, item, depth + 1))
    return sorted(errors)


def parse_event(data: Mapping[str, Any] | Any, index: int | None = None) -> Event:
    """Validate one event (a mapping with a `kind`); raise EventError naming each bad field."""
    if not isinstance(data, Mapping):
        raise EventError([("event", f"must be a JSON object, got {json_type(data)}")], index)
    unstorable = _unstorable(data)
    if unstorable:
        raise EventError(unstorable, index)
    kind = data.get("kind")
    if kind not in EVENT_KINDS:
        raise EventError(
            [("kind", f"unknown kind {kind!r}; expected one of {', '.join(EVENT_KINDS)}")], index
        )
    version = data.get("schema_version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise EventError(
            [("schema_version", f"unsupported version {version!r}; this build reads 1")], index
        )
    try:
        return _event_adapter.validate_python(dict(data))
    except ValidationError as exc:
        raise EventError(_field_errors(exc), index) from None
    except ValueError as exc:  # raised outside a field validator (settings checks)
        raise EventError([("event", str(exc))], index) from None


def parse_events(items: Iterable[Mapping[str, Any] | Any]) -> list[Event]:
    """Validate a batch; the first invalid event raises EventError with its index."""
    batch = list(items)
    limit = get_settings().max_batch_events
    if len(batch) > limit:
        raise EventError(
            [("events", f"batch of {len(batch)} is over the limit of {limit}; split it")]
        )
    return [parse_event(item, index) for index, item in enumerate(batch)]


def event_payload(event: Event) -> dict[str, Any]:
    """The JSON-safe wire form of an event (what goes on the queue)."""
    return event.model_dump(mode="json", exclude_none=True)
