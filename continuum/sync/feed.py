"""Feeding capture from synced messages (R60): newly inserted messages, per session, in
chunks of 10 messages or 5 minutes, each sent as one `extract_chunk` task.

Called only after the transaction that inserted the rows committed, so a task never
names a message that could still roll back.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from continuum.capture.chunking import chunk_messages
from continuum.contract import dispatch
from continuum.contract.queues import EXTRACT_CHUNK
from continuum.conversations.writer import InsertedMessage


def feed_capture(namespace: str, inserted: Iterable[InsertedMessage]) -> int:
    """Send the chunks of `inserted`; returns how many tasks were sent."""
    by_session: dict[str, list[InsertedMessage]] = defaultdict(list)
    for message in inserted:
        by_session[message.session_id].append(message)
    sent = 0
    for session_id, messages in sorted(by_session.items()):
        for chunk in chunk_messages(messages):
            dispatch.send(EXTRACT_CHUNK, namespace, session_id, [m.message_id for m in chunk])
            sent += 1
    return sent
