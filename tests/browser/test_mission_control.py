"""Mission Control: login, search, filters, infinite scroll, tabs, the session view."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from continuum.domain.kinds import KINDS
from continuum.security.tokens import create_token
from continuum.sync import sync
from tests.support.paths import ARTIFACTS
from tests.support.seed import seed
from tests.support.transcripts import ADVERSARIAL, BROKEN, GZIP

pytestmark = pytest.mark.browser
TURNS = 40  # per session; three sessions: 120 messages, pages of 50


@pytest.fixture
def token(db: Any) -> str:
    seed("pearl", sessions=3, turns=TURNS)
    seed("entrepreneur", sessions=1, turns=4)
    value, _ = create_token(["pearl", "entrepreneur"], "fleet")
    return value


def open_with_token(page: Any, live_server: str, token: str) -> None:
    page.goto(live_server + "/")
    page.fill("#token-input", token)
    page.click("#login-form button")
    page.wait_for_selector("#results li")


def rows(page: Any) -> int:
    return int(page.locator("#results li").count())


def test_login_scroll_loads_more_and_search(page: Any, live_server: str, token: str) -> None:
    open_with_token(page, live_server, token)
    assert page.text_content("#who") == "fleet · pearl, entrepreneur"
    assert rows(page) == 50
    page.locator("#sentinel").scroll_into_view_if_needed()
    page.wait_for_function("document.querySelectorAll('#results li').length === 100")
    page.locator("#sentinel").scroll_into_view_if_needed()
    page.wait_for_function("document.querySelectorAll('#results li').length === 124")
    assert page.is_visible("#end")

    page.fill("#q", "Hoffmann")
    page.wait_for_function("document.querySelectorAll('#results li').length === 31")
    assert all("Hoffmann" in text for text in page.locator("#results .content").all_text_contents())

    page.select_option("#instance", "entrepreneur")
    page.wait_for_function("document.querySelectorAll('#results li').length === 1")
    page.select_option("#instance", "")
    page.select_option("#role", "user")
    page.fill("#q", "")
    page.fill("#since", "2026-11-21")
    page.fill("#until", "2026-11-21")
    page.wait_for_function("document.querySelectorAll('#results li').length === 20")
    assert set(page.locator("#results .who").all_text_contents()) == {"user"}
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "mission-control-conversations.png"), full_page=True)


def test_tabs_cron_filter_memories_and_session_view(
    page: Any, live_server: str, token: str
) -> None:
    open_with_token(page, live_server, token)
    page.click("[data-tab=cron]")
    page.wait_for_function("document.querySelectorAll('#results li.cron').length === 4")
    assert page.is_visible("#cron-name") and not page.is_visible("#role")
    page.select_option("#cron-name", "morning-brief")
    page.wait_for_function("document.querySelectorAll('#results li.cron').length === 3")

    page.click("[data-tab=memories]")
    page.wait_for_function("document.querySelectorAll('#results li.memory').length === 8")
    options = page.locator("#kind option")  # from GET /v1/memories/kinds
    assert options.evaluate_all("os => os.map(o => [o.value, o.title])") == [
        ["", ""],
        *([spec.name, spec.description] for spec in KINDS),
    ]
    page.select_option("#kind", "decision")
    page.select_option("#instance", "pearl")
    page.wait_for_function("document.querySelectorAll('#results li.memory').length === 3")
    first = page.locator("#results li.memory").first
    assert "importance 9" in first.text_content() and "user_explicit" in first.text_content()
    assert "topic:garden" in first.text_content()

    first.locator("a", has_text="m1").click()  # a source turn opens the session beside it
    page.wait_for_selector("#session-messages li.highlight")
    assert page.text_content("#session-messages li.highlight .content").startswith("We decided")
    assert page.locator("#session-messages li").count() == TURNS
    assert page.locator("#session-memories li").count() == 2
    page.screenshot(path=str(ARTIFACTS / "mission-control-session.png"), full_page=True)
    page.click("#back")
    page.wait_for_selector("#list-view:not([hidden]) #results li.memory")


def test_token_from_the_url_once_and_bad_tokens(page: Any, live_server: str, token: str) -> None:
    page.goto(f"{live_server}/#token={token}")
    page.wait_for_selector("#results li")
    assert "token" not in page.url
    page.click("#logout")
    assert page.is_visible("#login")
    page.fill("#token-input", "ctm_not-a-token")
    page.click("#login-form button")
    page.wait_for_selector("#login-error:has-text('not valid')")


def test_sync_problems_tab_shows_where_bad_input_is(
    page: Any, live_server: str, token: str, tmp_path: Path
) -> None:
    shutil.copytree(ADVERSARIAL, tmp_path / "home")
    sync(tmp_path / "home", feed_capture=False)
    value, _ = create_token(["default"], "ops")
    open_with_token(page, live_server, value)
    page.click("[data-tab=problems]")
    page.wait_for_function("document.querySelectorAll('#results li.problem').length === 3")
    assert page.is_visible("#resolved") and not page.is_visible("#role")
    places = page.locator("#results .place").all_text_contents()
    assert any(place.endswith(f"{BROKEN}.jsonl:3 (byte 291)") for place in places)
    assert any(place.endswith(f"{GZIP}.jsonl") for place in places)
    kinds = page.locator("#results li.problem strong").all_text_contents()
    assert sorted(kinds) == ["binary_file", "malformed_json", "not_an_object"]
