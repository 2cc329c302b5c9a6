"""Secrets never become memories: real-looking keys, tokens, passwords and private keys are
replaced by `[redacted:<type>]` (`continuum.domain.secrets`) in the messages both doors store
and in every memory written, counted in `secrets_redacted`; the events stage replaces them
before anything else sees an event (Redis buffers, handoffs, what the LLM is sent); ordinary
prose is left as it is;
`CONTINUUM_REDACT_SECRETS=false` turns it off."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select

from continuum.conversations.writer import write
from continuum.domain.memory import Claim, MemoryCandidate
from continuum.domain.secrets import redact
from continuum.ephemeral.handoff import peek_handoff
from continuum.memory.writer import WriteScope, store_memories
from continuum.pipeline.ingest import ingest_batch
from continuum.redis_client import get_redis
from continuum.store import metrics
from continuum.store.engine import session_scope
from continuum.store.models import Memory, Message
from tests.support.events import now_at, session_end, turn
from tests.support.message_rows import FACTS, rows

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2q1EiQ4nD8yHn0Z9cXJd0hQ1t2mA\n"
    "q9xWc0K4m3U7hO1l8c9sYyS6rW2pT5nXbV1aZ0eGfH4iJ7kL8mN9oP0qR1sT2uV3\n"
    "-----END RSA PRIVATE KEY-----"
)
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwia"
    "WF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
# (text holding a secret, the secret, its marker's type)
SECRETS = [
    ("My AWS key is AKIAIOSFODNN7EXAMPLE, keep it safe.", "AKIAIOSFODNN7EXAMPLE", "aws-access-key"),
    (
        "aws_secret_access_key = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws-access-key",
    ),
    (
        "use ghp_16C7e42F292c6912E7710c838347Ae178B4a for the CI",
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "github-token",
    ),
    (
        "the bot token is xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "slack-token",
    ),
    (f"here is the deploy key:\n{PEM}\nthanks", PEM, "private-key"),
    ("set password=hunter2secret in the env file", "hunter2secret", "password"),
    ('db = {"password": "S3cr3t!Pass"}', "S3cr3t!Pass", "password"),
    (f"Authorization: Bearer {JWT}", JWT, "json-web-token"),
    ("psql https://admin:Sup3rS3cret@db.example.com/app", "Sup3rS3cret", "basic-auth-credentials"),
]
PROSE = [
    "Let's meet on 2026-03-05 at 10:30 to review the Q3 numbers (revenue up 12.5%).",
    "The password reset flow is broken, see https://example.com/docs/reset?id=42 for details.",
    "My password: reset it tomorrow. The secret: patience.",
    "Call me at +1 415 555 0100 or drop by 192.168.1.10; the DNS is 8.8.8.8.",
    "The token bucket allows 1000 requests per minute; API key rotation is weekly.",
    "Commit a1b2c3d4e5f60718293a4b5c6d7e8f9012345678 fixed it, issue #112 is next.",
    "Melanie: The 2 younger kids love nature, we hiked 12 km on 5/14.",
]


@pytest.mark.parametrize(("said", "secret", "kind"), SECRETS, ids=[s[2] for s in SECRETS])
def test_each_kind_of_secret_is_replaced_by_its_marker(said: str, secret: str, kind: str) -> None:
    redaction = redact(said)
    assert secret not in redaction.text
    assert f"[redacted:{kind}]" in redaction.text
    assert redaction.counts == {kind: 1}
    assert redact(redaction.text).total == 0  # a marker is never taken for a secret


@pytest.mark.parametrize("said", PROSE)
def test_ordinary_prose_is_left_untouched(said: str) -> None:
    assert redact(said).text == said


@pytest.mark.parametrize("copy", [False, True], ids=["events", "transcripts"])
def test_both_doors_store_messages_without_their_secrets(db: Any, copy: bool) -> None:
    batch = [
        row._replace(content=said)
        for row, (said, _, _) in zip(rows("m1", "m2"), SECRETS[:2], strict=True)
    ]
    with session_scope() as session:
        write(session, [FACTS], batch, copy=copy)
        assert metrics.count(metrics.SECRETS_REDACTED) == 0  # counted once it commits
    with session_scope() as session:
        stored = list(session.scalars(select(Message.content).order_by(Message.message_id)))
    assert stored == [
        "My AWS key is [redacted:aws-access-key], keep it safe.",
        "aws_secret_access_key = '[redacted:aws-access-key]'",
    ]
    assert metrics.count(metrics.SECRETS_REDACTED) == 2


def test_a_memory_is_stored_without_the_secrets_of_its_content_and_claim(db: Any) -> None:
    candidate = MemoryCandidate(
        kind="fact",
        key="ci_token",
        content="CI uses ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        importance=5,
        confidence=0.9,
        provenance="user_explicit",
        claim=Claim(
            subject="user", predicate="ci_token", value="ghp_16C7e42F292c6912E7710c838347Ae178B4a"
        ),
        source_message_ids=["m1"],
    )
    with session_scope() as session:
        store_memories(session, [(WriteScope("default", "s1"), candidate)])
    with session_scope() as session:
        memory = session.scalars(select(Memory)).one()
    assert memory.content == "CI uses [redacted:github-token]"
    assert memory.claim_value == "[redacted:github-token]"
    assert metrics.count(metrics.SECRETS_REDACTED) == 2


def test_redaction_can_be_switched_off(db: Any, settings_env: Any) -> None:
    settings_env(redact_secrets="false")
    said = SECRETS[0][0]
    with session_scope() as session:
        write(session, [FACTS], [rows("m1")[0]._replace(content=said)])
    with session_scope() as session:
        assert session.scalar(select(Message.content)) == said
    assert metrics.count(metrics.SECRETS_REDACTED) == 0


def _redis_text() -> str:
    """Every value Redis holds, as one text (strings, lists, hashes, sets, sorted sets)."""
    client = get_redis()
    read = {
        "string": client.get,
        "list": lambda key: client.lrange(key, 0, -1),
        "hash": client.hgetall,
        "set": client.smembers,
        "zset": lambda key: client.zrange(key, 0, -1),
    }
    return "\n".join(f"{key}={read[client.type(key)](key)}" for key in client.scan_iter(count=1000))


def test_the_events_stage_leaves_no_secret_in_redis_a_handoff_or_an_llm_payload(
    db: Any, settings_env: Any
) -> None:
    """A turn's secret is replaced before its live buffers, its handoff and what the LLM is
    sent are made, not only in the stored rows; list-shaped message content too."""
    settings_env(llm_base_url="http://127.0.0.1:9/v1")  # payloads are made, nothing is sent
    said, secret, _ = SECRETS[0]
    now = now_at()
    end = session_end(at=now)
    end["messages"] = [{"role": "user", "content": said}]
    compaction = {key: end[key] for key in ("namespace", "session_id", "channel", "ts")}
    compaction |= {"kind": "pre_compaction", "compaction_id": "c1",
                   "turns": [{"role": "user", "content": [{"type": "text", "text": said}]}]}  # fmt: skip
    result = ingest_batch(
        [
            turn(said, message_id="m1", at=now - 2),
            turn("I have to run, I'll continue on Discord later.", message_id="m2", at=now - 1),
            compaction,
            end,
        ]
    )
    assert result.processed == 4 and result.compactions and result.finish
    handoff = peek_handoff("pearl", "jason", "discord")
    assert handoff is not None and "[redacted:aws-access-key]" in handoff["context_summary"]
    for where, held in [
        ("redis", _redis_text()),
        ("llm payloads", json.dumps([result.compactions, result.finish])),
    ]:
        assert secret not in held, where
    assert "[redacted:aws-access-key]" in json.dumps(result.compactions)
    with session_scope() as session:
        assert session.scalar(select(Message.content).where(Message.message_id == "m1")) == (
            "My AWS key is [redacted:aws-access-key], keep it safe."
        )
    assert metrics.count(metrics.SECRETS_REDACTED) == 3  # the turn, the dump, the end
