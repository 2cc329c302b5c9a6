"""Statements: what a person said, one sentence at a time, as memories that search finds.

A long turn says several things ("It was an awesome time! We explored nature and went on a
hike. The 2 younger kids love nature."), and one embedding of the whole turn matches none of
them well: a question about one of them ("What do Melanie's kids like?") finds the turn
far down, if at all. Each sentence that states something (at least `MIN_WORDS` words, not a
question: a question matches questions, not answers) becomes a `statement` memory, named
for its speaker — `Melanie: The 2 younger kids love nature.` — and citing its turn, so a
hit on it lifts the turn (`recall.fusion`) and the context block can show the sentence
instead of the whole turn.

Only what people say: user turns, and the turns of any named speaker of a group transcript
(`Name: …`); an assistant's unnamed answers are not statements of fact about anyone. A turn
of one sentence is its own statement already (its embedding is the sentence's), so it
gives none. Verbatim text: the pipeline stores no statement for a tenant in privacy mode.
"""

from __future__ import annotations

from continuum.capture.topics import topic_slug
from continuum.domain.memory import MAX_CONTENT_CHARS, CaptureTurn, MemoryCandidate
from continuum.domain.text import clip, split_sentences

MIN_WORDS = 4  # a shorter sentence ("Wow, that's great!") states nothing a search needs
IMPORTANCE = 3  # an index of what was said, below every extracted key moment


def statements(turn: CaptureTurn, prose: str, name: str | None) -> list[MemoryCandidate]:
    """The statements of a turn capture kept (`prose`, what triage left of it, without the
    `name` it opened with), in the order they were said: none for a one-sentence turn or
    an unnamed assistant turn."""
    if name is None and turn.role != "user":
        return []
    sentences = split_sentences(prose)
    if len(sentences) < 2:
        return []
    speaker = name or "User"
    return [
        MemoryCandidate(
            kind="statement",
            content=clip(f"{speaker}: {sentence}", MAX_CONTENT_CHARS),
            tags=[
                f"topic:{topic_slug(sentence)}",
                f"source:{turn.source}",
                f"session:{turn.session_id}",
            ],
            importance=IMPORTANCE,
            confidence=0.9,  # the words as said
            provenance="user_explicit",
            source_message_ids=[turn.message_id],
            details={"speaker": speaker},
        )
        for sentence in sentences
        if len(sentence.split()) >= MIN_WORDS and not sentence.rstrip().endswith("?")
    ]
