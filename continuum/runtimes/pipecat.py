"""Pipecat voice bots: the conversation sent to Continuum as it runs, and the context block in
the bot's LLM context when a call starts. Needs the `pipecat` extra (`pipecat-ai`); nothing
else in Continuum imports this module.

`ContinuumObserver`, one of the bot's `PipelineWorker(observers=[...])`, sees every frame once
(at its first push) and sends:
- a user `turn`: the final transcriptions (`TranscriptionFrame`; interim ones are skipped)
  heard since the bot last answered, joined, when the bot starts its next answer
  (`LLMFullResponseStartFrame`) or the session ends;
- an assistant `turn`: the LLM's text (`LLMTextFrame`) between `LLMFullResponseStartFrame` and
  `LLMFullResponseEndFrame`, with `metadata.interrupted` false; an answer cut off by an
  `InterruptionFrame` or by the end of the session is sent as far as it got, marked true;
- `session_end` at the first `EndFrame` or `CancelFrame` (what a bot queues when its client
  disconnects), or when the worker cleans up without either: the frame's reason (else
  `pipeline_ended`, `pipeline_cancelled`, `pipeline_finished`), the duration since the client
  connected (`ClientConnectedFrame`, else since the pipeline started), `connected` (a client
  connected or the user was heard), and the turns sent as its message list and count.
A turn's time is when the observer saw its first frame: one clock for both sides, so the
stored order is the order of the call.

Events travel like the Claude Code hooks' (`continuum.runtimes.spool`): a background thread
writes each to the local spool and flushes the spool through `MemoryClient`. Pipecat runs
observers in tasks of their own and the observer only hands events to that thread, so neither
the broker nor an outage ever holds up the pipeline. While Redis is down the events wait in
the spool for the next flush (the session's next event, a hook, `continuum spool flush`).
Only the worker's cleanup waits: until the events are on disk and, unless the broker just
refused a flush, sent. Nothing raises into the bot: errors go to `<home>/hooks.log`.

`context_message` and `add_context` put the context block (`continuum.runtimes.context`) into
the bot's `LLMContext` as a system message; a handoff pending for the bot's channel (the user
said "let's pick this up in the voice call" on Discord) is in it, and the call consumes it.
`LiveContext` does the same and keeps that message current for the whole call (R43): it
listens to the tenant's memory-change notices (`continuum.ephemeral.notify`: what capture
stored from a turn on any channel, a memory tool's write, a session's end) and, for a change
of the call's user or of shared memories, reads the block again and puts it in place of the
old one, between two of the bot's turns; a burst of notices costs one read. `hand_off` sends
a handoff from the call (a caller saying "I'll continue on Discord" sends one through the
pipeline without it).
"""

from __future__ import annotations

import asyncio
import json
import queue
import threading
import time
import traceback
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from pipecat.frames.frames import (
    CancelFrame,
    ClientConnectedFrame,
    EndFrame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    StartFrame,
    TextFrame,
    TranscriptionFrame,
)
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.processors.aggregators.llm_context import LLMContext, LLMContextMessage
from pipecat.utils.string import TextPartForConcatenation, concatenate_aggregated_text

from continuum.config import get_settings
from continuum.contract.events import EventError, parse_event
from continuum.ephemeral.handoff import send_handoff
from continuum.ephemeral.notify import memory_changed_channel
from continuum.redis_client import get_redis
from continuum.runtimes import spool
from continuum.runtimes.context import LiveBlock, session_context

CHANNEL = "voice"
REASON_MAX_CHARS = 200  # SessionEndEvent.reason's limit


class _Courier:
    """One background thread that spools the events handed to it, then flushes the spool."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self._events: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="continuum-pipecat", daemon=True)
        self._thread.start()

    def send(self, event: dict[str, Any]) -> None:
        """Hand over an event; returns at once."""
        self._events.put(event)

    def close(self) -> None:
        """Stop once what was handed over is spooled and, unless the broker refused the flush
        before, sent. Blocks for a flush under way (when the broker is unreachable, until it
        gives up: CONTINUUM_REDIS_WAIT_S) and the last one."""
        self._events.put(None)
        self._thread.join()

    def _run(self) -> None:
        refused = False
        while True:
            batch = [self._events.get()]
            while not self._events.empty():  # what arrived during the last flush goes together
                batch.append(self._events.get_nowait())
            closing = None in batch
            try:
                for event in batch:
                    if event is not None:
                        spool.write(self.home, event)
                if not (closing and refused):  # a broker that just refused: leave them spooled
                    refused = spool.flush(self.home)["error"] is not None
            except Exception:
                spool.log_error(self.home, f"pipecat: sending failed:\n{traceback.format_exc()}")
            if closing:
                return


def _part(frame: TextFrame) -> TextPartForConcatenation:
    return TextPartForConcatenation(
        frame.text, includes_inter_part_spaces=frame.includes_inter_frame_spaces
    )


class ContinuumObserver(BaseObserver):
    """Sends a Pipecat session's turns and its end to Continuum (see the module docstring).

    `session_id` defaults to a new UUID; `messages` holds the turns sent so far; a
    `live_context` given stops listening when the worker cleans up."""

    def __init__(
        self,
        *,
        namespace: str,
        user_id: str | None = None,
        session_id: str | None = None,
        channel: str = CHANNEL,
        live_context: LiveContext | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(observe_every_push=False, **kwargs)
        self.live_context = live_context  # closed when the worker cleans up
        self.namespace = namespace
        self.user_id = user_id
        self.session_id = session_id or str(uuid.uuid4())
        self.channel = channel
        self.messages: list[dict[str, Any]] = []
        self._courier = _Courier(get_settings().home)
        self._since = time.monotonic()
        self._client_connected = False
        self._heard: list[TextPartForConcatenation] = []
        self._heard_at = datetime.now(UTC)
        self._answer: list[TextPartForConcatenation] | None = None  # None: no answer under way
        self._answer_at = datetime.now(UTC)
        self._ended = False

    async def on_push_frame(self, data: FramePushed) -> None:
        frame = data.frame
        if self._ended:
            return
        if isinstance(frame, StartFrame) and not self._client_connected:
            self._since = time.monotonic()
        elif isinstance(frame, ClientConnectedFrame) and not self._client_connected:
            self._client_connected, self._since = True, time.monotonic()
        elif isinstance(frame, TranscriptionFrame):
            if not self._heard:
                self._heard_at = datetime.now(UTC)
            self._heard.append(_part(frame))
        elif isinstance(frame, LLMFullResponseStartFrame):
            self._send_heard()
            self._answer, self._answer_at = [], datetime.now(UTC)
        elif isinstance(frame, LLMTextFrame) and self._answer is not None:
            if frame.append_to_context:
                self._answer.append(_part(frame))
        elif isinstance(frame, LLMFullResponseEndFrame):
            self._send_answer(interrupted=False)
        elif isinstance(frame, InterruptionFrame):
            self._send_answer(interrupted=True)
        elif isinstance(frame, EndFrame):
            self._end(frame.reason, "pipeline_ended")
        elif isinstance(frame, CancelFrame):
            self._end(frame.reason, "pipeline_cancelled")

    async def cleanup(self) -> None:
        """The worker is done: end the session if no End/CancelFrame did, and wait until the
        events are sent or spooled."""
        await super().cleanup()
        self._end(None, "pipeline_finished")
        await asyncio.to_thread(self._courier.close)
        if self.live_context is not None:
            await self.live_context.close()

    def _event(self, kind: str, at: datetime, **fields: Any) -> dict[str, Any]:
        return {"kind": kind, "event_id": str(uuid.uuid4()), "namespace": self.namespace,
                "session_id": self.session_id, "channel": self.channel,
                "user_id": self.user_id, "ts": at.isoformat(), **fields}  # fmt: skip

    def _send(self, event: dict[str, Any]) -> bool:
        """Validate here (an invalid event is logged, never raised), send in the background."""
        try:
            parse_event(event)
        except EventError as exc:
            spool.log_error(self._courier.home, f"pipecat: {event['kind']} not sent: {exc}")
            return False
        self._courier.send(event)
        return True

    def _send_turn(
        self, role: str, parts: list[TextPartForConcatenation], at: datetime, **metadata: bool
    ) -> None:
        content = concatenate_aggregated_text(parts).strip()
        if not content:
            return
        event = self._event("turn", at, role=role, content=content, metadata=metadata)
        event["message_id"] = event["event_id"]
        if self._send(event):
            self.messages.append({"role": role, "content": content, "ts": event["ts"],
                                  "message_id": event["message_id"]})  # fmt: skip

    def _send_heard(self) -> None:
        self._send_turn("user", self._heard, self._heard_at)
        self._heard = []

    def _send_answer(self, *, interrupted: bool) -> None:
        if self._answer is not None:
            self._send_turn("assistant", self._answer, self._answer_at, interrupted=interrupted)
            self._answer = None

    def _end(self, reason: object, default: str) -> None:
        """Send what is pending, then `session_end` (once)."""
        if self._ended:
            return
        self._send_heard()
        self._send_answer(interrupted=True)
        self._ended = True
        now = datetime.now(UTC)
        heard = any(message["role"] == "user" for message in self.messages)
        self._send(self._event(
            "session_end", now, ended_at=now.isoformat(),
            reason=(str(reason) if reason else default)[:REASON_MAX_CHARS],
            duration_s=round(time.monotonic() - self._since, 3),
            connected=self._client_connected or heard,
            message_count=len(self.messages), messages=self.messages,
        ))  # fmt: skip


def context_message(
    namespace: str, *, user_id: str | None = None, channel: str = CHANNEL
) -> LLMContextMessage | None:
    """The context block for a new session as a system message for the bot's LLM context;
    None when there is nothing to tell. Reads Postgres: in the bot's event loop, use
    `add_context`."""
    block = session_context(namespace, user_id=user_id, channel=channel)
    return {"role": "system", "content": block} if block.strip() else None


async def add_context(
    context: LLMContext, namespace: str, *, user_id: str | None = None, channel: str = CHANNEL
) -> bool:
    """Append the context block to `context` as a system message (read in a thread, so the
    event loop goes on); whether there was one. Never raises: without Continuum the call
    goes on without memory, and the error is in `<home>/hooks.log`."""
    try:
        message = await asyncio.to_thread(
            context_message, namespace, user_id=user_id, channel=channel
        )
    except Exception:
        spool.log_error(get_settings().home, f"pipecat: no context:\n{traceback.format_exc()}")
        return False
    if message is None:
        return False
    context.add_message(message)
    return True


class LiveContext:
    """The context block in the bot's `LLMContext` for the whole call, kept current (see the
    module docstring). `await start()` when the caller connects; `await close()` (or give it
    to `ContinuumObserver(live_context=...)`) when the call ends. `refreshes` counts the
    blocks read after the first; `debounce_s` is how long it waits for more notices of a
    burst before it reads. Never raises into the bot: errors go to `<home>/hooks.log`."""

    POLL_S = 0.5  # how often the listener looks whether it was closed

    def __init__(
        self,
        context: LLMContext,
        namespace: str,
        *,
        user_id: str | None = None,
        channel: str = CHANNEL,
        debounce_s: float = 0.3,
    ) -> None:
        self.context = context
        self.namespace = namespace
        self.user_id = user_id
        self.debounce_s = debounce_s
        self.refreshes = 0
        self._block = LiveBlock(namespace, user_id=user_id, channel=channel)
        self._message: dict[str, Any] | None = None  # ours, in `context.messages`
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = threading.Event()
        self._listener: threading.Thread | None = None

    async def start(self) -> bool:
        """Add the block as a system message and listen for changes; whether there was a
        block. Changes from the moment it subscribes (before its first read) are heard."""
        self._loop = asyncio.get_running_loop()
        pubsub = None
        try:
            pubsub = await asyncio.to_thread(self._subscribe)
            block = await asyncio.to_thread(self._block.read)
        except Exception:
            self._log("no live context")
            if pubsub is not None:
                pubsub.close()
            return False
        self._apply(block, first=True)
        self._listener = threading.Thread(
            target=self._listen, args=(pubsub,), name="continuum-live-context", daemon=True
        )
        self._listener.start()
        return self._message is not None

    @property
    def listening(self) -> bool:
        """Whether it still listens for memory changes."""
        return self._listener is not None and self._listener.is_alive()

    async def close(self) -> None:
        """Stop listening (idempotent); the message stays as last read."""
        self._closed.set()
        if self._listener is not None:
            await asyncio.to_thread(self._listener.join)

    def _subscribe(self) -> Any:
        pubsub = get_redis().pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(memory_changed_channel(self.namespace))
        return pubsub

    def _concerns(self, message: dict[str, Any] | None) -> bool:
        """A notice of this user's memories, or of shared ones (or of unknown owner)."""
        if message is None or message.get("type") != "message":
            return False
        try:
            owner = json.loads(message["data"]).get("user_id")
        except (ValueError, AttributeError):
            return False
        return owner is None or owner == self.user_id

    def _listen(self, pubsub: Any) -> None:
        """On the listener thread: wait for a notice, let its burst pass, read the block and
        hand it to the event loop. While Redis or Postgres fails it tries again every
        `POLL_S`, logging the first error of each outage."""
        failing = False
        try:
            while not self._closed.is_set():
                try:
                    concerns = self._concerns(pubsub.get_message(timeout=self.POLL_S))
                    if concerns:
                        time.sleep(self.debounce_s)
                        while pubsub.get_message(timeout=0) is not None:
                            pass  # the rest of the burst: one read covers it
                        block = self._block.read()
                    failing = False
                except Exception:
                    if not failing:
                        self._log("context not refreshed (retrying)")
                    failing = True
                    self._closed.wait(self.POLL_S)
                    continue
                if concerns and self._loop is not None and not self._closed.is_set():
                    try:
                        self._loop.call_soon_threadsafe(self._apply, block)
                    except RuntimeError:  # the bot's event loop is closed: the call is over
                        return
        finally:
            pubsub.close()

    def _apply(self, block: str, first: bool = False) -> None:
        """On the event loop: the block replaces the message read before (or is added)."""
        mine = self._message is not None and any(m is self._message for m in self.context.messages)
        if not block.strip():
            if mine:
                self.context.set_messages([m for m in self.context.messages
                                           if m is not self._message])  # fmt: skip
            self._message = None
        elif mine and self._message is not None:
            self._message["content"] = block
        else:
            self._message = {"role": "system", "content": block}
            self.context.add_message(cast(LLMContextMessage, self._message))
        self.refreshes += not first

    def _log(self, what: str) -> None:
        spool.log_error(get_settings().home, f"pipecat: {what}:\n{traceback.format_exc()}")


async def hand_off(
    namespace: str,
    *,
    user_id: str,
    summary: str,
    to_channel: str | None = None,
    channel: str = CHANNEL,
) -> bool:
    """Tell the user's next session on `to_channel` (None: any channel but this one) what the
    call was about: its context block shows it once, within 10 minutes. Whether it was sent;
    never raises (the error is in `<home>/hooks.log`)."""
    try:
        await asyncio.to_thread(send_handoff, namespace, user_id, channel, to_channel, summary)
    except Exception:
        spool.log_error(get_settings().home, f"pipecat: no handoff:\n{traceback.format_exc()}")
        return False
    return True
