"""Browser smoke test against a running `make serve` (see .ci/smoke): the console in production
mode as a team uses it. Exits non-zero with the step that failed.

    .venv/bin/python .ci/smoke.py http://127.0.0.1:8399

Needs the demo data (`manage.py questions demo`) and the stand-in as the typesafe provider.
Steps: /healthz; static files and the content security policy; the author signs in, edits the
draft of shell-guard with live validation, previews it with the stand-in, saves and submits
it; the reviewer approves it under `production` and makes an API token; the export is fetched
with the token (200, then 304); no page logged a CSP violation.
"""

from __future__ import annotations

import os
import re
import shutil
import sys

import httpx
from playwright.sync_api import expect, sync_playwright

BASE = sys.argv[1].rstrip("/") if len(sys.argv) > 1 else "http://127.0.0.1:8399"
CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (e) => {
  console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || "inline"}`);
});
"""


def step(name: str) -> None:
    print(f"smoke: {name}", flush=True)


def main() -> None:
    step("/healthz")
    health = httpx.get(f"{BASE}/healthz", timeout=10)
    assert health.status_code == 200, health.text
    body = health.json()
    assert body["database"] == body["migrations"] == "ok", body
    assert body["worker"] in ("ok", "idle"), body

    step("static files and headers")
    login = httpx.get(f"{BASE}/accounts/login/", timeout=10)
    policy = login.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy, policy
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', login.text)
    assert any(re.search(r"htmx-2\.min\.[0-9a-f]{12}\.js$", a) for a in assets), assets
    for asset in assets:
        response = httpx.get(f"{BASE}{asset}", headers={"Accept-Encoding": "gzip"}, timeout=10)
        assert response.status_code == 200, asset
        assert "immutable" in response.headers["Cache-Control"], asset

    messages: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--headless=new", "--no-sandbox", "--disable-gpu"]
        )

        def signed_in(username: str):
            context = browser.new_context()
            context.add_init_script(REPORT_VIOLATIONS)
            page = context.new_page()
            page.set_default_timeout(15_000)
            page.on("console", lambda m: messages.append(f"{username}: {m.text}"))
            page.on("dialog", lambda dialog: dialog.accept())
            page.goto(f"{BASE}/accounts/login/")
            page.get_by_label("Username").fill(username)
            page.get_by_label("Password").fill("demo")
            page.get_by_role("button", name="Sign in").click()
            expect(page.get_by_role("button", name="Sign out")).to_be_visible()
            return page

        step("author: edit with live validation")
        page = signed_in("author")
        page.goto(f"{BASE}/sets/shell-guard/v1/")
        page.wait_for_load_state()
        card = page.locator("#cards .card").first
        status = card.locator(".card-status")
        question_id = card.get_by_label("Question id")
        original = question_id.input_value()
        question_id.fill("")
        expect(status).to_contain_text("error")
        question_id.fill(original)
        expect(status).not_to_contain_text("error")

        step("author: preview with the stand-in")
        preview = page.locator("#preview")
        preview.get_by_label("Backend").select_option("typesafe")
        preview.get_by_role("button", name="Ask").click()
        result = page.locator("#preview-result")
        expect(result.locator("figure.answer").first).to_be_visible()
        expect(result).to_contain_text("local-stand-in (not Jev)")

        step("author: save and submit")
        page.get_by_role("button", name="Save", exact=True).click()
        expect(page.locator("#saved")).to_contain_text("Saved revision")  # saved in place
        page.get_by_role("button", name="Submit for review").click()
        page.wait_for_load_state()

        step("reviewer: approve under production")
        page = signed_in("reviewer")
        page.goto(f"{BASE}/sets/shell-guard/v1/review/")
        page.locator("input[name=label]").fill("production")
        # the draft has no run yet: approving it asks for an explicit confirmation
        page.locator("input[name=confirm_weak]").check()
        page.get_by_role("button", name="Approve").click()
        page.wait_for_load_state()
        expect(page.get_by_text("Approved version 1.")).to_be_visible()

        step("reviewer: an API token")
        page.goto(f"{BASE}/tokens/")
        page.get_by_label("Name").fill("smoke")
        page.get_by_role("button", name="Create token").click()
        page.wait_for_load_state()
        token = re.search(r"dct_[A-Za-z0-9_-]{20,}", page.content()).group(0)
        browser.close()

    step("the export with the token")
    url = f"{BASE}/api/sets/shell-guard/export.json?label=production"
    auth = {"Authorization": f"Bearer {token}"}
    export = httpx.get(url, headers=auth, timeout=10)
    assert export.status_code == 200, export.text
    assert export.json()["version"] == 1 and export.json()["status"] == "approved"
    again = httpx.get(url, headers={**auth, "If-None-Match": export.headers["ETag"]}, timeout=10)
    assert again.status_code == 304
    assert httpx.get(url, timeout=10).status_code == 401

    step("no CSP violation")
    violations = [m for m in messages if "CSP violation" in m or "Content Security Policy" in m]
    assert not violations, violations
    step("passed")


if __name__ == "__main__":
    main()
