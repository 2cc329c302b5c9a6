"""Token counts come from the real WordPiece tokenizer and add up across line joins."""

from __future__ import annotations

from continuum.inference.tokenizer import count_block_tokens, count_tokens, tokenizer_name


def test_real_tokenizer_is_loaded() -> None:
    assert tokenizer_name() == "wordpiece"
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    assert count_tokens("Zyxwvutronics") > 1  # a rare word splits into word pieces


def test_counts_add_up_across_whitespace_joins() -> None:
    lines = ["# Memory context (now 2026-11-24 Tue 09:30 UTC)", "## Decisions",
             "- 2026-11-21 (Sat, 3 days ago) [voice] Decided: Hoffmann — €4,200!"]  # fmt: skip
    assert count_tokens("\n".join(lines)) == sum(count_tokens(line) for line in lines)
    assert count_tokens("\n\n".join(lines)) == sum(count_tokens(line) for line in lines)
    block = "\n\n".join([*lines, "naïve café résumé ünïcödé", "a\tb  c", ""])
    assert count_block_tokens(block) == count_tokens(block)  # how a context block is checked


def test_lines_are_cached_and_blocks_are_not() -> None:
    """The same lines come back on every recall; each block is new and would only fill the
    cache (bounded by line size)."""
    from continuum.inference import tokenizer as tokens

    line = "- 2026-11-21 (Sat, 3 days ago) [voice] Decided to hire Hoffmann Landscaping."
    block = "\n".join([line] * 40)
    assert len(line) <= tokens.CACHED_CHARS < len(block)
    before = tokens._count_line.cache_info()
    assert count_tokens(block) == 40 * count_tokens(line)
    after = tokens._count_line.cache_info()
    assert after.currsize - before.currsize <= 1  # the line at most, never the block
