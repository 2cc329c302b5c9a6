"""Sealing (R47): a sealed value opens only as what it was sealed as (its tenant, user and
field); plaintext passes through; a malformed key is a configuration error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from continuum.config import ConfigError
from continuum.sealing.envelope import SealBroken, open_text, seal, seal_with
from continuum.sealing.keys import current_kek, keyring
from continuum.sealing.terms import keyed_lexemes


def test_a_sealed_value_opens_only_as_what_it_was_sealed_as(db: Any, encrypted: str) -> None:
    sealed = seal(encrypted, "jason", "messages.content", "the spare key is under the mat")
    assert sealed.startswith("enc1:") and "spare" not in sealed
    assert open_text(sealed, "messages.content") == "the spare key is under the mat"
    with pytest.raises(SealBroken):  # moved into another field
        open_text(sealed, "memories.content")
    other_user = keyring.active(encrypted, "ana", "data")
    forged = seal_with(other_user, "messages.content", "x")
    body = sealed.removeprefix("enc1:")
    moved = "enc1:" + forged.removeprefix("enc1:")[:11] + body[11:]  # ana's key id, jason's bytes
    with pytest.raises(SealBroken):
        open_text(moved, "messages.content")
    assert seal(encrypted, "jason", "k", "same") != seal(encrypted, "jason", "k", "same")
    assert seal(encrypted, "jason", "k", "same", deterministic=True) == seal(
        encrypted, "jason", "k", "same", deterministic=True
    )
    assert seal("open", "jason", "messages.content", "plain") == "plain"  # not encrypted
    assert open_text("plain text", "messages.content") == "plain text"


def test_keyed_terms_differ_per_tenant(db: Any, settings_env: Callable[..., None]) -> None:
    settings_env(encryption_key="11" * 32)
    assert keyed_lexemes("a", ["lantern"]) == keyed_lexemes("a", ["lantern"])
    assert keyed_lexemes("a", ["lantern"]) != keyed_lexemes("b", ["lantern"])


def test_a_malformed_key_is_a_configuration_error(settings_env: Callable[..., None]) -> None:
    settings_env(encryption_key="abc")
    with pytest.raises(ConfigError, match="64 hex characters"):
        current_kek()


def test_a_value_under_a_destroyed_key_reads_as_forgotten(db: Any, encrypted: str) -> None:
    from sqlalchemy import update

    from continuum.sealing.envelope import FORGOTTEN
    from continuum.store.engine import session_scope
    from continuum.store.models import DataKey

    sealed = seal(encrypted, "jason", "messages.content", "the spare key is under the mat")
    with session_scope() as s:
        s.execute(update(DataKey).where(DataKey.user_id == "jason").values(wrapped=None))
    keyring.clear()
    assert open_text(sealed, "messages.content") == FORGOTTEN


def test_json_under_a_destroyed_key_reads_as_null(db: Any, encrypted: str) -> None:
    from sqlalchemy import update

    from continuum.sealing.envelope import open_json, seal_json
    from continuum.store.engine import session_scope
    from continuum.store.models import DataKey

    sealed = seal_json(encrypted, None, "dead_letters.payload", {"content": "hello"})
    assert open_json(sealed, "dead_letters.payload") == {"content": "hello"}
    with session_scope() as s:
        s.execute(update(DataKey).values(wrapped=None))
    keyring.clear()
    assert open_json(sealed, "dead_letters.payload") is None
