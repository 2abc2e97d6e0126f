"""Browser fixtures: Debian's headless Chromium driven by Playwright's sync API.

No pytest-playwright: one browser per session, a fresh context (cookies, downloads)
per test, and every console error or CSP violation a page logs is collected so the
test can fail on it.
"""

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, sync_playwright

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"

# Chrome reports a violated Content-Security-Policy as a console error, and the page
# also fires `securitypolicyviolation`; the init script turns the event into a console
# error too, so neither path can go unnoticed.
_CSP_LISTENER = """
document.addEventListener("securitypolicyviolation", function (e) {
  console.error("CSP violation: " + e.violatedDirective + " blocked " + e.blockedURI);
});
"""


@dataclass
class ConsoleLog:
    errors: list[str] = field(default_factory=list)

    def record(self, page: Page, text: str) -> None:
        self.errors.append(f"{page.url}: {text}")

    def on_console(self, page: Page):
        def handler(message: ConsoleMessage) -> None:
            if message.type == "error":
                self.record(page, message.text)

        return handler


@pytest.fixture(scope="module", autouse=True)
def _allow_orm_beside_playwright(django_db_setup) -> Iterator[None]:
    """Playwright's sync API runs an event loop in this thread, and Django refuses its ORM
    there. pytest-django creates the test database before, and flushes it after, every
    function fixture, so allow it for a browser module's whole life (after the database
    exists), and only then: no other test or subprocess inherits it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield


@pytest.fixture(scope="module")
def browser(_allow_orm_beside_playwright) -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        message = f"Chromium not found at {CHROMIUM} (apt-get install chromium; .ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI must run the browser tests, never skip them silently
        pytest.skip(message)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def console_log() -> ConsoleLog:
    return ConsoleLog()


@pytest.fixture
def browser_context(browser: Browser) -> Iterator[BrowserContext]:
    context = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    context.add_init_script(_CSP_LISTENER)
    yield context
    context.close()


@pytest.fixture
def page(browser_context: BrowserContext, console_log: ConsoleLog) -> Page:
    page = browser_context.new_page()
    page.on("console", console_log.on_console(page))
    page.on("pageerror", lambda error: console_log.record(page, f"uncaught {error}"))
    return page


@pytest.fixture(scope="session")
def screenshot_dir() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS
