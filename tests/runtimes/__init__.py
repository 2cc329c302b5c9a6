"""Runtime integrations: Claude Code hooks, the spool, the MCP server, Pipecat."""
