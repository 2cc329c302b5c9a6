"""Worker processes for the fault tests: the queue only they consume, and killing one (the
soak, bench/soak.py, kills them the same way: `continuum.processes.kill`)."""

from __future__ import annotations

from continuum.processes import kill

__all__ = ["FAULT_QUEUE", "kill"]

# Test tasks that kill the worker running them are sent here, never to a queue the in-process
# test worker consumes.
FAULT_QUEUE = "faults"
