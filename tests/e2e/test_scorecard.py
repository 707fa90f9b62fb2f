"""In a real browser at 1280 and 390 px: the scorecard, the review page that leads with its
verdict, and the walkthrough's phone and wide-screen fixes (tables that scroll instead of
breaking names letter by letter, compare using a wide screen)."""

import pytest
from django.contrib.auth import get_user_model

from tests.e2e.conftest import SHOTS, WIDTHS, overflow, sign_in_user
from tests.helpers import scorecard_world

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

#: a name's link on one line: one client rect (letter-by-letter breaking gives several)
LINES = "el => el.getClientRects().length"


def _signed_in(page, live_server, username="checker"):
    sign_in_user(page, live_server.url, get_user_model().objects.get(username=username))
    return live_server.url


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_the_scorecard_fits_and_scrolls_inside_its_own_frame(page, live_server, width, height):
    world = scorecard_world()
    page.set_viewport_size({"width": width, "height": height})
    url = _signed_in(page, live_server)
    page.goto(f"{url}/sets/card/scorecard/")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / f"scorecard-{width}.png", full_page=True)
    assert overflow(page) == 0
    frame = page.locator(".scorecard-frame")
    box = frame.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5
    row = page.locator('tr[data-version="2"]')
    assert "92% (65–99%, n = 12)" in row.inner_text()
    assert row.locator("a", has_text="card").get_attribute("href") == "/sets/card/v2/#card-desk"
    if width == 1280:  # the whole card fits a wide screen: no sideways scroll needed
        assert frame.evaluate("el => el.scrollWidth <= el.clientWidth")
    link = row.locator("th a").first
    assert link.evaluate(LINES) == 1
    assert world["run_v2"].pk


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_the_review_page_shows_the_verdict_and_the_buttons_first(page, live_server, width, height):
    scorecard_world()
    page.set_viewport_size({"width": width, "height": height})
    url = _signed_in(page, live_server)
    page.goto(f"{url}/sets/card/v2/review/")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / f"review-verdict-{width}.png", full_page=True)
    page.screenshot(path=SHOTS / f"review-verdict-{width}-viewport.png")
    assert overflow(page) == 0
    verdict = page.locator("#verdict-heading").bounding_box()
    approve = page.get_by_role("button", name="Approve").bounding_box()
    questions = page.locator("#diff-heading").bounding_box()
    assert verdict["y"] < approve["y"] < questions["y"]
    if width == 1280:  # not 3,000 px down: the buttons are on the second screen at most
        assert approve["y"] < 2 * height
    assert page.get_by_label("Point a label at it on approval (optional)").input_value() == (
        "production"
    )
    assert "better on 12 states" in page.locator("#verdict").inner_text()


def test_phone_tables_keep_names_whole(page, live_server):
    scorecard_world()
    page.set_viewport_size({"width": 390, "height": 844})
    url = _signed_in(page, live_server, "writer")
    page.goto(f"{url}/")
    page.screenshot(path=SHOTS / "set-list-390.png", full_page=True)
    assert overflow(page) == 0
    assert page.locator('a[href="/sets/card/"]').first.evaluate(LINES) == 1
    page.goto(f"{url}/sets/card/")
    page.screenshot(path=SHOTS / "set-page-runs-390.png", full_page=True)
    assert overflow(page) == 0
    runs = page.locator("section[aria-labelledby=runs-heading] tbody tr")
    for i in range(runs.count()):
        assert runs.nth(i).locator("td a").first.evaluate(LINES) == 1


def test_compare_uses_a_wide_screen_for_a_third_column(page, live_server):
    world = scorecard_world()
    page.set_viewport_size({"width": 1280, "height": 800})
    url = _signed_in(page, live_server, "writer")
    cols = "&".join(f"col=run:{world[k].pk}" for k in ("run_v1", "run_try", "run_v2"))
    page.goto(f"{url}/sets/card/compare/?{cols}")
    page.screenshot(path=SHOTS / "compare-3-runs-1280.png", full_page=True)
    assert overflow(page) == 0
    wrap = page.locator(".compare-wrap")
    assert wrap.evaluate("el => el.scrollWidth <= el.clientWidth + 1"), "a column is cut"


def test_a_long_set_name_stays_whole_on_a_phone(page, live_server):
    from tests import factories

    writer = factories.author("writer")
    factories.question_set("shell-command-guard", owner=writer)
    page.set_viewport_size({"width": 390, "height": 844})
    url = _signed_in(page, live_server, "writer")
    page.goto(f"{url}/")
    assert overflow(page) == 0
    assert page.locator('a[href="/sets/shell-command-guard/"]').first.evaluate(LINES) == 1
