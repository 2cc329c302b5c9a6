"""Mission Control in headless Chromium (Debian's /usr/bin/chromium, driven by Playwright)
against a real uvicorn server on 127.0.0.1 and the real embedded servers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.live_api import serve_api

CHROMIUM = Path("/usr/bin/chromium")
# As root Chromium needs --no-sandbox; the rest keep it off this machine's closed network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def live_server(servers: dict[str, str]) -> Iterator[str]:
    """The API and Mission Control served by uvicorn in a thread; yields the base URL."""
    with serve_api() as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} missing: apt-get install -y chromium chromium-driver")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        # A fresh temporary profile (user data dir) per launch.
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    tab = context.new_page()
    tab.set_default_timeout(10_000)
    yield tab
    context.close()
