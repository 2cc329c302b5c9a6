"""Search queries on the local model's ONNX graph: the model's own vectors, a damaged graph
exported again, and queries kept on PyTorch where no graph can be written. The real model,
the real exporter and ONNX Runtime."""

from __future__ import annotations

import copy
import threading
from pathlib import Path

import numpy as np
import pytest

from continuum.config import get_settings
from continuum.inference import embedding
from continuum.inference.query_graph import _graph_path, query_encoder

# Unlike lengths in one batch (padding), one past the model's window (truncation), an empty
# query and one beyond ASCII.
TEXTS = [
    "",
    "sister's wedding",
    "When did we decide to move the launch to Thursday, and who objected?",
    "Ünïcödé: 東京で会いましょう",
    "word " * 600,
]


@pytest.fixture(scope="module")
def local() -> embedding.LocalEmbedder:
    embedder = embedding.get_embedder()
    if not isinstance(embedder, embedding.LocalEmbedder):
        pytest.skip("the local model is not the configured embedder")
    return embedder


def _fresh(local: embedding.LocalEmbedder) -> embedding.LocalEmbedder:
    """The same loaded model, its query path not loaded yet."""
    other = copy.copy(local)
    other._queries = []
    other._lock = threading.Lock()
    return other


def test_queries_on_the_graph_get_the_models_own_vectors(local: embedding.LocalEmbedder) -> None:
    queries = local.embed_queries(TEXTS)
    assert local.query_runtime == "onnxruntime"
    assert np.abs(np.array(queries) - np.array(local.embed(TEXTS))).max() < 1e-5
    alone = local.embed_queries(TEXTS[1:2])  # as in a batch, where it was padded
    assert np.abs(np.array(alone[0]) - np.array(queries[1])).max() < 1e-5


def test_a_damaged_graph_is_exported_again(local: embedding.LocalEmbedder, tmp_path: Path) -> None:
    """A graph file cut short (a disk that filled, a copy that stopped) is not loaded
    into queries: it is exported again and the queries get the model's vectors."""
    model = local._model
    path = _graph_path(model, local.model_name, tmp_path)
    path.write_bytes(b"\x08\x07not a graph")
    encode = query_encoder(model, local.model_name, tmp_path, threads=1)
    assert encode is not None
    assert path.stat().st_size > 1_000_000  # the model's weights, whole
    assert np.abs(encode(TEXTS) - np.array(local.embed(TEXTS))).max() < 1e-5
    assert not list(tmp_path.glob("*.partial"))


def test_queries_stay_on_pytorch_where_no_graph_can_be_written(
    local: embedding.LocalEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model cache where the graph cannot be stored (here a file): queries are still
    answered, by PyTorch, with the same vectors."""
    (tmp_path / "cache").write_text("not a folder")
    monkeypatch.setenv("CONTINUUM_MODEL_CACHE", str(tmp_path / "cache"))
    get_settings.cache_clear()
    try:
        fresh = _fresh(local)
        assert fresh.query_runtime == ""
        queries = fresh.embed_queries(TEXTS)
    finally:
        get_settings.cache_clear()
    assert fresh.query_runtime == "pytorch"
    assert np.abs(np.array(queries) - np.array(local.embed(TEXTS))).max() < 1e-5
