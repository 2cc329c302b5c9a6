"""Topic slugs, synonyms, categories and entity extraction."""

from __future__ import annotations

import pytest

from continuum.capture.topics import (
    category_of,
    extract_entities,
    extract_people,
    extract_projects,
    keywords,
    topic_slug,
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
