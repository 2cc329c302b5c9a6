"""Keyed full-text terms: an encrypted tenant's `tsv` holds HMACs of its lexemes, never words.

Postgres still stems the text (`to_tsvector('english', …)` on the plaintext passed as a
query parameter, nothing stored), and each lexeme is replaced by the first 8 bytes of its
HMAC-SHA256 under the tenant's search key, keeping its positions. A query's lexemes are
hashed the same way, so matching and ranking (BM25 over lexemes, the planner's lexeme
statistics) work unchanged. What stays visible: how often a hashed term occurs and which
rows share it (see docs/security.md).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.orm import Session as DbSession

from continuum.config import get_settings
from continuum.sealing.keys import keyring

TERM_BYTES = 8
TOPIC_TAG = "topic:"
KEYED = "k:"  # a keyed label's prefix (a label read from storage is keyed already)

_LEXEMES_SQL = text(
    "SELECT x.i, u.lexeme, u.positions FROM unnest(CAST(:texts AS text[])) WITH ORDINALITY "
    "AS x(t, i) CROSS JOIN LATERAL unnest(to_tsvector('english', x.t)) AS u"
)


def keyed_lexemes(namespace: str, lexemes: Sequence[str]) -> tuple[str, ...]:
    """`lexemes` as the tenant's keyed terms (same order)."""
    key = keyring.active(namespace, None, "search").key
    return tuple(
        hmac.new(key, lexeme.encode(), hashlib.sha256).hexdigest()[: 2 * TERM_BYTES]
        for lexeme in lexemes
    )


def keyed_label(namespace: str, value: str) -> str:
    """A label made of content words (a topic slug) as stored: keyed (`k:` and an HMAC) for
    an encrypted tenant, so equal labels still match, else unchanged."""
    if not get_settings().is_encrypted(namespace):
        return value
    return KEYED + keyed_lexemes(namespace, [value])[0]


def stored_tags(namespace: str, tags: Sequence[str]) -> list[str]:
    """Memory tags as stored: a topic tag's slug is keyed for an encrypted tenant."""
    return [
        TOPIC_TAG + keyed_label(namespace, tag.removeprefix(TOPIC_TAG))
        if tag.startswith(TOPIC_TAG) and not tag.startswith(TOPIC_TAG + KEYED)
        else tag
        for tag in tags
    ]


def keyed_tsvectors(db: DbSession, namespace: str, texts: Sequence[str]) -> list[str]:
    """The keyed `tsvector` literal of each of `texts` (one round trip for all of them)."""
    rows = db.execute(_LEXEMES_SQL, {"texts": list(texts)}).all()
    unique = sorted({row.lexeme for row in rows})
    hashed = dict(zip(unique, keyed_lexemes(namespace, unique), strict=True))
    parts: list[list[str]] = [[] for _ in texts]
    for row in rows:
        positions = ",".join(str(p) for p in row.positions or ())
        parts[row.i - 1].append(f"'{hashed[row.lexeme]}'" + (f":{positions}" if positions else ""))
    return [" ".join(items) for items in parts]


def terms_for(db: DbSession, namespace: str, texts: Sequence[str]) -> list[str | None]:
    """`keyed_tsvectors` for an encrypted tenant; None each (Postgres indexes the plaintext
    column itself) for the others."""
    if not get_settings().is_encrypted(namespace):
        return [None] * len(texts)
    return list(keyed_tsvectors(db, namespace, texts))


_QUOTED = re.compile(r"'((?:[^']|'')*)'")


def keyed_websearch(db: DbSession, namespace: str, query: str) -> str:
    """`websearch_to_tsquery('english', query)` with every lexeme keyed: a tsquery over an
    encrypted tenant's terms (quotes, OR and -word keep their meaning)."""
    plain = db.execute(
        text("SELECT CAST(websearch_to_tsquery('english', :q) AS text)"), {"q": query}
    ).scalar_one()
    lexemes = [m.group(1).replace("''", "'") for m in _QUOTED.finditer(plain)]
    keyed = iter(keyed_lexemes(namespace, lexemes))
    return _QUOTED.sub(lambda _: f"'{next(keyed)}'", plain)
