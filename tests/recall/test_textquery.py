"""The text channel's match plan stays within its row budget and keeps what is selective."""

from __future__ import annotations

from types import SimpleNamespace

from continuum.recall.textquery import TableStats, or_query, plan, quote_lexeme

FREQS = {"garden": 0.025, "invoic": 0.024, "drainag": 0.023, "priya": 0.0004}


def _stats(rows: float, freqs: dict[str, float] | None = None) -> TableStats:
    return TableStats(rows=rows, lexeme_freqs=freqs or FREQS, unlisted_lexeme_freq=0.0001)


def test_small_tenant_matches_every_lexeme() -> None:
    lexemes = ("garden", "invoic", "priya")
    assert plan(lexemes, _stats(10_000), "ns", budget=4000) == or_query(lexemes)


def test_large_tenant_matches_rare_lexemes_alone_and_common_ones_in_pairs() -> None:
    lexemes = ("garden", "invoic", "drainag", "priya")
    # priya: 400 rows, rare enough alone; each everyday word ~25,000 rows, each pair ~575
    assert plan(lexemes, _stats(1_000_000), "ns", budget=4000) == (
        "'priya' | ('drainag' & 'invoic') | ('drainag' & 'garden') | ('invoic' & 'garden')"
    )
    # With less budget the dearest pair is left out and all three together stand in for it.
    assert plan(lexemes, _stats(1_000_000), "ns", budget=1900) == (
        "'priya' | ('drainag' & 'invoic') | ('drainag' & 'garden') "
        "| ('drainag' & 'invoic' & 'garden')"
    )


def test_pairs_that_do_not_fit_fall_back_to_all_words_together() -> None:
    freqs = {w: 0.2 for w in ("alpha", "beta", "gamma")}
    planned = plan(("alpha", "beta", "gamma"), _stats(1_000_000, freqs), "ns", budget=4000)
    assert planned == "('alpha' & 'beta' & 'gamma')"


def test_one_everyday_word_is_matched_as_is_and_left_to_the_cap() -> None:
    assert plan(("garden",), _stats(1_000_000), "ns", budget=4000) == "'garden'"


def test_tenant_share_of_the_table_scales_the_estimate() -> None:
    stats = TableStats(
        rows=1_000_000,
        lexeme_freqs=FREQS,
        namespace_freqs={"big": 0.99},
        unlisted_namespace_freq=0.0001,
    )
    lexemes = ("garden", "invoic")
    assert plan(lexemes, stats, "big", budget=4000) == "('invoic' & 'garden')"
    assert plan(lexemes, stats, "small", budget=4000) == or_query(lexemes)


def test_statistics_row_is_read_with_trailing_frequencies_and_missing_parts() -> None:
    row = SimpleNamespace(
        reltuples=1000.0,
        elems=["garden", "invoic"],
        elem_freqs=[0.3, 0.1, 0.1, 0.3, 0.0],  # + min, max, nulls
        namespaces=["a", "b"],
        ns_freqs=[0.5, 0.3],
        n_distinct=-0.004,  # 4 distinct per 1000 rows
        null_frac=0.0,
    )
    stats = TableStats.from_row(row)
    assert stats.lexeme_freqs == {"garden": 0.3, "invoic": 0.1}
    assert stats.unlisted_lexeme_freq == 0.1
    assert abs(stats.expected_rows("c", ()) - 1000 * 0.2 / 2) < 1e-6
    never_analyzed = TableStats.from_row(SimpleNamespace(**{**row.__dict__, "elems": None,
        "elem_freqs": None, "namespaces": None, "ns_freqs": None, "reltuples": -1}))  # fmt: skip
    assert never_analyzed.expected_rows("a", ("garden",)) == 0.0


def test_lexemes_with_quotes_and_backslashes_are_quoted() -> None:
    assert quote_lexeme("o'neil\\x") == "'o''neil\\\\x'"
