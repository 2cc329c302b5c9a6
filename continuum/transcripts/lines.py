"""Reading complete lines from a growing JSONL file, and the parse loop all parsers share.

`read_complete_lines` never consumes a half-written last line: `next_offset` always sits
right after the last complete line, so a cursor stored from it never skips unread data.
`EntryParser` turns lines into JSON entries and hands each one to a format's `handle`.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from continuum.transcripts.models import (
    ErrorKind,
    ParseError,
    ParseResult,
    ParserState,
    Role,
    TranscriptMessage,
    parse_timestamp,
)

DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024
DEFAULT_CHUNK_BYTES = 64 * 1024
IMAGE_PLACEHOLDER = "[image shared]"

Entry = dict[str, Any]


class TranscriptVanished(FileNotFoundError):
    """The transcript file disappeared (rotated, archived or deleted) before it was read."""


@dataclass(frozen=True)
class Line:
    """One complete line: decoded text, start byte offset (None for SQLite rows) and number."""

    text: str
    offset: int | None
    number: int

    @property
    def locator(self) -> str:
        """A stable id for the line's position, for records that carry no id of their own."""
        return f"off-{self.offset}" if self.offset is not None else f"seq-{self.number}"


@dataclass
class LineBatch:
    """The complete lines read from `start_offset`; resume at `next_offset`."""

    start_offset: int
    next_offset: int
    lines: list[Line] = field(default_factory=list)
    errors: list[ParseError] = field(default_factory=list)
    partial_tail: bool = False
    truncated: bool = False
    line_count: int = 0  # complete lines scanned, kept or not


class _Scanner:
    """Splits a byte stream into lines, dropping the bytes of lines over the size limit."""

    def __init__(self, start: int, max_line_bytes: int, max_lines: int | None) -> None:
        self.batch = LineBatch(start_offset=start, next_offset=start)
        self.max_line_bytes = max_line_bytes
        self.max_lines = max_lines
        self.buffer = bytearray()
        self.length = 0
        self.number = 0

    @property
    def full(self) -> bool:
        return self.max_lines is not None and self.number >= self.max_lines

    def feed(self, chunk: bytes) -> None:
        start = 0
        while start < len(chunk) and not self.full:
            newline = chunk.find(b"\n", start)
            end = len(chunk) if newline < 0 else newline
            self.length += end - start
            if self.length <= self.max_line_bytes:
                self.buffer += chunk[start:end]
            else:
                self.buffer.clear()
            if newline < 0:
                return
            self._complete()
            start = newline + 1

    def _complete(self) -> None:
        self.number += 1
        offset = self.batch.next_offset
        if self.length > self.max_line_bytes:
            detail = f"{self.length} bytes exceed the {self.max_line_bytes}-byte limit"
            self._error("oversize_line", detail, offset)
        else:
            self._decode(bytes(self.buffer), offset)
        self.batch.next_offset = offset + self.length + 1
        self.buffer.clear()
        self.length = 0

    def _decode(self, raw: bytes, offset: int) -> None:
        try:
            text = raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as exc:
            self._error("invalid_utf8", f"invalid UTF-8 at byte {exc.start} of the line", offset)
            return
        if text.strip():
            self.batch.lines.append(Line(text=text, offset=offset, number=self.number))

    def _error(self, kind: ErrorKind, detail: str, offset: int) -> None:
        self.batch.errors.append(
            ParseError(kind=kind, detail=detail, offset=offset, line_no=self.number)
        )


def read_complete_lines(
    path: Path,
    offset: int = 0,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    *,
    max_lines: int | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> LineBatch:
    """Complete lines from `offset` on (at most `max_lines`), streaming in `chunk_bytes` reads.

    A file shorter than `offset` gives an empty batch with `truncated=True`; a missing file
    raises `TranscriptVanished`.
    """
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size < offset:
                return LineBatch(start_offset=offset, next_offset=offset, truncated=True)
            handle.seek(offset)
            scanner = _Scanner(offset, max_line_bytes, max_lines)
            while not scanner.full and (chunk := handle.read(chunk_bytes)):
                scanner.feed(chunk)
    except FileNotFoundError as exc:
        raise TranscriptVanished(exc.errno, "transcript vanished", str(path)) from exc
    scanner.batch.partial_tail = scanner.length > 0
    scanner.batch.line_count = scanner.number
    return scanner.batch


# Signatures of files that are not text lines at all (a compressed or packed transcript).
_SIGNATURES = {
    b"\x1f\x8b": "gzip-compressed data",
    b"BZh": "bzip2-compressed data",
    b"\xfd7zXZ\x00": "xz-compressed data",
    b"\x28\xb5\x2f\xfd": "zstd-compressed data",
    b"PK\x03\x04": "a zip archive",
    b"SQLite format 3\x00": "a SQLite database",
}


def binary_format(path: Path) -> str | None:
    """What a file is when its first bytes say it is not text lines (gzip...), else None."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
    except FileNotFoundError as exc:
        raise TranscriptVanished(exc.errno, "transcript vanished", str(path)) from exc
    return next((name for magic, name in _SIGNATURES.items() if head.startswith(magic)), None)


def decode_entry(line: Line) -> Entry | ParseError:
    """The JSON object on `line`, or the error saying why there is none."""
    try:
        value = json.loads(line.text)
    except json.JSONDecodeError as exc:
        return ParseError(
            kind="malformed_json", detail=exc.msg, offset=line.offset, line_no=line.number
        )
    if not isinstance(value, dict):
        detail = f"top-level JSON {type(value).__name__}, expected an object"
        return ParseError(
            kind="not_an_object", detail=detail, offset=line.offset, line_no=line.number
        )
    return value


@dataclass(frozen=True)
class BlockSpec:
    """How a format names its content blocks: kept text, images, and skip reasons by type."""

    text_types: frozenset[str]
    image_types: frozenset[str]
    skip_reasons: dict[str, str]


@dataclass
class Blocks:
    """Text and the number of images gathered from message content, and how many dropped."""

    texts: list[str] = field(default_factory=list)
    images: int = 0
    dropped: int = 0

    @property
    def text(self) -> str:
        return "\n".join(t for t in self.texts if t).strip()


def collect_blocks(content: object, spec: BlockSpec, result: ParseResult) -> Blocks:
    """Split string-or-block-list content into text and images, counting what is dropped."""
    blocks = Blocks()
    if isinstance(content, str):
        blocks.texts.append(content)
        return blocks
    if not isinstance(content, list):
        return blocks
    for block in content:
        kind = str(block.get("type")) if isinstance(block, dict) else ""  # hashable
        if kind in spec.text_types and isinstance(block.get("text"), str):
            blocks.texts.append(block["text"])
        elif kind in spec.image_types:
            blocks.images += 1
            result.skip("image")
        else:
            blocks.dropped += 1
            result.skip(spec.skip_reasons.get(kind, "unknown_block"))
    return blocks


class EntryParser(ABC):
    """Feeds decoded entries to `handle`; its state carries session facts across batches."""

    def __init__(self, state: ParserState | None = None) -> None:
        self.state = state or ParserState()

    def feed(self, batch: LineBatch) -> ParseResult:
        """Parse one batch; its reading errors are reported in the result."""
        result = self.feed_lines(batch.lines)
        result.errors[:0] = batch.errors
        return result

    def feed_lines(self, lines: Iterable[Line]) -> ParseResult:
        """Parse lines (or SQLite rows dressed as lines) in order."""
        result = ParseResult()
        for line in lines:
            entry = decode_entry(line)
            if isinstance(entry, ParseError):
                result.errors.append(entry)
                continue
            at = parse_timestamp(entry.get("timestamp"))
            if at is not None:
                self.state.observe(at)
            self.handle(entry, line, at, result)
        self._snapshot(result)
        return result

    @abstractmethod
    def handle(self, entry: Entry, line: Line, at: datetime | None, result: ParseResult) -> None:
        """Turn one entry into messages, compactions or skip counts on `result`."""

    def emit(
        self,
        result: ParseResult,
        line: Line,
        role: Role,
        blocks: Blocks,
        text: str | None = None,
        **fields: Any,
    ) -> TranscriptMessage | None:
        """Add a message with `text` (default: the blocks' text) or the image placeholder.

        A message without a time of its own takes the nearest earlier entry's (or the
        session header's) and is flagged `time_inferred`; only when there is none at all is
        it reported as `missing_timestamp`.

        Returns None when there is nothing to keep; content made only of dropped blocks
        (thinking, tool calls) was counted already, anything else is counted as `empty`.
        """
        images = blocks.images
        text = (blocks.text if text is None else text).strip() or (
            IMAGE_PLACEHOLDER if images else ""
        )
        if not text:
            if not blocks.dropped:
                result.skip("empty")
            return None
        inferred = fields.get("created_at") is None
        if inferred:
            fields["created_at"] = self.state.previous_at or self.state.started_at
        if fields["created_at"] is None:
            result.errors.append(
                ParseError(
                    kind="missing_timestamp",
                    detail=f"{role} message without a timestamp and no earlier entry's time",
                    offset=line.offset,
                    line_no=line.number,
                )
            )
            return None
        message = TranscriptMessage(
            role=role,
            content=text,
            has_image=images > 0,
            byte_offset=line.offset,
            time_inferred=inferred,
            **fields,
        )
        result.messages.append(message)
        self.state.observe(message.created_at)
        self.state.last_message_id = message.message_id
        if role == "assistant":
            self.state.last_assistant_id = message.message_id
            self.state.last_assistant_text = message.content
        return message

    def invalid(self, result: ParseResult, line: Line, detail: str) -> None:
        """Report an entry of a known type whose shape is wrong."""
        result.errors.append(
            ParseError(kind="invalid_entry", detail=detail, offset=line.offset, line_no=line.number)
        )

    def _snapshot(self, result: ParseResult) -> None:
        ctx = self.state
        result.session_id = ctx.session_id
        result.started_at = ctx.started_at
        result.cwd = ctx.cwd
        result.model = ctx.model
        result.cron = ctx.cron
        result.cron_report = ctx.cron_report()
