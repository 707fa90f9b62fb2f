"""In a real browser: the advice designer draws each threshold curve over a labelled run, and
marks the advice an author saves — at a laptop's width and at a phone's."""

import pytest
from playwright.sync_api import expect

from questions import roles
from tests import factories
from tests.e2e.conftest import SHOTS, overflow
from tests.helpers import ADVICE_DOC as DOC
from tests.helpers import labelled_run

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_designer_shows_the_curves_and_marks_the_saved_advice(page, sign_in):
    writer = factories.user("author", groups=(roles.AUTHORS,), password="pw-for-browser-tests")
    qs = factories.question_set("s", owner=writer, doc=DOC)
    labelled_run(qs, factories.draft(qs), writer)
    url = sign_in("author")
    page.goto(f"{url}/sets/s/v1/")
    page.get_by_role("link", name="Advice").click()
    curves = page.locator("svg.threshold-curve")
    expect(curves).to_have_count(2)
    expect(page.locator("svg.threshold-curve .chosen")).to_have_count(0)
    page.get_by_label("urgent threshold on P(true)").fill("0.7")
    page.get_by_role("button", name="Save advice").click()
    expect(page.get_by_text("Saved the advice of version 1.")).to_be_visible()
    expect(page.locator("svg.threshold-curve .chosen")).to_have_count(1)
    expect(page.locator("svg.threshold-curve .marker")).to_have_count(3)
    expect(page.get_by_text("At 0.7: precision 1.00, recall 0.50, coverage 0.25")).to_be_visible()
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in ((1280, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        assert overflow(page) <= 0, f"wider than {width} px"
        page.screenshot(path=SHOTS / f"advice-{width}.png", full_page=True)
