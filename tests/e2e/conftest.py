"""Browser tests: Playwright driving Debian's Chromium (browser downloads fail on this machine).

Outside CI the tests skip only when no Chromium is found; in CI (CI=true) a missing Chromium
fails them, so they can never be skipped silently there.
"""

import os
import shutil
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in the test thread; the ORM calls the tests make
# there are ordinary synchronous ones.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        message = f"no Chromium at {CHROMIUM}; install it with apt-get install -y chromium"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


# Every page the tests open reports what its content security policy blocked (the browser's
# `securitypolicyviolation` event, and its console message); a test that caused one fails.
REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (e) => {
  console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || "inline"}`);
});
"""


def csp_violations(messages: list[str]) -> list[str]:
    return [m for m in messages if "CSP violation" in m or "Content Security Policy" in m]


@pytest.fixture
def console_messages() -> list[str]:
    return []


@pytest.fixture
def page(browser, console_messages):
    context = browser.new_context()
    context.add_init_script(REPORT_VIOLATIONS)
    page = context.new_page()
    page.on("console", lambda message: console_messages.append(message.text))
    page.set_default_timeout(10_000)
    if os.environ.get("CI") and not os.environ.get("E2E_SHOTS"):
        # a full-page screenshot is for a person to look at, and nobody looks in CI: not taken
        # there (about 0.7 s of two cores each); an element's screenshot, which waits for it to
        # be visible and stable, still is
        page.screenshot = lambda **_: b""
    yield page
    context.close()
    assert not csp_violations(console_messages), "the content security policy blocked something"


@pytest.fixture
def sign_in(page, live_server, django_user_model):
    """Sign in through the real form; returns the live server's URL."""

    def sign_in_as(username: str = "author", password: str = "pw-for-browser-tests") -> str:
        if not django_user_model.objects.filter(username=username).exists():
            django_user_model.objects.create_user(username, password=password)
        page.goto(f"{live_server.url}/")
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Sign in").click()
        return live_server.url

    return sign_in_as


#: where the screenshots go (the console's own pages, for a person to look at; CI takes the
#: full-page ones only when E2E_SHOTS is set)
SHOTS = Path(os.environ.get("E2E_SHOTS", "/tmp/console-shots"))


def overflow(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


WIDTHS = ((1280, 800), (390, 844))


#: every text of every SVG inside its chart's box (a label never cut by the chart's edge)
CLIPPED_SVG_TEXT = """() => {
  const out = [];
  for (const svg of document.querySelectorAll('svg')) {
    const box = svg.getBoundingClientRect();
    for (const t of svg.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();
      if (!r.width) continue;
      if (r.left < box.left - 0.5 || r.right > box.right + 0.5 ||
          r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5) out.push(t.textContent);
    }
  }
  return out;
}"""


PASSWORD = "pw-for-browser-tests"


def sign_in_user(page, url: str, user) -> None:
    """Sign `user` (made by a factory) in through the real form, with a password set for it."""
    user.set_password(PASSWORD)
    user.save()
    page.goto(f"{url}/accounts/login/")
    page.get_by_label("Username").fill(user.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state()
