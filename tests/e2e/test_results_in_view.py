"""In a real browser at 1280 and 390 px, results appear where the eye is: the preview's answers
within the right pane's first screen (on a phone, scrolled into view above the sticky bar); a
queued run marks no state wrong (a grey "pending" until it is answered); a stale "the draft is
invalid" leaves the Try pane once a valid draft is saved; and Ctrl+S saves in place, the page
not reloaded, the focus and the scroll where they were."""

import json

import pytest
from playwright.sync_api import expect

from questions import services
from questions.dev import standin
from tests import factories
from tests.e2e.conftest import SHOTS, WIDTHS, sign_in_user
from tests.helpers import RETURNS_DOC, returns_set, wait_for
from tests.providers import DUMMY_TASKS, KEY, Provider

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

#: where an element is against the screen and the sticky bar (the bar's top: the screen's end)
IN_VIEW = """el => {
  const r = el.getBoundingClientRect();
  const bar = document.querySelector('.editor-bar');
  const end = bar ? bar.getBoundingClientRect().top : window.innerHeight;
  return {top: r.top, end: end};
}"""


@pytest.fixture
def provider(provider_factory):
    return provider_factory(
        Provider(default=lambda body: standin.respond(body)[1]), key=KEY, TASKS=DUMMY_TASKS
    )


def _editor(page, live_server, width, height, slug="returns"):
    page.set_viewport_size({"width": width, "height": height})
    page.goto(f"{live_server.url}/sets/{slug}/v1/")
    page.wait_for_load_state()


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_the_preview_s_answers_come_where_the_eye_is(page, live_server, provider, width, height):
    writer = factories.author("writer")
    returns_set(writer)
    sign_in_user(page, live_server.url, writer)
    _editor(page, live_server, width, height)
    preview = page.locator("#preview")
    if width >= 1100:
        expect(preview).to_be_in_viewport()  # the right pane's first section
    preview.get_by_label("Backend").select_option("typesafe")
    preview.get_by_role("button", name="Ask").click()
    answer = page.locator("#preview-result figure.answer").first
    expect(answer).to_be_visible()
    # the first answer's top is on the screen, above the sticky bar, without a scroll by hand
    where = wait_for(
        lambda: (lambda w: w if 0 <= w["top"] < w["end"] - 40 else None)(answer.evaluate(IN_VIEW)),
        5,
        "the preview's first answer in view",
    )
    assert where["top"] < height
    if width >= 1100:  # in the pane's first screen: it had not to scroll to show it
        assert page.locator(".pane-side").evaluate("el => el.scrollTop") == 0
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / f"preview-answers-{width}.png")


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_a_queued_run_marks_no_state_wrong_until_it_is_answered(
    page, live_server, provider, width, height
):
    writer = factories.author("writer")
    version = returns_set(writer).versions.get()
    run = services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False)
    sign_in_user(page, live_server.url, writer)
    page.set_viewport_size({"width": width, "height": height})
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    results = page.locator("table.results tbody")
    expect(results.locator("tr")).to_have_count(4)
    expect(results.locator(".pending-mark")).to_have_count(4)
    expect(results.locator(".pending-mark").first).to_have_text("pending")
    assert "✗" not in results.inner_text()
    assert results.locator(".error, tr.fail").count() == 0
    colour = results.locator(".pending-mark").first.evaluate("el => getComputedStyle(el).color")
    red = page.evaluate(
        "() => { const e = document.createElement('span'); e.className = 'error';"
        " document.body.append(e); const c = getComputedStyle(e).color; e.remove(); return c; }"
    )
    assert colour != red
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / f"run-queued-{width}.png")
    services.batch_execute(run.pk)
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    expect(results.locator(".pending-mark")).to_have_count(0)
    expect(results.locator("td.check .ok, td.check .error")).to_have_count(12)  # 4 × 3 asked


def test_a_stale_invalid_draft_message_leaves_the_try_pane_after_a_valid_save(
    page, live_server, provider
):
    writer = factories.author("writer")
    qs = returns_set(writer)
    version = qs.versions.get()
    invalid = {**RETURNS_DOC, "question_4": {"type": "noul"}}  # nothing to judge: an error
    services.version_save(
        version=version, document=invalid, base_revision=version.revision, author=writer
    )
    sign_in_user(page, live_server.url, writer)
    _editor(page, live_server, 1280, 800)
    plan = page.locator("#try-plan")
    expect(plan).to_contain_text("The draft is invalid")
    card = page.locator(".card", has=page.locator("input[value=question_4]"))
    card.get_by_label("Instructions form").select_option("text")
    card.get_by_label("Instructions", exact=True).fill("Is the customer angry?")
    expect(card.locator(".card-status")).not_to_contain_text("error")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#saved")).to_have_text("Saved revision 3.")
    expect(plan).not_to_contain_text("invalid")
    expect(plan).to_contain_text("live call")
    page.screenshot(path=SHOTS / "try-after-valid-save-1280.png")


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_ctrl_s_saves_in_place_and_keeps_the_focus_and_the_scroll(page, live_server, width, height):
    writer = factories.author("writer")
    version = returns_set(writer).versions.get()
    sign_in_user(page, live_server.url, writer)
    _editor(page, live_server, width, height)
    page.evaluate("window.notReloaded = true")
    urgency = page.locator(".card", has=page.locator("input[value=urgency]"))
    field = urgency.locator(".rows > .row").nth(2).get_by_label("Description", exact=True)
    field.click()
    page.keyboard.press("End")
    page.keyboard.type(", and says so")
    expect(page.locator("#dirty")).to_have_text("Unsaved changes")
    scrolled = page.evaluate("window.scrollY")
    page.keyboard.press("Control+s")
    expect(page.locator("#saved")).to_have_text("Saved revision 2.")
    expect(page.locator("#dirty")).to_have_text("")
    expect(page.locator("#revision")).to_have_text("revision 2")
    assert page.evaluate("window.notReloaded") is True  # the same page, not a reload
    name = field.get_attribute("name")
    assert page.evaluate("document.activeElement.getAttribute('name')") == name
    assert page.evaluate("window.scrollY") == scrolled
    version.refresh_from_db()
    assert version.document["urgency"]["criteria"][2].endswith(", and says so")
    # typing goes on where it was; a second save starts from the first one's revision
    page.keyboard.type(" twice")
    page.keyboard.press("Control+s")
    expect(page.locator("#saved")).to_have_text("Saved revision 3.")
    version.refresh_from_db()
    assert json.dumps(version.document["urgency"]["criteria"][2]).endswith(' twice"')
    assert page.locator("#save-problem .message").count() == 0
    page.screenshot(path=SHOTS / f"ctrl-s-saved-{width}.png")
