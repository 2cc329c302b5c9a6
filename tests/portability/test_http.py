"""`GET /v1/export` and `POST /v1/import` over real HTTP (uvicorn), through the Python client:
scoped to the token's tenant like every route, so another tenant's token can neither export
it nor import into it; a damaged archive is a 422 with nothing written; an encrypted tenant's
export needs `plaintext=true`."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from continuum.portability.exporting import Export
from continuum.sdk import Client, InvalidRequest, NotFound, Retries
from continuum.security.tokens import create_token
from tests.support.portability import add_every_kind, counts
from tests.support.seed import seed


def _client(api_url: str, *namespaces: str, instance: str | None = None) -> Client:
    token = create_token(list(namespaces))[0]
    return Client(api_url, token, instance=instance, retries=Retries(attempts=0))


def test_a_token_exports_and_imports_its_own_tenant_only(
    db: Any, api_url: str, servers: dict[str, str]
) -> None:
    seed("pearl")
    add_every_kind("pearl")
    archive = b"".join(Export("pearl"))
    with _client(api_url, "pearl") as pearl, _client(api_url, "onyx") as onyx:
        assert pearl.export_archive().encode() == archive
        with httpx.stream("GET", f"{api_url}/v1/export", headers=pearl.http.headers) as answer:
            assert answer.headers["content-type"] == "application/x-ndjson"
            assert b"".join(answer.iter_bytes()) == archive  # streamed, whole
        with _client(api_url, "onyx", instance="pearl") as prying:
            with pytest.raises(NotFound):
                prying.export_archive()
            with pytest.raises(NotFound):
                prying.import_archive(archive)
        before = counts(servers["database_url"])
        with pytest.raises(InvalidRequest, match="checksum"):
            onyx.import_archive(archive.replace(b"Hoffmann", b"Hoffmanm", 1))
        assert counts(servers["database_url"]) == before

        report = onyx.import_archive(archive)  # into the token's tenant, whatever it names
        assert (report.namespace, report.source) == ("onyx", "pearl")
        assert report.inserted["message"] == 60 and report.inserted["cron_report"] == 4
        assert sum(onyx.import_archive(archive).inserted.values()) == 0  # twice is once
        assert pearl.export_archive().encode() == archive  # the exported tenant is untouched
        assert onyx.export_archive(user_id="jason").count('"type":"message"') == 60


def test_an_encrypted_tenants_export_needs_plaintext_consent(
    db: Any, api_url: str, encrypted: str
) -> None:
    add_every_kind(encrypted)
    with _client(api_url, encrypted) as vault:
        with pytest.raises(InvalidRequest, match="plaintext"):
            vault.export_archive()
        assert "Four Hue lamps" in vault.export_archive(plaintext=True)
