"""In a real browser at 1280 and 390 px: a set's production page fits the window — the live
pass rate beside the hand-made one, the rules (sampling, retention), a card per question with
its legend and a share bar per day — and the set page links to it."""

import pytest

from tests.e2e.conftest import SHOTS, WIDTHS, overflow, sign_in_user
from tests.helpers import live_world

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_the_production_page_fits_and_reads_per_question(page, live_server, width, height):
    _, _, owner, _, _ = live_world()
    page.set_viewport_size({"width": width, "height": height})
    sign_in_user(page, live_server.url, owner)
    page.goto(f"{live_server.url}/sets/live/")
    page.get_by_role("link", name="Production", exact=True).click()
    page.wait_for_url("**/sets/live/production/")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / f"production-{width}.png", full_page=True)
    assert overflow(page) == 0
    summary = page.locator(".production-summary").inner_text()
    assert "Live pass rate of v1: 50% (9–91%, n = 2)" in summary
    assert "Sampling keeps 1 in 1" in summary and "after 30 days" in summary
    cards = page.locator(".production-question")
    assert cards.count() == 3
    desk = cards.nth(0)
    assert "A gap to label: production answers other" in desk.inner_text()
    assert desk.locator(".share-legend li").count() == 3
    assert desk.locator("svg.chart.share").count() >= 3  # two days and the labelled states
    for i in range(3):
        box = cards.nth(i).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5
