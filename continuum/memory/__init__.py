"""The memory model: writing memories, claims over time, preferences, the user's tasks, memory tools."""
