"""Documents: JSON values under a namespace path and a key (a LangGraph store's items), kept as
memories of kind `document` (`continuum.memory.documents` says how). Put, get and delete one;
find them under a path prefix by filter, or by meaning and words through hybrid search; list
the paths.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, status
from pydantic import AfterValidator, BaseModel, Field

from continuum.api.auth import NOT_FOUND, ScopeDep
from continuum.api.errors import field_error
from continuum.memory import documents
from continuum.memory.documents import Document, DocumentRefused
from continuum.recall.scope import SearchFilters
from continuum.recall.search import CANDIDATES, search

router = APIRouter(prefix="/v1/documents", tags=["documents"])
MAX_LABELS = 32
MAX_RESULTS = 1000


def _label(value: str) -> str:
    if documents.SEPARATOR in value:
        raise ValueError(f"a label may not contain {documents.SEPARATOR!r}")
    if "\x00" in value:
        raise ValueError("a label may not contain NUL")
    return value


Label = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_label)]
PathIn = Annotated[list[Label], Field(max_length=MAX_LABELS)]
Pattern = Annotated[list[str], Field(max_length=MAX_LABELS)]  # labels or `*`
Key = Annotated[str, Field(min_length=1, max_length=1000, pattern=r"^[^\x00]*$")]
PathQuery = Annotated[
    list[str], Query(min_length=1, max_length=MAX_LABELS, description="Path, one label each.")
]
KeyQuery = Annotated[str, Query(min_length=1, max_length=1000)]


class DocumentIn(BaseModel):
    namespace: Annotated[PathIn, Field(min_length=1)]
    key: Key
    value: dict[str, Any]
    text: Annotated[str | None, Field(max_length=100_000)] = Field(
        default=None, description="What the document is found by; null: not found by a query."
    )
    user_id: Annotated[str | None, Field(min_length=1, max_length=200)] = None


class SearchIn(BaseModel):
    namespace_prefix: PathIn = Field(default_factory=list)
    query: Annotated[str | None, Field(max_length=500)] = None
    filter: dict[str, Any] | None = None
    limit: Annotated[int, Field(ge=1, le=200)] = 10
    offset: Annotated[int, Field(ge=0, le=MAX_RESULTS)] = 0


class NamespacesIn(BaseModel):
    prefix: Pattern = Field(default_factory=list)
    suffix: Pattern = Field(default_factory=list)
    max_depth: Annotated[int | None, Field(ge=1)] = None
    limit: Annotated[int, Field(ge=1, le=1000)] = 100
    offset: Annotated[int, Field(ge=0)] = 0


class Documents(BaseModel):
    items: list[Document]


class Namespaces(BaseModel):
    namespaces: list[list[str]]


def _path(labels: list[str]) -> tuple[str, ...]:
    """A path from query parameters, each label checked as a body's would be."""
    for index, label in enumerate(labels):
        try:
            _label(label)
        except ValueError as exc:
            raise field_error(("query", "namespace", index), str(exc)) from None
    return tuple(labels)


@router.put("/item")
def put_document(scope: ScopeDep, document: DocumentIn) -> Document:
    """Store a value under (namespace, key), replacing what was there."""
    try:
        return documents.put_document(
            scope.namespace,
            tuple(document.namespace),
            document.key,
            document.value,
            document.text,
            document.user_id,
        )
    except DocumentRefused as exc:
        code = status.HTTP_409_CONFLICT if exc.field == "user_id" else 422
        raise field_error(("body", *exc.field.split(".")), str(exc), code) from None


@router.get("/item")
def get_document(scope: ScopeDep, namespace: PathQuery, key: KeyQuery) -> Document:
    found = documents.get_document(scope.namespace, _path(namespace), key)
    if found is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, NOT_FOUND)
    return found


@router.delete("/item")
def delete_document(scope: ScopeDep, namespace: PathQuery, key: KeyQuery) -> dict[str, bool]:
    """Remove it; `deleted: false` when there was none (deleting is idempotent)."""
    return {"deleted": documents.delete_document(scope.namespace, _path(namespace), key)}


@router.post("/search")
def search_documents(scope: ScopeDep, query: SearchIn) -> Documents:
    """Documents under a path prefix: with `query`, by hybrid search (the best first, each
    with its score; documents stored without text are not found by a query); without, most
    recently updated first. `filter` keeps those whose value matches (exact values, nested
    objects, `$eq $ne $gt $gte $lt $lte`)."""
    prefix = tuple(query.namespace_prefix)
    try:
        if query.filter:
            documents.check_filter(query.filter)  # an unknown operator is refused up front
        if not query.query or not query.query.strip():
            return Documents(
                items=documents.find_documents(
                    scope.namespace, prefix, query.filter, query.limit, query.offset
                )
            )
    except ValueError as exc:
        raise field_error(("body", "filter"), str(exc)) from None
    wanted = query.offset + query.limit
    hits = search(
        scope.namespace,
        query.query,
        limit=min(wanted * (4 if query.filter else 1), MAX_RESULTS),
        filters=SearchFilters(
            kinds=(documents.KIND,), tags=(documents.prefix_tag(prefix),) if prefix else ()
        ),
        sources=("memory",),
        candidates=max(wanted * 4, CANDIDATES),
    )
    by_id = documents.documents_by_id(scope.namespace, [hit.id for hit in hits])
    found = []
    for hit in hits:
        document = by_id.get(hit.id)
        if document is None or not document.indexed:
            continue
        if query.filter and not documents.matches(document.value, query.filter):
            continue
        found.append(document.model_copy(update={"score": hit.score}))
    return Documents(items=found[query.offset : wanted])


@router.post("/namespaces")
def list_namespaces(scope: ScopeDep, query: NamespacesIn) -> Namespaces:
    """The paths that hold documents, matching `prefix` and `suffix` (`*`: any one label),
    cut to `max_depth` labels, sorted."""
    found = documents.list_paths(
        scope.namespace, query.prefix, query.suffix, query.max_depth, query.limit, query.offset
    )
    return Namespaces(namespaces=[list(path) for path in found])
