"""`GET /v1/export` and `POST /v1/import`: the token's tenant as an archive and back
(`continuum.portability`, docs/design.md *Export and import*)."""

from __future__ import annotations

import tempfile
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request, status
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse

from continuum.api.auth import ScopeDep
from continuum.api.errors import detail, field_error
from continuum.domain.records import ImportReport
from continuum.portability.archive import ArchiveRefused
from continuum.portability.exporting import Export, ExportRefused, check_exportable
from continuum.portability.importing import import_archive

router = APIRouter(prefix="/v1", tags=["portability"])
ARCHIVE = "application/x-ndjson"
_ARCHIVE_BODY = {"content": {ARCHIVE: {"schema": {"type": "string"}}}}
SPOOLED_BYTES = 8 << 20  # an archive larger than this waits on disk, not in memory


@router.get(
    "/export",
    name="export_archive",
    response_class=StreamingResponse,
    responses={200: {"description": "The archive, JSON Lines.", **_ARCHIVE_BODY}},
)
def export(
    scope: ScopeDep,
    user_id: Annotated[
        str | None, Query(max_length=200, description="Only this user's rows.")
    ] = None,
    plaintext: Annotated[
        bool, Query(description="Export an encrypted tenant: the archive holds its text opened.")
    ] = False,
) -> StreamingResponse:
    """The tenant's archive, streamed: a header, its records, a manifest with counts and a
    SHA-256 last (an answer cut short has no manifest, and import refuses it)."""
    namespace = scope.namespace
    try:
        check_exportable(namespace, plaintext=plaintext)
    except ExportRefused as exc:
        raise field_error(("query", "plaintext"), str(exc)) from None
    return StreamingResponse(
        Export(namespace, user_id).chunks(),
        media_type=ARCHIVE,
        headers={"Content-Disposition": f'attachment; filename="{namespace}.jsonl"'},
    )


@router.post(
    "/import",
    name="import_archive",
    openapi_extra={"requestBody": {"required": True, **_ARCHIVE_BODY}},
)
async def import_(scope: ScopeDep, request: Request) -> ImportReport:
    """Import an archive (the body, as `GET /v1/export` gave it) into the tenant: all of it
    or nothing (422 naming what is wrong with it); twice is once. Answers what was inserted,
    already there, or not written, per record type."""
    namespace = scope.namespace
    with tempfile.SpooledTemporaryFile(max_size=SPOOLED_BYTES) as file:
        async for chunk in request.stream():
            file.write(chunk)
        try:
            report = await run_in_threadpool(import_archive, file, namespace)
        except ArchiveRefused as exc:
            raise HTTPException(
                status.HTTP_422_UNPROCESSABLE_CONTENT,
                [detail(["body"], f"{exc}; nothing was imported", "archive_refused")],
            ) from None
    return report
