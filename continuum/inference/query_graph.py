"""The local model's search-query path: the sentence-transformers model, pooling included,
exported once to an ONNX graph and run on ONNX Runtime.

A search query is one short text, embedded on every search and context call. PyTorch spends
most of such a call dispatching operators one by one, taking the interpreter lock between
them; ONNX Runtime runs the whole graph in one call without it. On one thread of this
project's two-core machine: 3.4 ms a query alone against 9.5 with PyTorch, 2.5 against
3.0 a query in batches of 8; the same vectors (largest difference 2e-7).

The graph is exported with torch's exporter into `CONTINUUM_MODEL_CACHE` (default
`~/.cache/continuum`) by the first process of the machine that needs it (about 5-10 s, under
a file lock), and loaded by every process after, whatever its home. Before a graph serves,
its vectors are checked against PyTorch's on probe texts (padded, truncated): a graph that
disagrees or does not load is exported again, once; a model that cannot be exported, or
whose new graph still fails that check, keeps its queries on PyTorch, with a warning. Documents are always
embedded by PyTorch, with sentence-transformers' own batching.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

INPUTS = ("input_ids", "attention_mask", "token_type_ids")  # what the graph may take
# Texts of unlike lengths in one batch (padding) and one beyond the model's window
# (truncation): where an export that fixed a shape or a branch would go wrong.
PROBES = ("a", "What did I tell you about my sister's wedding in June?", "word " * 400)
# The exporter's progress notes, and its warnings of vision operators it has no use for.
EXPORTER_LOGGERS = ("torch.onnx", "torch.export", "onnxscript", "onnx_ir")
AGREEMENT = 1e-4  # the largest difference allowed in any coordinate of a normalised vector

QueryEncoder = Callable[[list[str]], np.ndarray]  # texts -> normalised vectors


def _normalised(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.asarray(vectors / np.where(norms == 0, 1.0, norms), dtype=np.float32)


@contextmanager
def _quiet(*names: str) -> Iterator[None]:
    """Those loggers' notes below errors kept out of the output while in the block."""
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _graph_path(model: Any, name: str, folder: Path) -> Path:
    import sentence_transformers
    import torch

    key = f"{name}|{model.max_seq_length}|{torch.__version__}|{sentence_transformers.__version__}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return folder / f"{Path(name).name}-{digest}.onnx"


def _export(model: Any, inputs: tuple[str, ...], path: Path) -> None:
    """Write `model`'s forward pass, tokens in, pooled sentence embedding out, to `path`."""
    import torch

    class Pipeline(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            return self.model(dict(zip(inputs, tensors, strict=True)))["sentence_embedding"]

    features = model.preprocess(list(PROBES))
    batch, tokens = torch.export.Dim("batch"), torch.export.Dim("tokens")
    with warnings.catch_warnings(), torch.no_grad(), _quiet(*EXPORTER_LOGGERS):
        warnings.simplefilter("ignore")  # the exporter's notes on operators it need not use
        program = torch.onnx.export(
            Pipeline().eval(),
            tuple(features[name] for name in inputs),
            dynamo=True,
            dynamic_shapes=(tuple({0: batch, 1: tokens} for _ in inputs),),
            input_names=list(inputs),
            output_names=["sentence_embedding"],
            verbose=False,
        )
    assert program is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.partial")
    program.save(str(partial), external_data=False)
    partial.replace(path)  # whole or absent: another process never loads half a graph


def _encoder(model: Any, inputs: tuple[str, ...], path: Path, threads: int) -> QueryEncoder:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def encode(texts: list[str]) -> np.ndarray:
        features = model.preprocess(texts)
        feeds = {name: features[name].numpy() for name in inputs}
        return _normalised(session.run(None, feeds)[0])

    return encode


def _checked(model: Any, inputs: tuple[str, ...], path: Path, threads: int) -> QueryEncoder | str:
    """The graph at `path` on ONNX Runtime if it loads and gives PyTorch's vectors for the
    probes; else what is wrong with it."""
    try:
        encode = _encoder(model, inputs, path, threads)
    except Exception as exc:  # a truncated or foreign file
        return f"does not load ({exc})"
    expected = model.encode(
        list(PROBES), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    if np.abs(encode(list(PROBES)) - expected).max() > AGREEMENT:
        return "disagrees with the model"
    return encode


def query_encoder(model: Any, name: str, folder: Path, threads: int) -> QueryEncoder | None:
    """`model` (a loaded SentenceTransformer) on ONNX Runtime with `threads` threads, its
    graph exported into `folder` unless a process did before; None when the model cannot be
    exported or its graph's vectors are not PyTorch's (queries then stay on PyTorch)."""
    features = model.preprocess(["probe"])
    inputs = tuple(name for name in INPUTS if name in features)
    path = _graph_path(model, name, folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / ".export.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one process exports; the others wait for it
            if path.exists():
                found = _checked(model, inputs, path, threads)
                if not isinstance(found, str):
                    return found
                log.warning("the query graph %s %s: exporting it again", path, found)
            log.info("exporting the query model %s to %s", name, path)
            _export(model, inputs, path)
            found = _checked(model, inputs, path, threads)
    except Exception as exc:  # the exporter cannot take this model, or no file can be written
        log.warning("queries of %s stay on PyTorch: no ONNX graph (%s)", name, exc)
        return None
    if isinstance(found, str):
        log.warning("queries of %s stay on PyTorch: its ONNX graph %s", name, found)
        return None
    return found
