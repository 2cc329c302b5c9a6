"""Pipecat: frames through a real Pipecat pipeline (its own test utilities, no audio) watched
by ContinuumObserver; the events it sends land in Postgres through the real worker. Then the
voice → Discord story: what was said on a call is in the user's next Discord context; and a
live call's context, refreshed when a memory is written elsewhere."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pipecat")

from pipecat.frames.frames import (
    CancelFrame,
    ClientConnectedFrame,
    EndFrame,
    InterimTranscriptionFrame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
)
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.filters.identity_filter import IdentityFilter
from pipecat.tests.utils import run_test
from pipecat.utils.time import time_now_iso8601

from continuum.ephemeral.handoff import peek_handoff, send_handoff
from continuum.memory.tool_calls import MemoryTools
from continuum.runtimes.context import session_context
from continuum.runtimes.pipecat import (
    ContinuumObserver,
    LiveContext,
    add_context,
    context_message,
    hand_off,
)
from tests.support.pipecat_calls import PARTICIPANT, answer, call, ended, heard, stored
from tests.support.wait import wait_for


def test_turns_and_session_end_land_as_the_call_runs(
    db: Any, worker: Any, settings_env: Any, tmp_path: Any
) -> None:
    settings_env(home=tmp_path / "home")
    observer = ContinuumObserver(namespace="pc-call", user_id="jason", session_id="call-1")
    call(observer, [
        ClientConnectedFrame(),
        InterimTranscriptionFrame("Can we go", PARTICIPANT, time_now_iso8601()),
        heard("Can we go over the garden renovation?"),
        heard("The contractor calls at noon."),
        *answer("Sure.", " You have two quotes:", " Greenline and Hoffmann."),
        heard("Let's go with Hoffmann."),
        LLMFullResponseStartFrame(), LLMTextFrame("Got it: Hoffmann,"),
        InterruptionFrame(),  # the user talks over the answer: it ends here
        LLMTextFrame(" starting December 2nd."), LLMFullResponseEndFrame(),
        heard("Thanks, bye."),
        EndFrame(reason="client_disconnected"),
    ])  # fmt: skip

    turns = wait_for(lambda: len(stored("pc-call", "call-1")) == 5 and stored("pc-call", "call-1"))
    assert [(role, content, user) for role, content, _, user, _ in turns] == [
        ("user", "Can we go over the garden renovation? The contractor calls at noon.", "jason"),
        ("assistant", "Sure. You have two quotes: Greenline and Hoffmann.", "jason"),
        ("user", "Let's go with Hoffmann.", "jason"),
        ("assistant", "Got it: Hoffmann,", "jason"),
        ("user", "Thanks, bye.", "jason"),
    ]
    assert [details for *_, details in turns if details] == [
        {"interrupted": False}, {"interrupted": True}]  # fmt: skip
    assert [m["message_id"] for m in observer.messages] == [row[2] for row in turns]
    # The session end came with the call's reason, counted the turns it waited for, and was
    # judged connected and by its (short) duration.
    assert wait_for(lambda: ended("pc-call", "call-1")) == (
        "client_disconnected", "lasted 0s, under 30s")  # fmt: skip


def test_a_call_nobody_joined_ends_unconnected(
    db: Any, worker: Any, settings_env: Any, tmp_path: Any
) -> None:
    settings_env(home=tmp_path / "home")
    observer = ContinuumObserver(namespace="pc-call", session_id="call-2")
    call(observer, [*answer("Hello, this is Pearl."), CancelFrame()])
    assert wait_for(lambda: ended("pc-call", "call-2")) == ("pipeline_cancelled", "never connected")
    assert [row[:2] for row in stored("pc-call", "call-2")] == [
        ("assistant", "Hello, this is Pearl.")]  # fmt: skip


def test_what_was_said_on_a_call_is_in_the_next_discord_context(
    db: Any, worker: Any, settings_env: Any, tmp_path: Any
) -> None:
    settings_env(home=tmp_path / "home", workspace_dir=tmp_path / "workspace", min_session_s=0)
    assert context_message("pearl", user_id="jason") is None  # nothing known yet

    observer = ContinuumObserver(namespace="pearl", user_id="jason", session_id="voice-7")
    call(observer, [  # no ClientConnectedFrame (not every transport pushes one): the user talks
        heard("Can we go over the garden renovation before the contractor calls?"),
        *answer("Sure. You have two quotes:", " Greenline at 14,200 and Hoffmann at 12,800."),
        heard("Let's go with Hoffmann. Their quote is lower and they can start on December 2nd."),
        *answer("Got it: Hoffmann Landscaping, starting December 2nd."),
        heard("I'm still waiting for Hoffmann to confirm whether the price includes drainage."),
        heard("I have to go, talk later on Discord."),
        EndFrame(reason="client_disconnected"),
    ])  # fmt: skip
    assert wait_for(lambda: ended("pearl", "voice-7"), timeout=90)[1] == ""

    # Later, in Discord: the block that session starts with, and the handoff the caller's
    # last words sent, once.
    block = session_context("pearl", user_id="jason", channel="discord")
    assert "Hoffmann" in block and "drainage" in block and "voice" in block.lower()
    assert "## Pending handoff" in block and "talk later on Discord" in block
    assert "Pending handoff" not in session_context("pearl", user_id="jason", channel="discord")

    # And the next call's LLM context gets the block as a system message.
    context = LLMContext([{"role": "system", "content": "You are Pearl, a voice assistant."}])
    assert asyncio.run(add_context(context, "pearl", user_id="jason")) is True
    added = context.messages[-1]
    assert added["role"] == "system" and "Hoffmann" in added["content"]


def test_a_call_reads_its_handoff_once_and_hands_off_to_another_channel(
    db: Any, settings_env: Any, tmp_path: Any
) -> None:
    settings_env(home=tmp_path / "home")
    send_handoff("pearl", "jason", "discord", "voice", "Choosing the garden tiles.")
    first = context_message("pearl", user_id="jason")
    assert first is not None and "Choosing the garden tiles" in str(first["content"])
    again = context_message("pearl", user_id="jason")
    assert again is None or "garden tiles" not in str(again["content"])

    sent = asyncio.run(hand_off("pearl", user_id="jason", summary="Tiles: slate.",
                                to_channel="telegram"))  # fmt: skip
    assert sent is True
    assert "Tiles: slate." not in session_context("pearl", user_id="jason", channel="discord")
    assert "Tiles: slate." in session_context("pearl", user_id="jason", channel="telegram")
    assert peek_handoff("pearl", "jason") is None


def test_a_memory_written_mid_call_refreshes_the_calls_context(
    db: Any, worker: Any, client: Any, settings_env: Any, tmp_path: Any
) -> None:
    """R43: while a call runs, what is remembered elsewhere reaches its LLM context: a turn
    on Discord (stored by capture on the worker) and a memory tool's write outside any
    session; another user's memory does not touch it, the handoff the call consumed at its
    start stays in it, and the call's end stops the listening."""
    settings_env(home=tmp_path / "home")
    tools = MemoryTools("pearl", user_id="jason")
    tools.store_memory(memory_type="fact", key="garden_contractor", value="Hoffmann Landscaping")
    send_handoff("pearl", "jason", "discord", "voice", "Choosing the garden tiles.")
    context = LLMContext([{"role": "system", "content": "You are Pearl, a voice assistant."}])
    live = LiveContext(context, "pearl", user_id="jason")
    observer = ContinuumObserver(namespace="pearl", user_id="jason", session_id="voice-9",
                                 live_context=live)  # fmt: skip

    def block() -> str:
        return str(context.messages[-1]["content"])

    async def until(check: Any) -> None:
        for _ in range(300):
            if check():
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"not refreshed: {block()!r}")

    async def scenario() -> None:
        assert await live.start() and live.listening
        assert "Hoffmann" in block() and "garden tiles" in block()
        assert len(context.messages) == 2  # one system message, refreshed in place

        client.turn(namespace="pearl", session_id="discord-1", channel="discord", user_id="jason",
                    role="user", content="I prefer oat milk in my coffee.")  # fmt: skip
        await until(lambda: "oat milk" in block())
        assert live.refreshes >= 1 and len(context.messages) == 2

        await asyncio.to_thread(
            tools.store_memory, memory_type="fact", key="car", value="a blue Volvo estate"
        )
        await until(lambda: "blue Volvo" in block())
        assert "garden tiles" in block()  # read once at the start, kept since

        refreshes = live.refreshes
        await asyncio.to_thread(
            MemoryTools("pearl", user_id="maria").store_memory,
            memory_type="fact", key="car", value="a red Fiat",
        )  # fmt: skip
        await asyncio.sleep(1.5)
        assert live.refreshes == refreshes and "red Fiat" not in block()

        await run_test(IdentityFilter(), frames_to_send=[heard("Thanks, bye."), EndFrame()],
                       observers=[observer], send_end_frame=False)  # fmt: skip
        assert not live.listening

    asyncio.run(scenario())
