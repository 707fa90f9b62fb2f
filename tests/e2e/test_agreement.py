"""In a real browser at 1280 and 390 px: a set's agreement page fits the window, a card per
question with the labellers' figure, each labeller and the model; the scorecard carries the
summary line and links to it."""

import pytest

from questions import services
from tests.e2e.conftest import SHOTS, WIDTHS, overflow, sign_in_user
from tests.helpers import agreement_world

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_the_agreement_page_fits_and_reads_per_question(page, live_server, width, height):
    world = agreement_world(40)
    page.set_viewport_size({"width": width, "height": height})
    sign_in_user(page, live_server.url, world["rev"])
    page.goto(f"{live_server.url}/sets/eyes/scorecard/")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / f"agreement-scorecard-{width}.png", full_page=True)
    lines = page.locator("ul.agreement-lines li")
    assert lines.count() == 3
    assert (
        lines.nth(0).inner_text().startswith("desk labels: 31 settled, 8 disputed, 1 ambiguous, κ")
    )
    page.get_by_role("link", name="How far the labellers agree, and the model").click()
    page.wait_for_url("**/sets/eyes/agreement/")
    page.screenshot(path=SHOTS / f"agreement-{width}.png", full_page=True)
    assert overflow(page) == 0
    cards = page.locator(".agreement-question")
    assert cards.count() == 3
    desk = cards.nth(0)
    assert "The labellers, against each other (Cohen's κ): κ 0." in desk.inner_text()
    assert desk.locator("tr.model-row th").inner_text() == "the model"
    assert "ordinal α" in cards.nth(1).inner_text()
    for i in range(3):
        box = cards.nth(i).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5


def test_the_review_evidence_carries_the_summary_line(page, live_server):
    world = agreement_world(40)
    services.version_submit(version=world["set"].versions.get(), author=world["ann"])
    page.set_viewport_size({"width": 1280, "height": 800})
    sign_in_user(page, live_server.url, world["rev"])
    page.goto(f"{live_server.url}/sets/eyes/v1/review/")
    block = page.locator(".label-agreement")
    block.scroll_into_view_if_needed()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / "agreement-review-1280.png")
    assert "desk labels: 31 settled, 8 disputed, 1 ambiguous, κ" in block.inner_text()
    assert overflow(page) == 0
