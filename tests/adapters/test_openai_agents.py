"""The OpenAI Agents SDK on Continuum, against the real API (uvicorn on loopback), servers and
worker, with the real `openai-agents` package: a session's items are stored as turns and read
back in order (whole, whatever their type), the last `limit` of them, popped and cleared; the
memory tools search, remember and forget; and an agent run by the package's own scripted
model (`agents.testing.ScriptedModel`, no LLM) keeps its conversation in the session and its
memories in Continuum."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext

from continuum.adapters.openai_agents import ContinuumSession, memory_tools
from continuum.sdk import AsyncClient, Client
from continuum.security.tokens import create_token
from tests.support.wait import wait_for

ITEMS: list[Any] = [
    {"role": "user", "content": "I'd like the garden finished by May."},
    {"type": "message", "role": "developer", "content": "Be brief."},
    {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "Hoffmann can finish by May.", "annotations": []}]},
    {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": '{"q": "May"}'},
    {"type": "function_call_output", "call_id": "c1", "output": "{\"ok\": true}"},
    {"role": "user", "content": [{"type": "input_text", "text": "Great."},
                                 {"type": "input_text", "text": "Thanks!"}]},
]  # fmt: skip


def _clients(api_url: str) -> tuple[Client, AsyncClient]:
    token = create_token(["pearl"])[0]
    return Client(api_url, token), AsyncClient(api_url, token)


def test_items_persist_as_turns_in_order(db: Any, api_url: str, worker: Any) -> None:
    sdk, client = _clients(api_url)
    session_id = f"agents-{uuid.uuid4().hex[:8]}"

    async def run() -> None:
        session = ContinuumSession(session_id, client, user_id="jason")
        await session.add_items(ITEMS[:3])
        await session.add_items(ITEMS[3:])
        assert await session.get_items() == ITEMS  # before a worker stored them
        assert await session.get_items(limit=2) == ITEMS[-2:]
        # Stored: a new session object (another process) reads them from the server.
        later = ContinuumSession(session_id, client)
        await asyncio.to_thread(wait_for, lambda: len(list(sdk.session_turns(session_id))) == 6)
        assert await later.get_items() == ITEMS
        assert await later.get_items(limit=1) == ITEMS[-1:]
        turns = list(sdk.session_turns(session_id))
        assert [t.role for t in turns] == [
            "user",
            "system",
            "assistant",
            "assistant",
            "assistant",
            "assistant",
        ]
        assert turns[2].content == "Hoffmann can finish by May."  # text, not JSON
        assert turns[0].user_id == "jason" and turns[0].channel == "openai-agents"
        best = next(iter(sdk.search("garden finished", limit=1)))
        assert best.content == ITEMS[0]["content"]  # searchable like any turn

        assert await session.pop_item() == ITEMS[-1]
        assert await later.get_items() == ITEMS[:-1]
        await later.clear_session()
        assert await later.get_items() == [] and list(sdk.session_turns(session_id)) == []
        assert await later.pop_item() is None

    asyncio.run(run())


async def _call(tool: Any, arguments: str) -> Any:
    """Invoke a function tool as a run would (the package's own `ToolContext`)."""
    context = ToolContext(
        None, tool_name=tool.name, tool_call_id="call-0", tool_arguments=arguments
    )
    return await tool.on_invoke_tool(context, arguments)


def test_memory_tools_search_remember_and_forget(db: Any, api_url: str) -> None:
    sdk, client = _clients(api_url)
    search, remember, forget = memory_tools(client, user_id="jason", session_id="s1")
    assert [t.name for t in (search, remember, forget)] == ["search", "remember", "forget"]
    assert set(remember.params_json_schema["properties"]) == {"key", "value", "memory_type"}

    async def run() -> None:
        stored = await _call(
            remember, '{"key": "favorite_tea", "value": "Earl Grey", "memory_type": "preference"}'
        )
        assert stored["success"] and stored["memoryId"]
        found = await _call(search, '{"query": "favorite tea", "limit": 3}')
        assert "Earl Grey" in found[0]["content"]
        assert (await _call(forget, '{"key": "favorite_tea"}'))["success"]
        again = await _call(forget, '{"key": "favorite_tea"}')
        assert again["success"] is False and "favorite_tea" in again["message"]

    asyncio.run(run())
    assert list(sdk.memories(kind="preference", user_id="jason")) == []


def test_an_agent_keeps_its_conversation_and_memories_in_continuum(
    db: Any, api_url: str, worker: Any
) -> None:
    sdk, client = _clients(api_url)
    model = ScriptedModel(
        [
            [
                function_call(
                    "remember",
                    {"key": "favorite_color", "value": "green", "memory_type": "preference"},
                    call_id="call-1",
                )
            ],
            [assistant_message("I'll remember that green is your favorite.")],
            [assistant_message("Your favorite color is green.")],
        ]
    )
    agent = Agent(name="pearl", instructions="Remember what matters.", model=model,
                  tools=memory_tools(client, user_id="jason"))  # fmt: skip

    async def run() -> None:
        session = ContinuumSession("agent-run", client, user_id="jason")
        first = await Runner.run(agent, "My favorite color is green.", session=session)
        assert first.final_output == "I'll remember that green is your favorite."
        second = await Runner.run(agent, "What is my favorite color?", session=session)
        assert second.final_output == "Your favorite color is green."
        # The second call saw the first run's conversation, read from the session.
        seen = model.calls[2].input
        texts = [str(item) for item in (seen if isinstance(seen, list) else [seen])]
        assert any("My favorite color is green." in t for t in texts)
        assert any("call-1" in t for t in texts)

    asyncio.run(run())
    remembered = sdk.memories(kind="preference", user_id="jason", status="any")
    assert ("Favorite color: green", "user_explicit") in {
        (m.content, m.provenance) for m in remembered
    }
    wait_for(lambda: len(list(sdk.session_turns("agent-run"))) >= 6)
