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

from continuum.capture.filters import triage
from continuum.capture.topics import topic_slug
from continuum.domain.memory import MAX_CONTENT_CHARS, CaptureTurn, MemoryCandidate
from continuum.domain.text import clip, speaker_of, split_sentences

MIN_WORDS = 4  # a shorter sentence ("Wow, that's great!") states nothing a search needs
IMPORTANCE = 3  # an index of what was said, below every extracted key moment


def statements(turn: CaptureTurn, trigger: str = "turn") -> list[MemoryCandidate]:
    """The turn's statements, in the order they were said: none for a one-sentence turn,
    an unnamed assistant turn, or a turn capture skips (tool output, pasted text, small
    talk)."""
    name = speaker_of(turn.content)
    if name is None and turn.role != "user":
        return []
    checked = triage(turn)
    if checked.skip_reason:
        return []
    prose = checked.prose
    if name and prose.startswith(f"{name}:"):
        prose = prose[len(name) + 1 :].lstrip()
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
            trigger=trigger,
            details={"speaker": speaker},
        )
        for sentence in sentences
        if len(sentence.split()) >= MIN_WORDS and not sentence.rstrip().endswith("?")
    ]
