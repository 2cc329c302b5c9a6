"""Worker processes for the fault tests: the queue only they consume, and killing one."""

from __future__ import annotations

import os
import signal
import subprocess

# Test tasks that kill the worker running them are sent here, never to a queue the in-process
# test worker consumes.
FAULT_QUEUE = "faults"


def kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the worker and its pool children: no warm shutdown, nothing acked."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
