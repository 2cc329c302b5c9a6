"""Continuum inside agent frameworks, over the HTTP API (`continuum.sdk`): a LangGraph store
(`langgraph`, extra `langgraph`) and an OpenAI Agents SDK session with the memory tools
(`openai_agents`, extra `agents`). Each module imports its framework; this package imports
nothing."""
