"""A LangGraph store (`BaseStore`) kept in Continuum, over the HTTP API: what a graph `put`s is
a document (a memory of kind `document`, `continuum.memory.documents`) of the client's
tenant, so it is searched by Continuum's hybrid search, shown by the context block, sealed
at rest and forgotten with its user like every memory.

The mapping:
- the tenant is the client's (its token's namespace, or `instance`); the namespace tuple is
  the document's path, whole;
- `user_label` names the label of the path that is the user (`("memories", "jason")` with
  `user_label=1`: user `jason`), so forgetting that user removes their items;
- the value is kept as given; the text it is found by is the store's index fields (LangGraph's
  `IndexConfig["fields"]`, default `["$"]`: the whole value as JSON) or those of the put's
  `index`, joined; `index=False` stores it unfound by queries. `dims` and `embed` of an
  index config are not used: Continuum embeds with its own model;
- `search` with a `query` is hybrid search (vectors and full text, fused; `score` is the
  fused score), without one the most recently updated items; `filter` keeps items whose value
  matches (`$eq $ne $gt $gte $lt $lte`, nested objects).

TTLs are not supported (`supports_ttl` is False). A batch runs its operations in order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
    validate_op_namespace,
)

from continuum.sdk import AsyncClient, Client
from continuum.sdk.calls import Call
from continuum.sdk.models import Document
from continuum.sdk.routes import (
    delete_document,
    document_namespaces,
    get_document,
    put_document,
    search_documents,
)

WHOLE_VALUE = "$"


class ContinuumStore(BaseStore):
    """LangGraph's store interface on Continuum's documents (see the module docstring).

    `client` serves `batch`; `async_client`, when given, serves `abatch` (else `abatch`
    runs `batch` on a thread)."""

    supports_ttl = False

    def __init__(
        self,
        client: Client,
        *,
        async_client: AsyncClient | None = None,
        index: IndexConfig | None = None,
        user_label: int | None = None,
    ) -> None:
        self.client = client
        self.async_client = async_client
        self.fields = list((index or {}).get("fields") or [WHOLE_VALUE])
        self.user_label = user_label

    # -- what each operation sends -------------------------------------------------------
    def _text(self, op: PutOp) -> str | None:
        """The text an item is found by: its index fields' texts, joined (None: unfound)."""
        if op.index is False or op.value is None:
            return None
        texts = [t for path in (op.index or self.fields) for t in get_text_at_path(op.value, path)]
        return "\n".join(texts) if texts else None

    def _user(self, namespace: Sequence[str]) -> str | None:
        if self.user_label is None or self.user_label >= len(namespace):
            return None
        return namespace[self.user_label]

    def _call(self, op: Op) -> Call[Any]:
        validate_op_namespace(op)
        if isinstance(op, GetOp):
            return get_document(op.namespace, op.key)
        if isinstance(op, PutOp):
            if op.value is None:
                return delete_document(op.namespace, op.key)
            return put_document(op.namespace, op.key, op.value, text=self._text(op),
                                user_id=self._user(op.namespace))  # fmt: skip
        if isinstance(op, SearchOp):
            return search_documents(op.namespace_prefix, query=op.query, filter=op.filter,
                                    limit=op.limit, offset=op.offset)  # fmt: skip
        if isinstance(op, ListNamespacesOp):
            sides = {c.match_type: c.path for c in op.match_conditions or ()}
            return document_namespaces(prefix=sides.get("prefix", ()), max_depth=op.max_depth,
                                       suffix=sides.get("suffix", ()), limit=op.limit,
                                       offset=op.offset)  # fmt: skip
        raise ValueError(f"unknown store operation {type(op).__name__}")

    @staticmethod
    def _result(op: Op, answer: Any) -> Result:
        if isinstance(op, GetOp):
            return _item(answer) if answer is not None else None
        if isinstance(op, SearchOp):
            return [_search_item(document) for document in answer]
        if isinstance(op, ListNamespacesOp):
            return list(answer)
        return None  # a put or a delete

    # -- BaseStore -----------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._result(op, self.client.send(self._call(op))) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        if self.async_client is None:
            return await asyncio.to_thread(self.batch, list(ops))
        return [self._result(op, await self.async_client.send(self._call(op))) for op in ops]


def _item(document: Document) -> Item:
    return Item(value=document.value, key=document.key, namespace=tuple(document.namespace),
                created_at=document.created_at, updated_at=document.updated_at)  # fmt: skip


def _search_item(document: Document) -> SearchItem:
    return SearchItem(namespace=tuple(document.namespace), key=document.key, value=document.value,
                      created_at=document.created_at, updated_at=document.updated_at,
                      score=document.score)  # fmt: skip
