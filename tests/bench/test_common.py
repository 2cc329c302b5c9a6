"""The bench's shared measuring helpers."""

from __future__ import annotations

from collections.abc import Callable

from bench.common import alternating


def test_alternating_reverses_the_order_every_other_round_and_keeps_each_best() -> None:
    calls: list[tuple[str, int]] = []

    def measure(name: str, figures: list[float]) -> Callable[[int], float]:
        def call(round_no: int) -> float:
            calls.append((name, round_no))
            return figures[round_no]

        return call

    best = alternating(3, {"ours": measure("ours", [3.0, 9.0, 1.0]),
                           "base": measure("base", [5.0, 2.0, 4.0])})  # fmt: skip
    assert calls == [("ours", 0), ("base", 0), ("base", 1), ("ours", 1), ("ours", 2), ("base", 2)]
    assert best == {"ours": 9.0, "base": 5.0}
