"""The claim rules as a pure function: reinforcement, supersession by time and trust,
quarantine, and the scope / validity-window limits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from continuum.memory.claims import ClaimState, decide

T = datetime(2026, 11, 1, tzinfo=UTC)
NOW = T + timedelta(days=1)


def claim(id: int, value: str, *, at: float = 0, trust: int = 4, scope: str = "global",
          session: str | None = "s1", until: datetime | None = None) -> ClaimState:  # fmt: skip
    return ClaimState(id, value, scope, session, until, trust, T + timedelta(minutes=at))


def test_same_value_reinforces_whatever_the_case() -> None:
    assert decide(claim(2, "Four", at=5), claim(1, "four"), NOW) == "reinforce"


def test_later_supersedes_earlier_unless_less_trusted() -> None:
    assert decide(claim(2, "4", at=5), claim(1, "3"), NOW) == "supersede_old"
    assert decide(claim(2, "4", at=5, trust=1), claim(1, "3"), NOW) == "quarantine_new"
    assert decide(claim(2, "4", at=5, trust=4), claim(1, "3", trust=1), NOW) == "supersede_old"
    # A backfilled older memory never overrides the newer one.
    assert decide(claim(2, "3", at=-5), claim(1, "4"), NOW) == "supersede_new"
    assert decide(claim(2, "3", at=-5, trust=4), claim(1, "4", trust=2), NOW) == "quarantine_old"


def test_scopes_and_windows() -> None:
    window = T + timedelta(days=30)
    trip = claim(2, "Paris", at=5, scope="temporal", until=window)
    assert decide(trip, claim(1, "Leeds"), NOW) == "none"  # exception, not replacement
    assert decide(claim(3, "York", at=9), trip, NOW) == "supersede_old"
    expired = claim(4, "Rome", at=9, scope="temporal", until=T + timedelta(hours=1))
    assert decide(expired, claim(1, "Leeds"), NOW) == "none"
    in_session = claim(5, "Oslo", at=9, scope="session")
    assert decide(in_session, claim(1, "Leeds"), NOW) == "none"
    assert decide(in_session, claim(6, "Bergen", scope="session"), NOW) == "supersede_old"
    other = claim(7, "Bergen", scope="session", session="s2")
    assert decide(in_session, other, NOW) == "none"
