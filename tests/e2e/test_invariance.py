"""In a real browser: an invariance control started from the controls page, its verdicts on the
run page, at a laptop's width and at a phone's."""

import pytest
from playwright.sync_api import expect

from questions import roles, services
from questions.core import invariance
from questions.models import BatchRun
from tests import factories
from tests.e2e.conftest import SHOTS, WIDTHS, overflow
from tests.providers import ROUTING, ROUTING_STATE, Provider, overlap_answers

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_an_invariance_control_from_the_controls_page(page, sign_in, settings):
    p = Provider(overlap_answers)
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = "k-e2e", p.url
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}
    user = factories.user("author", groups=(roles.AUTHORS,), password="pw-for-browser-tests")
    qs = factories.question_set("inv", owner=user, doc=ROUTING)
    services.sample_state_create(question_set=qs, name="refund", state=ROUTING_STATE, author=user)
    url = sign_in("author")
    page.goto(f"{url}/sets/inv/controls/")
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(SHOTS / f"invariance-form-{width}.png"), full_page=True)
        assert overflow(page) <= 0
    page.get_by_role("button", name="Start the invariance control").click()
    run = BatchRun.objects.get(kind=invariance.KIND)
    services.batch_execute(run.pk)  # the worker, here in the test's thread
    p.stop()
    page.goto(f"{url}/runs/{run.pk}/")
    section = page.locator("section.run-control")
    expect(section).to_contain_text("Invariance and coherence")
    expect(section.locator("tr", has_text="desk")).to_contain_text("broken")  # the clone grows
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        section.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"invariance-run-{width}.png"), full_page=False)
        assert overflow(page) <= 0
