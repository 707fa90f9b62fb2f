"""In a real browser, on the demo a newcomer sees: every page of the console fits the window at
1280 and at 390 px (no sideways scrolling of the page: wide tables scroll inside their own
frame) and no chart text falls outside its chart."""

import pytest
from django.contrib.auth import get_user_model

from questions.dev import demo
from questions.models import BatchRun, QuestionSet, SampleState, Version
from tests.e2e.conftest import CLIPPED_SVG_TEXT, WIDTHS

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"


def _pages() -> dict[str, list[str]]:
    """Each demo user's pages: every kind of page the console has, with the demo's data."""
    gestures = QuestionSet.objects.get(slug="gestures")
    runs = list(BatchRun.objects.filter(question_set=gestures).order_by("pk"))
    state = SampleState.objects.filter(question_set=gestures).order_by("pk").first()
    draft = Version.objects.get(question_set__slug="shell-guard", number=1)
    common = [
        "/",
        "/?q=rout",
        "/reviews/",
        "/check/",
        "/sets/gestures/",
        "/sets/gestures/history/",
        "/sets/gestures/diff/?a=1&b=2",
        "/sets/gestures/compare/",
        f"/runs/{runs[0].pk}/",
        f"/runs/{runs[-1].pk}/?against={runs[0].pk}",
        "/sets/gestures/v2/",
        "/sets/gestures/v2/json/",
        "/sets/gestures/v2/review/",
        "/sets/gestures/v2/advice/",
        "/sets/gestures/controls/",
        "/sets/gestures/labels/production/export/",
        "/sets/gestures/scorecard/",
        "/sets/support-routing/v1/review/",
        "/sets/support-routing/compare/",  # the side-by-side runs: each option's moves
        "/sets/refund-triage/",
        "/sets/refund-triage/label/",
        f"/sets/gestures/states/{state.pk}/",
        f"/sets/gestures/states/{state.pk}/history/",
        draft.get_absolute_url(),
        "/sets/nothing-here/",
    ]
    return {
        "author": [*common, "/sets/new/", "/sets/shell-guard/states/new/"],
        "reviewer": [*common, "/tokens/", "/sets/gestures/webhooks/"],
    }


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_every_page_fits_the_window_and_clips_no_chart_text(browser, live_server, width, height):
    demo.demo_load()
    for user in get_user_model().objects.filter(username__in=("author", "reviewer")):
        user.set_password("pw-for-browser-tests")
        user.save()
    wide = []
    for username, paths in _pages().items():
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        page.goto(f"{live_server.url}/accounts/login/")
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill("pw-for-browser-tests")
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_load_state()
        for path in paths:
            page.goto(live_server.url + path)
            page.wait_for_load_state()
            overflow = page.evaluate(OVERFLOW)
            if overflow > 0:
                wide.append((username, path, overflow))
            assert page.evaluate(CLIPPED_SVG_TEXT) == [], (width, path)
        context.close()
    assert wide == [], f"wider than {width} px: {wide}"
