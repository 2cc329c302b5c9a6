"""Runtime integrations: how agents that already exist feed and read Continuum without
producer code of their own. Claude Code hooks (`claude_code`, installed into its settings by
`claude_settings`), the local spool those hooks write through (`spool`), the MCP server
(`mcp_server`), the Pipecat observer and context helpers (`pipecat`, needs the `pipecat`
extra; nothing imports it but a bot) and the context block a runtime's session starts with
(`context`)."""
