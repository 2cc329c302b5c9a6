"""Sealing (R47): a sealed value opens only as what it was sealed as (its tenant, user,
field and row); a value sealed before rows were bound still opens; plaintext passes through;
a malformed key is a configuration error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from continuum.config import ConfigError
from continuum.sealing.envelope import (
    RowUnknown,
    SealBroken,
    attached_row,
    open_text,
    seal,
    seal_with,
)
from continuum.sealing.keys import current_kek, keyring
from continuum.sealing.terms import keyed_lexemes
from tests.support.encryption import legacy_seal


def test_a_sealed_value_opens_only_as_what_it_was_sealed_as(db: Any, encrypted: str) -> None:
    sealed = seal(encrypted, "jason", "messages.content", "the spare key is under the mat", 7)
    assert sealed.startswith("enc2:") and "spare" not in sealed
    assert open_text(sealed, "messages.content", 7) == "the spare key is under the mat"
    with pytest.raises(SealBroken, match="row 8"):  # moved into another row
        open_text(sealed, "messages.content", 8)
    with pytest.raises(SealBroken):  # moved into another field
        open_text(sealed, "memories.content", 7)
    with pytest.raises(RowUnknown):  # read without saying from which row
        open_text(sealed, "messages.content", None)
    other_user = keyring.active(encrypted, "ana", "data")
    forged = seal_with(other_user, "messages.content", "x", 7)
    body = sealed.removeprefix("enc2:")
    moved = "enc2:" + forged.removeprefix("enc2:")[:11] + body[11:]  # ana's key id, jason's bytes
    with pytest.raises(SealBroken):
        open_text(moved, "messages.content", 7)
    assert seal(encrypted, "jason", "k", "same", 1) != seal(encrypted, "jason", "k", "same", 1)
    assert seal(encrypted, "jason", "k", "same", 1, deterministic=True) == seal(
        encrypted, "jason", "k", "same", 1, deterministic=True
    )
    assert seal(encrypted, "jason", "k", "same", 1, deterministic=True) != seal(
        encrypted, "jason", "k", "same", 2, deterministic=True
    )  # a row of its own, even deterministically
    assert seal("open", "jason", "messages.content", "plain", 1) == "plain"  # not encrypted
    assert open_text("plain text", "messages.content", None) == "plain text"


def test_a_value_read_with_its_row_attached_opens_as_that_row(db: Any, encrypted: str) -> None:
    """What the column types read: the stored value, `@` and the row's identity in hex."""
    sealed = seal(encrypted, None, "cron_reports.summary", "the digest", "cron-1")
    assert attached_row(sealed + "@" + b"cron-1".hex()) == (sealed, "cron-1")
    assert open_text(sealed + "@" + b"cron-1".hex(), "cron_reports.summary", None) == "the digest"
    with pytest.raises(SealBroken):
        open_text(sealed + "@" + b"cron-2".hex(), "cron_reports.summary", None)
    looks_sealed = "enc2:not base64 at all@home"  # plaintext: the mark appended is taken off
    assert open_text(looks_sealed + "@" + b"9".hex(), "messages.content", None) == looks_sealed


def test_a_value_sealed_before_rows_were_bound_still_opens(db: Any, encrypted: str) -> None:
    old = legacy_seal(encrypted, "jason", "messages.content", "the spare key is under the mat")
    assert old.startswith("enc1:")
    for row in (None, 7, 8):  # bound to no row: any row reads it
        assert open_text(old, "messages.content", row) == "the spare key is under the mat"
    with pytest.raises(SealBroken):  # still bound to its field
        open_text(old, "memories.content", 7)


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

    sealed = seal(encrypted, "jason", "messages.content", "the spare key is under the mat", 1)
    with session_scope() as s:
        s.execute(update(DataKey).where(DataKey.user_id == "jason").values(wrapped=None))
    keyring.clear()
    assert open_text(sealed, "messages.content", 1) == FORGOTTEN


def test_json_under_a_destroyed_key_reads_as_null(db: Any, encrypted: str) -> None:
    from sqlalchemy import update

    from continuum.sealing.envelope import open_json, seal_json
    from continuum.store.engine import session_scope
    from continuum.store.models import DataKey

    sealed = seal_json(encrypted, None, "dead_letters.payload", {"content": "hello"}, 1)
    assert open_json(sealed, "dead_letters.payload", 1) == {"content": "hello"}
    with session_scope() as s:
        s.execute(update(DataKey).values(wrapped=None))
    keyring.clear()
    assert open_json(sealed, "dead_letters.payload", 1) is None
