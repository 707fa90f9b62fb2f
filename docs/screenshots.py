"""The README's screenshots, taken from a console running the demo (`make screenshots`).

Start the console first (`make run`, or any console with the demo loaded and a provider or the
stand-in answering), then, with the console's `DATABASE_URL` (the default SQLite file for
`make run`):

    .venv/bin/python docs/screenshots.py [--url http://127.0.0.1:8000] [--chromium PATH]

It signs in as the demo's `author`, opens the `shell-guard` draft in the editor, asks the
preview about a sample state and photographs the editor with its answers
(`docs/img/editor.png`), then opens compare on `support-routing`'s three runs — its rules,
the stand-in and the chat wire (`docs/img/compare.png`). Both 1280 × 800 px, the first screen
of the page.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
IMAGES = HERE / "img"
WIDTH, HEIGHT = 1280, 800


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    IMAGES.mkdir(exist_ok=True)
    # the demo's side by side: support-routing's first runs through its rules, the stand-in and
    # the chat wire, read from the database the console serves (before the browser's loop runs)
    columns = "&".join(f"col=run:{pk}" for pk in side_by_side())
    url = args.url.rstrip("/")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        page.goto(f"{url}/accounts/login/")
        page.get_by_label("Username").fill("author")
        page.get_by_label("Password").fill("demo")
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_load_state()

        page.goto(f"{url}/sets/shell-guard/v1/")
        page.wait_for_load_state()
        preview = page.locator("#preview")
        preview.get_by_role("button", name="Ask").click()
        page.locator("#preview-result figure.answer").first.wait_for()
        page.locator("#preview").evaluate("e => e.scrollIntoView({block: 'start'})")
        shot(page, IMAGES / "editor.png")

        page.goto(f"{url}/sets/support-routing/compare/?{columns}")
        page.wait_for_load_state()
        page.locator("table").first.evaluate("e => e.scrollIntoView({block: 'start'})")
        shot(page, IMAGES / "compare.png")
        browser.close()
    return 0


def side_by_side() -> list[int]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    os.environ.setdefault("DJANGO_DEBUG", "1")
    sys.path.insert(0, str(HERE.parent))
    import django

    django.setup()
    from questions.dev import demo_sets
    from questions.models import BatchRun

    runs = BatchRun.objects.filter(question_set__slug="support-routing", kind=BatchRun.PLAIN)
    first = [
        runs.filter(backend=backend).order_by("pk").first() for backend in demo_sets.SIDE_BY_SIDE
    ]
    return [run.pk for run in first if run]


def shot(page, target: Path) -> None:
    page.screenshot(path=str(target), full_page=False)
    print(f"wrote {target.relative_to(HERE.parent)} ({target.stat().st_size // 1024} KB)")


if __name__ == "__main__":
    sys.exit(main())
