"""The MCP server as agents use it: `continuum mcp` run as a real process, driven by the
official SDK's own client over stdio and over streamable HTTP, against the real servers and
a real worker."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from continuum.processes import spawn, stop
from tests.support.net import free_port
from tests.support.wait import wait_for

TOOLS = {"remember", "memory_status", "recall", "search", "list_memories", "update_memory",
         "forget_memory", "mark_private", "confirm_task", "dismiss_task"}  # fmt: skip
DECISION = "Let's go with Hoffmann for the garden renovation."


def _data(result: Any) -> Any:
    """A tool result's value: its structured content, else its text (JSON when it is)."""
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    text = result.content[0].text
    try:
        return json.loads(text)
    except ValueError:
        return text


async def _call(client: Client, tool: str, **arguments: Any) -> Any:
    return _data(await client.call_tool(tool, arguments))


async def _landed(client: Client, event_id: str) -> dict[str, Any]:
    """memory_status until the event has landed and its memories are derived."""
    with anyio.fail_after(60):
        while True:
            status = await _call(client, "memory_status", event_id=event_id)
            if status["status"] == "landed" and status["memories"]:
                return dict(status)
            await anyio.sleep(0.1)


def _stdio(namespace: str) -> StdioServerParameters:
    env = {**os.environ, "CONTINUUM_MCP_NAMESPACE": namespace, "CONTINUUM_MCP_USER": "jason"}
    return StdioServerParameters(command=sys.executable, args=["-m", "continuum.cli.main", "mcp"],
                                 env=env)  # fmt: skip


def test_stdio_tools_and_a_remember_status_recall_round_trip(db: Any, worker: Any) -> None:
    async def session() -> None:
        async with Client(_stdio("mcp-a")) as client:
            tools = (await client.list_tools()).tools
            assert {tool.name for tool in tools} == TOOLS
            assert all(len(tool.description or "") > 60 for tool in tools)  # written for a model
            for tool in tools:  # who is calling is never an argument
                assert not {"namespace", "user_id", "tenant"} & set(tool.input_schema["properties"])

            sent = await _call(client, "remember", text=DECISION)
            status = await _landed(client, sent["event_id"])
            assert status["message_stored"] is True
            assert any("Hoffmann" in m["content"] for m in status["memories"])

            block = await _call(client, "recall", seed="garden renovation")
            assert "Hoffmann" in block

            hits = (await _call(client, "search", query="Hoffmann garden"))["hits"]
            assert hits and all(sent["event_id"] in hit["source_message_ids"] for hit in hits)

            stored = await _call(client, "update_memory", existing_key="garden_contractor",
                                 new_value="Hoffmann")  # fmt: skip
            listed = (await _call(client, "list_memories"))["memories"]
            assert stored["memoryId"] in [m["memoryId"] for m in listed]
            assert (await _call(client, "list_memories", channel="voice"))["memories"] == []
            assert (await _call(client, "mark_private", key="garden_contractor"))["success"]
            forgotten = await _call(client, "forget_memory", key="garden_contractor")
            assert [m["content"] for m in forgotten["removed"]] == [
                m["content"] for m in listed if m["memoryId"] == stored["memoryId"]]  # fmt: skip
            missing = await client.call_tool("forget_memory", {"key": "garden_contractor"})
            assert missing.is_error and "no memory with key" in missing.content[0].text

    anyio.run(session)


@pytest.fixture
def http_server(servers: Any, tmp_path: Path) -> Iterator[str]:
    """`continuum mcp --http` on a free port; yields its /mcp URL."""
    port = free_port()
    proc = spawn([sys.executable, "-m", "continuum.cli.main", "mcp", "--http", "--port", str(port)],
                 tmp_path / "mcp.log")  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp"

    def listening() -> bool:
        try:
            return httpx.post(url, timeout=2).status_code == 401
        except httpx.TransportError:
            return proc.poll() is None and False

    try:
        wait_for(listening, timeout=60)
        yield url
    finally:
        stop(proc, timeout=20)


@asynccontextmanager
async def _http(url: str, token: str) -> AsyncIterator[Client]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        yield client


def test_http_tenant_isolation_by_bearer_token(db: Any, worker: Any, http_server: str) -> None:
    from continuum.security.tokens import create_token

    token_a, _ = create_token(["mcp-a"])
    token_b, _ = create_token(["mcp-b"])
    refused = httpx.post(http_server, json={}, headers={"Authorization": "Bearer ctm_wrong"})
    assert refused.status_code == 401

    async def session() -> None:
        async with _http(http_server, token_b) as tenant_b:
            assert {t.name for t in (await tenant_b.list_tools()).tools} == TOOLS
            sent = await _call(tenant_b, "remember", text="I prefer the vault code 4411 kept safe.")
            await _landed(tenant_b, sent["event_id"])
            assert "4411" in json.dumps(await _call(tenant_b, "search", query="vault code"))
        async with _http(http_server, token_a) as tenant_a:
            assert (await _call(tenant_a, "search", query="vault code 4411"))["hits"] == []
            assert "4411" not in await _call(tenant_a, "recall", seed="vault code")
            assert (await _call(tenant_a, "memory_status", event_id=sent["event_id"]))[
                "status"] == "pending"  # fmt: skip
            assert "4411" not in json.dumps(await _call(tenant_a, "list_memories"))

    anyio.run(session)
