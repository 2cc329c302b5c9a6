"""The producer host's process in the cluster scenarios (`make test-cluster`): sends the events
of a JSON file as `tests.support.producers.produce` does (paced, a refused batch resent until
accepted) and writes when each was accepted, and how many sends were refused, to another.

    python -m tests.support.cluster_producer EVENTS.json ACCEPTED.json SIZE MAX_QUEUED
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.support.producers import Produced


def main(events_file: str, out_file: str, size: str, max_queued: str) -> None:
    from continuum.contract.client import MemoryClient
    from tests.support.producers import produce

    events = json.loads(Path(events_file).read_text())
    client = MemoryClient()
    try:
        produced = produce(client, events, int(size), int(max_queued))
    finally:
        client.close()
    out = Path(out_file)
    out.with_suffix(".tmp").write_text(
        json.dumps({"accepted_at": produced.accepted_at, "refusals": produced.refusals})
    )
    out.with_suffix(".tmp").replace(out)


def read(out_file: Path) -> Produced:
    data: dict[str, Any] = json.loads(out_file.read_text())
    return Produced(accepted_at=data["accepted_at"], refusals=data["refusals"])


if __name__ == "__main__":
    main(*sys.argv[1:])
