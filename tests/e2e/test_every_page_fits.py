"""In a real browser, on the demo a newcomer sees (and on the walkthrough's returns assistant,
whose lint sits at a long path): every page a product owner opens — the sign-in page too — fits
the window at 1280 and at 390 px (no sideways scrolling of the page: wide tables scroll inside
their own frame) and no chart text falls outside its chart."""

import pytest
from django.contrib.auth import get_user_model

from questions import services
from questions.dev import demo
from questions.models import BatchRun, QuestionSet, SampleState, Version
from tests.e2e.conftest import CLIPPED_SVG_TEXT, WIDTHS
from tests.helpers import returns_set

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"


def _pages() -> dict[str, list[str]]:
    """Each demo user's pages: every kind of page the console has, with the demo's data."""
    gestures = QuestionSet.objects.get(slug="gestures")
    runs = list(BatchRun.objects.filter(question_set=gestures).order_by("pk"))
    state = SampleState.objects.filter(question_set=gestures).order_by("pk").first()
    draft = Version.objects.get(question_set__slug="shell-guard", number=1)
    columns = f"col=run:{runs[0].pk}&col=run:{runs[-1].pk}"
    returns = QuestionSet.objects.get(slug="returns")
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
        "/sets/gestures/agreement/",
        "/sets/refund-triage/agreement/",
        "/sets/refund-triage/production/",  # the demo's live traffic
        "/sets/gestures/production/",  # none yet
        "/sets/support-routing/v1/review/",
        "/sets/support-routing/compare/",  # the side-by-side runs: each option's moves
        "/sets/refund-triage/",
        "/sets/refund-triage/label/",
        f"/sets/gestures/states/{state.pk}/",
        f"/sets/gestures/states/{state.pk}/history/",
        draft.get_absolute_url(),
        "/sets/nothing-here/",
        "/sets/gestures/v1/",  # an approved version, read only
        "/sets/gestures/diff/",
        "/sets/gestures/label/",
        f"/sets/gestures/compare/?{columns}",
        f"/sets/gestures/compare/?{columns}&filter=changes",
        f"/sets/gestures/compare/?{columns}&filter=failures",
        f"/sets/gestures/compare/?{columns}&state={state.pk}",
        "/sets/support-routing/",
        "/sets/shell-guard/",
        # the walkthrough's set: its review carries a lint at questions.<id>.criteria.<option>
        f"/sets/{returns.slug}/",
        f"/sets/{returns.slug}/v1/review/",
        f"/sets/{returns.slug}/v2/",
        f"/sets/{returns.slug}/v2/json/",
        f"/sets/{returns.slug}/compare/",
        f"/sets/{returns.slug}/scorecard/",
        f"/sets/{returns.slug}/label/",
        f"/sets/{returns.slug}/controls/",
    ]
    return {
        "author": [*common, "/sets/new/", "/sets/shell-guard/states/new/"],
        "reviewer": [*common, "/tokens/", "/sets/gestures/webhooks/"],
    }


def test_every_page_fits_the_window_and_clips_no_chart_text(browser, live_server):
    """Each page is loaded once and laid out at each width in turn (the window resized, as a
    phone turned or a window narrowed would): the media queries read the new width, and no
    page is asked of the server twice for it."""
    demo.demo_load()
    for user in get_user_model().objects.filter(username__in=("author", "reviewer")):
        user.set_password("pw-for-browser-tests")
        user.save()
    author = get_user_model().objects.get(username="author")
    v1 = services.version_submit(version=returns_set(author).versions.get(), author=author)
    services.version_draft_from(version=v1, author=author)
    wide = []
    for username, paths in _pages().items():
        width, height = WIDTHS[0]
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        page.goto(f"{live_server.url}/accounts/login/")
        page.wait_for_load_state()
        for width, height in WIDTHS:  # the sign-in page, the first a newcomer sees
            page.set_viewport_size({"width": width, "height": height})
            if page.evaluate(OVERFLOW) > 0:
                wide.append(("nobody", width, "/accounts/login/", page.evaluate(OVERFLOW)))
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill("pw-for-browser-tests")
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_load_state()
        for path in paths:
            page.set_viewport_size({"width": WIDTHS[0][0], "height": WIDTHS[0][1]})
            page.goto(live_server.url + path)
            page.wait_for_load_state()
            for width, height in WIDTHS:
                page.set_viewport_size({"width": width, "height": height})
                overflow = page.evaluate(OVERFLOW)
                if overflow > 0:
                    wide.append((username, width, path, overflow))
                assert page.evaluate(CLIPPED_SVG_TEXT) == [], (width, path)
        context.close()
    assert wide == [], f"wider than the window: {wide}"
