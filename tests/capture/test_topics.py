"""Topic slugs, synonyms, categories, entity extraction and session topics."""

from __future__ import annotations

import pytest

from continuum.capture.topics import (
    Vocabulary,
    category_of,
    extract_entities,
    extract_people,
    extract_projects,
    keywords,
    noun_phrases,
    session_topics,
    topic_slug,
    topic_tags,
)


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("Let's plan the Postgres migration", "database-migration"),
        ("the db migration is slow", "database-migration-slow"),
        ("k8s deploy failed again", "kubernetes-deployment-failed"),
        ("Doc appointment on Tuesday at 3pm", "doctor-appointment"),
        ("my grandkids are visiting", "grandchildren-visiting"),
        ("ok thanks!", "general"),
    ],
)
def test_topic_slug(text, slug):
    assert topic_slug(text) == slug


def test_slug_prefers_frequent_words_and_keeps_their_order():
    text = "The ingest worker crashed. Restarting the ingest worker fixed the ingest queue."
    assert topic_slug(text, max_words=2) == "ingest-worker"


def test_synonyms_make_different_wordings_meet():
    assert topic_slug("postgresql backup") == topic_slug("the DB backup") == "database-backup"
    assert keywords("grandkids and kids") == ["grandchildren", "children"]


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Postgres for the event store", "database"),
        ("Redis", "cache"),
        ("TypeScript on the frontend", "language"),
        ("a retry wrapper", None),
    ],
)
def test_category_of(text, category):
    assert category_of(text) == category


def test_extract_entities():
    text = "Ask @maria in #backend. Then we fly to New York with Sarah on Monday."
    assert extract_entities(text) == ["@maria", "#backend", "New York", "Sarah"]


def test_extract_projects():
    text = "Status of project Atlas and the Hermes project; the new project can wait."
    assert extract_projects(text) == ["atlas", "hermes"]


def test_extract_people_needs_a_relation_or_social_verb():
    text = "My daughter Sarah said Postgres is fine. I'll call Tom Jones after lunch with Anna."
    assert extract_people(text) == ["Sarah", "Tom Jones", "Anna"]


# --- session topics ---------------------------------------------------------------------


def test_session_topics_are_content_not_filler():
    texts = [
        ("Quick one: I prefer emails short, no more than five sentences.", 1.0),
        ("Understood, I'll keep the Hoffmann email under five sentences.", 0.5),
        ("My daughter Emma says the drainage alone could cost 3,000.", 1.0),
    ]
    topics = session_topics(texts, 5)
    assert not {"says", "short", "five", "alone", "quick"} & {w for t in topics for w in t.split()}
    assert {"daughter Emma", "Hoffmann email", "drainage"} <= set(topics)


@pytest.mark.parametrize(
    ("text", "phrases"),
    [
        ("Can we go over the plan for the garden renovation?", [["garden", "renovation"]]),
        ("Their quote is lower and they can start on December 2nd.", [["quote"]]),
        ("Waiting for Hoffmann to confirm whether the price includes the drainage work.",
         [["Hoffmann"], ["price"], ["drainage", "work"]]),
        ("Morning Pearl. I have an appointment with Dr. Keller.",
         [["appointment"], ["Dr.", "Keller"]]),
        ("It whistles. Of course the hearing aid is new.", [["hearing", "aid"]]),
    ],
)  # fmt: skip
def test_noun_phrases_leave_out_verbs_adjectives_and_the_person_greeted(text, phrases):
    assert noun_phrases(text) == phrases


def test_the_tenant_vocabulary_ranks_its_everyday_words_below_this_sessions():
    texts = [("The garden and its drainage. The garden again, the garden!", 1.0)]
    assert session_topics(texts, 1) == ["garden"]
    history = [f"I was in the garden again on day {n}." for n in range(30)]
    vocabulary = Vocabulary([*history, texts[0][0]])
    assert vocabulary.documents == 31
    assert vocabulary.weight("garden") < vocabulary.weight("drainage")
    assert session_topics(texts, 1, vocabulary) == ["drainage"]


def test_topic_tags_name_each_slug_once() -> None:
    """The LLM and deterministic summaries tag topics alike: two wordings of one topic give
    one tag."""
    tags = topic_tags(["Postgres migration", "the Postgres migration", "garden drainage"])
    assert tags == [
        f"topic:{topic_slug('Postgres migration')}",
        f"topic:{topic_slug('garden drainage')}",
    ]
