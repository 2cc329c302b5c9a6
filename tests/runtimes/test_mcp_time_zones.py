"""The MCP tools that read days (`recall`, `search`) take the user's time zone, `tz`; an
unknown one is a tool error naming it. The real server, connected in-process by the
official SDK's client, against the real servers."""

from __future__ import annotations

from typing import Any

import anyio
from mcp import Client

from continuum.runtimes.mcp_server import build_server
from tests.support.local_days import LATE_TUESDAY_UTC, said


def test_recall_and_search_take_the_users_time_zone(db: Any, settings_env: Any) -> None:
    settings_env(mcp_namespace="pearl", mcp_user="jason")
    said("pearl", "late", "I booked the ferry to Naoshima.", LATE_TUESDAY_UTC)

    async def session() -> None:
        async with Client(build_server("stdio")) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            for name in ("recall", "search"):
                assert "tz" in tools[name].input_schema["properties"]
            block = await client.call_tool("recall", {"seed": "ferry", "tz": "Asia/Tokyo"})
            assert not block.is_error
            assert block.content[0].text.splitlines()[0].endswith(" Asia/Tokyo)")
            for name, arguments in (("recall", {"seed": "ferry"}), ("search", {"query": "ferry"})):
                refused = await client.call_tool(name, {**arguments, "tz": "Mars/Olympus"})
                assert refused.is_error
                assert "tz: unknown time zone 'Mars/Olympus'" in refused.content[0].text

    anyio.run(session)
