"""Export and import (#34) on real servers: the demo's conversations through the real worker,
exported, imported into an empty database by `continuum import` and exported again,
byte for byte, for a plaintext and an encrypted tenant; importing twice is importing once; a
damaged or newer-version archive is refused with nothing written; a plaintext tenant imported
into an encrypted one is sealed at rest, and back."""

from __future__ import annotations

import hashlib
import io
import json
from typing import Any

import pytest
from sqlalchemy import text

from continuum.memory.documents import get_document
from continuum.portability.archive import RECORD_TYPES, ArchiveRefused, validate
from continuum.portability.exporting import Export, ExportRefused, check_exportable
from continuum.portability.importing import import_archive
from continuum.store.engine import session_scope
from tests.support.dumps import database_dump
from tests.support.portability import (
    PHRASES,
    USER,
    add_every_kind,
    cli,
    counts,
    fresh_database,
    load_demo,
)
from tests.support.seed import seed


def _archive(namespace: str, user: str | None = None) -> bytes:
    return b"".join(Export(namespace, user))


def _records(archive: bytes) -> list[dict[str, Any]]:
    """The records of an archive, without header and manifest."""
    return [json.loads(line) for line in archive.splitlines()[1:-1]]


def _without(records: list[dict[str, Any]], *fields: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in record.items() if k not in fields} for record in records]


@pytest.fixture
def fresh(servers: dict[str, str]) -> str:
    return fresh_database(servers["database_url"])


SEALED = (
    ("messages", "content"), ("memories", "content"), ("tasks", "title"),
    ("tasks", "description"), ("cron_reports", "summary"),
)  # fmt: skip


def _column(namespace: str, table: str, column: str) -> list[str]:
    """A column of the tenant's rows as stored, as text (`*`: each whole row as JSON)."""
    value = "row_to_json(t)" if column == "*" else f"t.{column}"
    with session_scope() as db:
        return list(db.scalars(text(
            f"SELECT CAST({value} AS text) FROM {table} t WHERE namespace = :ns"
            f" AND {value} IS NOT NULL"), {"ns": namespace}))  # fmt: skip


def _round_trip(namespace: str, fresh: str, tmp_path: Any, *export_flags: str) -> bytes:
    """Export `namespace`, import it into the empty database twice with the CLI, export it
    there again; asserts the second export is the first, byte for byte; the archive."""
    archive = _archive(namespace)
    _, manifest = validate(archive.splitlines(keepends=True))
    assert all(manifest.counts[kind] for kind in RECORD_TYPES), manifest.counts
    memories = [r for r in _records(archive) if r["type"] == "memory"]
    assert any(r["superseded_by"] for r in memories), "a supersession chain is exported"
    assert any(r["source_message_ids"] and r["kind"] != "fact" for r in memories)
    path = tmp_path / "tenant.jsonl"
    path.write_bytes(archive)

    first = cli("import", str(path), "--json", database_url=fresh)
    assert first.returncode == 0, first.stderr.decode()
    after_first = counts(fresh)
    second = cli("import", str(path), "--json", database_url=fresh)
    assert second.returncode == 0, second.stderr.decode()
    report = json.loads(second.stdout)
    assert sum(report["inserted"].values()) == 0, "importing twice is importing once"
    assert report["existing"] == manifest.counts
    assert counts(fresh) == after_first

    again = tmp_path / "again.jsonl"
    exported = cli("export", "-n", namespace, "-o", str(again), *export_flags, database_url=fresh)
    assert exported.returncode == 0, exported.stderr.decode()
    assert again.read_bytes() == archive
    return archive


def test_the_demo_tenant_round_trips_byte_for_byte_through_an_empty_database(
    db: Any, worker: Any, client: Any, fresh: str, tmp_path: Any
) -> None:
    load_demo(client, "pearl")
    _round_trip("pearl", fresh, tmp_path)


def test_an_encrypted_tenant_round_trips_byte_for_byte_and_stays_sealed_there(
    db: Any, worker: Any, client: Any, encrypted: str, fresh: str, tmp_path: Any
) -> None:
    load_demo(client, encrypted)
    with pytest.raises(ExportRefused, match="--plaintext"):
        check_exportable(encrypted, plaintext=False)
    refused = cli("export", "-n", encrypted, "-o", str(tmp_path / "no.jsonl"))
    assert refused.returncode == 2 and b"--plaintext" in refused.stderr
    assert not (tmp_path / "no.jsonl").exists()

    archive = _round_trip(encrypted, fresh, tmp_path, "--plaintext")
    assert all(phrase.encode() in archive for phrase in PHRASES)  # the archive is plaintext
    dump = database_dump(fresh)
    assert not [phrase for phrase in PHRASES if phrase.encode() in dump]
    said = next(r["content"] for r in _records(archive) if r["type"] == "message")
    assert said.encode() not in dump


def test_a_plaintext_tenant_imported_into_an_encrypted_one_is_sealed_there_and_back(
    db: Any, encrypted: str, servers: dict[str, str]
) -> None:
    seed("pearl")
    add_every_kind("pearl")
    archive = _archive("pearl")
    report = import_archive(io.BytesIO(archive), encrypted)
    assert report.inserted["message"] == 60 and report.inserted["task"] == 1

    raw = {(table, column): _column(encrypted, table, column) for table, column in SEALED}
    every_row = " ".join(
        value
        for table in ("sessions", "messages", "memories", "tasks", "cron_reports")
        for value in _column(encrypted, table, "*")
    )
    assert all(values for values in raw.values())
    assert all(v.startswith("enc2:") for values in raw.values() for v in values)
    assert not [phrase for phrase in (*PHRASES, "Hoffmann", "appointments") if phrase in every_row]
    # the document is found again by its path (its key follows from it in the target)
    assert get_document(encrypted, ("notes", "garden"), "lights") is not None

    sealed = _archive(encrypted)  # opens strictly: every seal is bound to its new row
    mine, theirs = _records(archive), _records(sealed)
    # keyed in the target (idempotency keys, topic tags), or a task id another tenant holds
    keyed = ("idempotency_key", "tags", "task_id")
    assert _without(theirs, *keyed) == _without(mine, *keyed)

    back = import_archive(io.BytesIO(sealed), "plain")
    assert sum(back.inserted.values()) == len(mine)
    # from an encrypted tenant the keys are keyed already: kept as they are
    assert _without(_records(_archive("plain")), "task_id") == _without(theirs, "task_id")


def _damaged(archive: bytes) -> dict[str, tuple[bytes, str]]:
    lines = archive.splitlines(keepends=True)
    header = json.loads(lines[0])
    newer = json.dumps({**header, "version": 2}, sort_keys=True, separators=(",", ":"))
    return {
        "truncated mid-line": (archive[: len(archive) // 2], "truncated|not JSON"),
        "without its manifest": (b"".join(lines[:-1]), "no manifest"),
        "altered": (archive.replace(b"Hoffmann", b"Hoffmanm", 1), "checksum"),
        "newer": (newer.encode() + b"\n" + b"".join(lines[1:]), "newer .* upgrade Continuum"),
        "malformed": (b"".join([*lines[:3], b"{not json\n", *lines[3:]]), "line 4 is not JSON"),
        "a record of no known type": (
            b"".join([*lines[:2], b'{"type":"secret"}\n', *lines[2:]]),
            "unknown record type",
        ),
        "a line reformatted, its manifest made to match": (_reformatted(lines), "checksum"),
    }


def _reformatted(lines: list[bytes]) -> bytes:
    """The archive with its second line as the same record in other JSON (spaces after the
    separators), and the manifest's checksum recomputed over the new bytes."""
    second = (json.dumps(json.loads(lines[1]), sort_keys=True) + "\n").encode()
    body = [lines[0], second, *lines[2:-1]]
    manifest = {**json.loads(lines[-1]), "sha256": hashlib.sha256(b"".join(body)).hexdigest()}
    canonical = json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n"
    return b"".join([*body, canonical.encode()])


def test_a_damaged_or_newer_archive_is_refused_and_nothing_of_it_is_written(
    db: Any, servers: dict[str, str], tmp_path: Any
) -> None:
    seed("pearl")
    add_every_kind("pearl")
    archive = _archive("pearl")
    import_archive(io.BytesIO(archive), "copy")  # the target is not empty
    before = counts(servers["database_url"])
    for name, (bad, reason) in _damaged(archive).items():
        with pytest.raises(ArchiveRefused, match=reason):
            import_archive(io.BytesIO(bad), "fresh")
        with pytest.raises(ArchiveRefused, match=reason):
            import_archive(io.BytesIO(bad), "copy")
        assert counts(servers["database_url"]) == before, name
    path = tmp_path / "cut.jsonl"
    path.write_bytes(_damaged(archive)["without its manifest"][0])
    refused = cli("import", str(path), "-n", "fresh")
    assert refused.returncode == 1
    assert b"truncated" in refused.stderr and b"nothing was imported" in refused.stderr
    assert counts(servers["database_url"]) == before


def test_one_users_export_holds_their_rows_only(db: Any) -> None:
    seed("pearl")
    add_every_kind("pearl")
    with session_scope() as db_session:
        db_session.execute(text("UPDATE sessions SET user_id = 'ana' WHERE session_id LIKE '%-0'"))
        db_session.execute(text("UPDATE messages SET user_id = 'ana' WHERE session_id LIKE '%-0'"))
    records = _records(_archive("pearl", USER))
    assert {r.get("user_id") for r in records} == {USER}
    assert not [r for r in records if r["type"] == "cron_report"]
    assert not [
        r for r in records if r.get("session_id") == "pearl-voice-0" and r["type"] != "memory"
    ]


def test_the_targets_rules_hold_a_private_tenant_gets_no_turns_a_forgotten_user_nothing(
    db: Any, settings_env: Any
) -> None:
    from continuum.security.forget import forget_user

    seed("pearl")
    add_every_kind("pearl")
    archive = _archive("pearl")
    settings_env(private_namespaces="hushed")
    hushed = import_archive(io.BytesIO(archive), "hushed")
    assert (hushed.inserted["message"], hushed.skipped["message"]) == (0, 60)
    assert hushed.inserted["memory"] > 0 and not _column("hushed", "messages", "*")

    forget_user("gone", USER)
    gone = import_archive(io.BytesIO(archive), "gone")
    assert gone.inserted["cron_report"] == 4  # the tenant's, no user's
    assert sum(gone.inserted.values()) == 4 and gone.skipped["message"] == 60
    assert all(not _column("gone", table, "*") for table in ("messages", "memories", "tasks"))
