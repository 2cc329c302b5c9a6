"""Statements: each sentence a person states in a longer turn, named for its speaker and
citing the turn; none for questions, short exclamations, one-sentence turns, unnamed
assistant answers or skipped turns."""

from __future__ import annotations

from datetime import UTC, datetime

from continuum.capture import MemoryCandidate, detect_key_moments
from continuum.domain.memory import CaptureTurn

NOW = datetime(2026, 11, 24, 9, 30, tzinfo=UTC)


def turn(content: str, role: str = "user", source: str = "user") -> CaptureTurn:
    return CaptureTurn(message_id="m7", role=role, content=content, created_at=NOW,
                       session_id="s1", source=source)  # fmt: skip


def statements(turn: CaptureTurn) -> list[MemoryCandidate]:
    """The turn's statements, as capture finds them beside its key moments."""
    found = detect_key_moments(turn, with_statements=True)
    return [candidate for candidate in found if candidate.kind == "statement"]


def test_a_named_speakers_sentences_become_statements_citing_the_turn() -> None:
    said = turn(
        "Melanie: It was an awesome time, Caroline! Wow! We went on a hike. "
        "Did you ever go camping? The 2 younger kids love nature.",
        role="assistant",  # a group transcript's second person is no assistant
    )
    found = statements(said)
    assert [c.content for c in found] == [
        "Melanie: It was an awesome time, Caroline!",
        "Melanie: We went on a hike.",
        "Melanie: The 2 younger kids love nature.",
    ]  # "Wow!" states nothing, the question asks
    assert {(c.kind, tuple(c.source_message_ids), c.trigger) for c in found} == {
        ("statement", ("m7",), "turn")
    }
    assert all(c.importance == 3 and c.details == {"speaker": "Melanie"} for c in found)


def test_a_users_turn_is_named_for_the_user() -> None:
    found = statements(turn("We moved to Lisbon in March. My partner found a job there."))
    assert [c.content for c in found] == [
        "User: We moved to Lisbon in March.",
        "User: My partner found a job there.",
    ]


def test_no_statements_where_nothing_is_stated_by_a_person() -> None:
    assert statements(turn("We moved to Lisbon in March with my partner.")) == []  # one sentence
    answer = "Lisbon is lovely in spring. The trams are worth a ride."
    assert statements(turn(answer, role="assistant")) == []  # an assistant's own answer
    assert statements(turn("Output one. Output two lines here.", source="tool")) == []
