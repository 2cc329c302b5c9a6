"""Sentence rules of key-moment capture (R20): each rule reads one clause and returns the
moment it states — a follow-up, fact, decision, commitment, open thread, preference or
feeling — or None. `continuum.capture.keymoments` turns moments into memory candidates.

One module per memory kind, plus `clauses` (the `Moment` and helpers they share); this
module gives the order the rules are tried in. Every rule needs an explicit phrase;
questions and hedged or conditional statements are not decisions."""

from __future__ import annotations

from continuum.capture.rules.clauses import Rule
from continuum.capture.rules.commitments import assistant_commitment, commitment
from continuum.capture.rules.decisions import decision
from continuum.capture.rules.facts import count_fact, relation_name, stable_fact
from continuum.capture.rules.followups import appointment, remind_me, remind_you
from continuum.capture.rules.open_threads import open_thread
from continuum.capture.rules.preferences import preference
from continuum.capture.rules.wellbeing import feeling

USER_RULES: tuple[Rule, ...] = (
    remind_me,
    count_fact,
    stable_fact,
    decision,
    open_thread,
    preference,
    commitment,
    relation_name,
    appointment,
    feeling,
)
ASSISTANT_RULES: tuple[Rule, ...] = (remind_you, decision, assistant_commitment)
