"""Worker processes for the fault tests: the queue only they consume (they are killed with
`continuum.processes.kill`, as the soak kills them)."""

from __future__ import annotations

# Test tasks that kill the worker running them are sent here, never to a queue the in-process
# test worker consumes.
FAULT_QUEUE = "faults"
