"""What the two-beat test reads of the probes its beats send (`tests.support.beat_app`),
importable without the workers' app (which needs the servers up)."""

from __future__ import annotations

import json
from typing import Any

PROBE_QUEUE = "beat-probes"
PROBE_EVERY_S = 1.0


def probe_senders(broker: Any) -> list[int]:
    """The pids of the beats that sent the probes queued now, oldest first."""
    raw = reversed(broker.lrange(PROBE_QUEUE, 0, -1))  # LPUSH: the newest at the head
    return [int(json.loads(m)["headers"]["origin"].split("@")[0].removeprefix("gen")) for m in raw]
