"""Mission Control as a console, in headless Chromium: edit, forget and mark private a
memory, settle a conflict, the Context view (the block an agent would get, each line with its
why) and the Status view; every action goes through the API with the token's tenant, and
stored text is shown as text, never run as markup."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from continuum.ephemeral.handoff import peek_handoff, send_handoff
from continuum.inference.embedding import get_embedder
from continuum.memory.tool_calls import MemoryTools
from continuum.security.tokens import create_token
from continuum.store.engine import session_scope
from continuum.store.models import Memory
from tests.support.console import conflict, pipeline_rows, status_of
from tests.support.paths import ARTIFACTS
from tests.support.seed import seed

pytestmark = pytest.mark.browser
MARKUP = '<img src=x onerror="window.__xss = 1">'


@pytest.fixture
def token(db: Any) -> str:
    seed("pearl", sessions=1, turns=4)
    seed("entrepreneur", sessions=1, turns=4)
    value, _ = create_token(["pearl"], "console")
    return value


def open_tab(page: Any, live_server: str, token: str, tab: str) -> None:
    page.goto(f"{live_server}/#token={token}")
    page.wait_for_selector("#results li")
    page.click(f"[data-tab={tab}]")


def memories(page: Any, n: int) -> Any:
    page.wait_for_function(f"document.querySelectorAll('#results li.memory').length === {n}")
    return page.locator("#results li.memory")


def by_content(text: str) -> Memory:
    """pearl's memory saying `text`."""
    with session_scope() as db:
        found = db.scalar(select(Memory).where(Memory.namespace == "pearl", Memory.content == text))
    assert found is not None
    return found


def test_edit_a_memory(page: Any, live_server: str, token: str) -> None:
    open_tab(page, live_server, token, "memories")
    old = memories(page, 2).filter(has_text="Garden renovation")
    old.locator(".act-edit").click()
    page.fill("#results .edit-content", f"Garden goes to Green & Co. {MARKUP}")
    page.click("#results .act-save")
    page.wait_for_selector("#notice:has-text('Saved')")
    rows = memories(page, 2)  # the new version replaces the old one in the active list
    assert rows.first.locator(".content").text_content() == f"Garden goes to Green & Co. {MARKUP}"
    assert page.locator("#results img").count() == 0 and page.evaluate("window.__xss") is None
    edited = by_content(f"Garden goes to Green & Co. {MARKUP}")
    assert (edited.kind, edited.version, edited.provenance) == ("decision", 2, "user_explicit")
    previous = by_content("Garden renovation goes to Hoffmann (session 0)")
    assert status_of(previous.id) == ("superseded", edited.id)


def test_forget_a_memory(page: Any, live_server: str, token: str) -> None:
    open_tab(page, live_server, token, "memories")
    row = memories(page, 2).filter(has_text="Prefers morning")
    row.locator(".act-forget").click()
    assert row.locator(".act-forget").text_content() == "Forget it? Click again"
    assert status_of(by_content("Prefers morning appointments (session 0)").id)[0] == "active"
    row.locator(".act-forget").click()
    page.wait_for_selector("#notice:has-text('Forgotten')")
    assert "Garden renovation" in memories(page, 1).first.text_content()
    assert status_of(by_content("Prefers morning appointments (session 0)").id)[0] == "forgotten"


def test_mark_a_memory_private_and_visible_again(page: Any, live_server: str, token: str) -> None:
    open_tab(page, live_server, token, "memories")
    memories(page, 2).filter(has_text="Prefers morning").locator(".act-private").click()
    page.wait_for_selector("#notice:has-text('is private')")
    memories(page, 1)  # private: out of the list, like out of other users' contexts
    assert by_content("Prefers morning appointments (session 0)").private
    page.fill("#user-id", "jason")
    page.check("#include-private")  # the owner's view lists it, marked
    row = memories(page, 2).filter(has_text="Prefers morning")
    assert "private" in row.locator(".meta").first.text_content()
    row.locator(".act-private", has_text="Make visible").click()
    page.wait_for_selector("#notice:has-text('visible again')")
    assert not by_content("Prefers morning appointments (session 0)").private


def test_settle_a_quarantined_conflict(page: Any, live_server: str, token: str) -> None:
    held, in_force = conflict("pearl", "favorite_drink", "tea", "coffee")
    held_2, in_force_2 = conflict("pearl", "favorite_city", "Lisbon", MARKUP)
    conflict("entrepreneur", "favorite_drink", "water", "soda")  # another tenant's
    open_tab(page, live_server, token, "conflicts")
    page.wait_for_function("document.querySelectorAll('#results li.conflict').length === 2")
    first = page.locator("#results li.conflict").first
    assert "Favorite drink: coffee" in first.locator(".side.held").text_content()
    assert "Favorite drink: tea" in first.locator(".side:not(.held)").text_content()
    last = page.locator("#results li.conflict").last
    assert f"Favorite city: {MARKUP}" in last.locator(".side.held .content").text_content()
    assert page.evaluate("window.__xss") is None
    page.screenshot(path=str(ARTIFACTS / "mission-control-conflicts.png"), full_page=True)

    first.locator(".act-keep-new").click()
    page.wait_for_selector("#notice:has-text('Settled')")
    page.wait_for_function("document.querySelectorAll('#results li.conflict').length === 1")
    assert status_of(held) == ("active", None) and status_of(in_force) == ("superseded", held)
    page.locator("#results li.conflict .act-keep-current").click()
    page.wait_for_function("document.querySelectorAll('#results li.conflict').length === 0")
    assert status_of(held_2) == ("superseded", in_force_2)
    assert status_of(in_force_2) == ("active", None)


def test_context_view_shows_the_block_with_each_lines_why(
    page: Any, live_server: str, token: str
) -> None:
    get_embedder()  # the seed is embedded: load the model now, not within the page's wait
    MemoryTools("pearl", user_id="jason", provenance="user_explicit").store_memory(
        memory_type="fact", key="garden_gate", value=f"The gate code is 4411 {MARKUP}"
    )
    send_handoff("pearl", "jason", "voice", "discord", "Jason was choosing garden lights.")
    open_tab(page, live_server, token, "context")
    assert page.is_visible("#context-form") and not page.is_visible("#filters")
    page.fill("#context-seed", "garden gate")
    page.fill("#context-user", "jason")
    page.fill("#context-channel", "discord")
    page.click("#context-form button")
    page.wait_for_selector("#context-items li")
    block = page.text_content("#context-block")
    assert "Jason was choosing garden lights." in block and MARKUP in block
    items = page.locator("#context-items li")
    whys = items.locator(".why").all_text_contents()
    assert len(whys) == items.count() >= 3 and all(
        w.startswith("why: ") and len(w) > 5 for w in whys
    )
    gate = items.filter(has_text="gate code")
    assert gate.locator(".content").text_content().endswith(MARKUP)
    assert page.locator("#context-view img").count() == 0 and page.evaluate("window.__xss") is None
    assert f"{items.count()} lines" in page.text_content("#context-summary")
    # Looking is not taking: the handoff is still there for the agent that comes to discord.
    assert peek_handoff("pearl", "jason", "discord") is not None
    page.screenshot(path=str(ARTIFACTS / "mission-control-context.png"), full_page=True)


def test_status_view_for_a_tenant_and_for_an_operator(
    page: Any, live_server: str, token: str
) -> None:
    pipeline_rows("pearl", "entrepreneur")
    open_tab(page, live_server, token, "status")
    page.wait_for_selector("#status-tenant dl")
    figures = dict(
        zip(
            page.locator("#status-tenant dt").all_text_contents(),
            page.locator("#status-tenant dd").all_text_contents(),
            strict=True,
        )
    )
    assert figures["dead letters"] == "1"  # pearl's, not entrepreneur's two
    assert figures["embeddings pending"] == "memories 2, messages 4"
    assert figures["LLM tokens today"] == "pearl 100"
    [usage] = page.locator("#status-tenant table.usage tbody tr").all()
    assert usage.locator("td").all_text_contents() == [
        "pearl", "fake-model", "1", "100", "0", "1", "0", "0", "0", "0", "0"]  # fmt: skip
    assert "operator token" in page.text_content("#status-pipeline")

    operator, _ = create_token(["pearl"], "ops", ops=True)
    page.click("#logout")
    page.fill("#token-input", operator)
    page.click("#login-form button")
    page.wait_for_selector("#results li")
    page.click("[data-tab=status]")
    page.wait_for_selector("#status-pipeline dl")
    pipeline = dict(
        zip(
            page.locator("#status-pipeline dt").all_text_contents(),
            page.locator("#status-pipeline dd").all_text_contents(),
            strict=True,
        )
    )
    assert pipeline["dead letters"] == "3" and "events" in pipeline["queues"]
    assert pipeline["embeddings pending"] == "memories 4, messages 8"
    page.screenshot(path=str(ARTIFACTS / "mission-control-status.png"), full_page=True)
