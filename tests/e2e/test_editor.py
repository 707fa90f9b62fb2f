"""In a real browser: try across states after a one-word edit (only the changed question goes
to the provider, counted at a loopback provider), the editor's keyboard flow, and its two
panes at 1280 px and one column at 390 px."""

import json
import threading

import pytest
from playwright.sync_api import expect

from questions import services
from questions.dev import standin
from questions.models import BatchRun
from tests import factories
from tests.e2e.conftest import sign_in_user
from tests.providers import DOC, DUMMY_TASKS, KEY, Provider

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def provider(provider_factory):
    return provider_factory(
        Provider(default=lambda body: standin.respond(body)[1]), key=KEY, TASKS=DUMMY_TASKS
    )


def _a_set(states: int = 3):
    writer = factories.author("writer")
    qs = factories.question_set("triage", owner=writer, doc=DOC)
    for i in range(states):
        services.sample_state_create(
            question_set=qs,
            name=f"state {i}",
            state={"n": i},
            author=writer,
            expected={"desk": "billing", "urgent": True},
        )
    return services.open_draft(qs), writer


def test_try_across_states_after_a_one_word_edit_asks_only_that_question(
    page, live_server, provider
):
    version, writer = _a_set(3)
    first = services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False)
    services.batch_execute(first.pk)
    assert len(provider.requests) == 3
    provider.requests.clear()
    sign_in_user(page, live_server.url, writer)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/sets/triage/v1/")
    desk = page.locator(".card", has=page.locator("input[value=desk]"))
    instructions = desk.get_by_label("Instructions", exact=True)
    instructions.fill("Which desk handles it?")  # one word added
    try_pane = page.locator("#try")
    expect(try_pane).to_be_in_viewport()  # beside the questions, not below them
    try_pane.get_by_role("button", name="Check calls").click()
    expect(page.locator("#try-plan")).to_contain_text("3 live calls")
    expect(page.locator("#try-plan")).to_contain_text("desk")
    assert provider.requests == []  # nothing is asked before the author says so
    try_pane.get_by_role("button", name="Save and try").click()
    expect(page.locator("#try-run")).to_contain_text("queued")
    expect(page.locator("#saved")).to_have_text("Saved revision 2.")
    expect(page.locator("#dirty")).to_have_text("")
    run = BatchRun.objects.exclude(pk=first.pk).get()
    worker = threading.Thread(target=services.batch_execute, args=(run.pk,), daemon=True)
    worker.start()  # the worker process, here a thread
    expect(page.locator(".try-pass-rate")).to_contain_text("→", timeout=8000)
    worker.join(5)
    assert len(provider.requests) == 3
    assert [sorted(r["body"]["questions"]) for r in provider.requests] == [["desk"]] * 3
    table = page.locator("table.try-table")
    expect(table.locator("tbody tr")).to_have_count(3)
    expect(table).to_contain_text("expected billing")
    expect(page.locator("#try-run")).to_contain_text(standin.MODEL)
    page.screenshot(path="/tmp/editor-try-1280.png")
    # the result is a run like any other: its page and compare
    page.locator("#try-run").get_by_role("link", name="compare").click()
    page.wait_for_load_state()
    assert f"run:{run.pk}" in page.url


def test_the_keyboard_flow_in_the_editor(page, live_server, settings):
    version, writer = _a_set(1)
    sign_in_user(page, live_server.url, writer)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/sets/triage/v1/")
    desk = page.locator(".card", has=page.locator("input[value=desk]"))
    rows = desk.locator(".rows > .row")
    expect(rows).to_have_count(3)
    # "Add option" moves focus into the new row: typing goes there
    desk.get_by_role("button", name="Add option").focus()
    page.keyboard.press("Enter")
    expect(rows).to_have_count(4)
    page.keyboard.type("escalate")
    expect(rows.nth(3).locator(".row-name")).to_have_value("escalate")
    # Enter in a row adds the next row after it and never submits the page
    page.keyboard.press("Enter")
    expect(rows).to_have_count(5)
    page.keyboard.type("escalate")
    assert page.url.endswith("/sets/triage/v1/")
    # the duplicate is marked at its second occurrence, outlined
    second = rows.nth(4)
    expect(second.locator(".slot")).to_contain_text("used twice")
    expect(second.locator(".row-name")).to_have_attribute("aria-invalid", "true")
    expect(rows.nth(3).locator(".row-name")).not_to_have_attribute("aria-invalid", "true")
    expect(page.locator(".document-counts")).to_contain_text("1 error")
    # a removal can be undone
    second.get_by_role("button", name="Remove").click()
    expect(rows).to_have_count(4)
    expect(page.locator("#undo")).to_contain_text("Removed option “escalate”")
    page.keyboard.press("Enter")  # focus is on Undo
    expect(rows).to_have_count(5)
    second.get_by_role("button", name="Remove").click()
    expect(page.locator(".document-counts")).to_contain_text("0 errors")
    # Ctrl+S saves, in place
    page.keyboard.press("Control+s")
    expect(page.locator("#saved")).to_contain_text("Saved revision 2")
    version.refresh_from_db()
    assert "escalate" in version.document["desk"]["criteria"]
    # no focus stop hides behind the sticky bar (where the bar is now: the page goes on
    # from the field that had the focus, and the bar sits higher at the page's end)
    page.keyboard.press("Tab")
    hidden = []
    for _ in range(60):
        page.keyboard.press("Tab")
        box = page.evaluate(
            "(() => { const e = document.activeElement; if (!e || e === document.body ||"
            " e.closest('.editor-bar')) return null; const r = e.getBoundingClientRect();"
            " const bar = document.querySelector('.editor-bar').getBoundingClientRect();"
            " return {bottom: r.bottom, top: r.top, name: e.name || e.textContent,"
            " barTop: bar.top, barBottom: bar.bottom}; })()"
        )
        if box and box["bottom"] > box["barTop"] + 1 and box["top"] < box["barBottom"]:
            hidden.append(box["name"])
    assert hidden == []


@pytest.mark.parametrize("width", [1280, 390])
def test_the_editor_at_wide_and_phone_widths(page, live_server, width):
    _, writer = _a_set(1)
    sign_in_user(page, live_server.url, writer)
    page.set_viewport_size({"width": width, "height": 844})
    page.goto(f"{live_server.url}/sets/triage/v1/")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    name = page.locator(".row-name").first
    box = name.bounding_box()
    assert box["width"] >= 120  # option names visible and editable on a phone
    name.fill("money")
    expect(name).to_have_value("money")
    cards, side = page.locator("#cards").bounding_box(), page.locator(".pane-side").bounding_box()
    if width >= 1100:
        assert side["x"] > cards["x"] + cards["width"] - 1  # two panes side by side
        assert side["y"] < 800
    else:
        assert side["y"] >= cards["y"] + cards["height"] - 1  # one column
    page.screenshot(path=f"/tmp/editor-{width}.png")
    page.locator(".pane-side").screenshot(path=f"/tmp/editor-side-{width}.png")


STRUCTURED = {
    "desk": {
        "criteria": {
            "tech": {"owns": ["the app", "the API"], "what": "bugs"},
            "billing": ["money owed", {"not": "refunds"}],
            "other": "anything else",
        },
        "type": "choice",
        "instructions": "Which desk handles it?",
    },
    "urgent": {
        "type": "noul",
        "instructions": "Is it urgent?",
        "criteria": {"false": ["it can wait"], "true": "someone is blocked"},
    },
}


@pytest.mark.parametrize("width", [1280, 390])
def test_a_structured_entry_is_a_json_field_and_survives_an_edit_elsewhere(
    page, live_server, width
):
    writer = factories.author("writer")
    qs = factories.question_set("structured", owner=writer, doc=STRUCTURED)
    version = services.open_draft(qs)
    before = version.document_text
    sign_in_user(page, live_server.url, writer)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/sets/structured/v1/")
    desk = page.locator(".card", has=page.locator("input[value=desk]"))
    tech = desk.locator(".rows > .row").nth(0)
    field = tech.get_by_label("Entry as JSON")
    expect(field).to_be_visible()
    expect(tech.get_by_label("Description", exact=True)).to_be_hidden()
    shown = field.input_value()
    assert '"owns"' in shown and shown.index('"owns"') < shown.index('"what"')  # as written
    urgent = page.locator(".card", has=page.locator("input[value=urgent]"))
    cases = urgent.locator(".case-name")
    expect(cases).to_have_text(["false", "true"])  # the author's order
    expect(urgent.locator(".row.case").nth(0).get_by_label("false: Entry as JSON")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    tech.scroll_into_view_if_needed()
    # caret="initial": Playwright's caret hiding trips the content security policy once the
    # page changes in place after it (the save below does not reload the page)
    page.screenshot(path=f"/tmp/editor-structured-{width}.png", caret="initial")
    urgent.screenshot(path=f"/tmp/editor-structured-noul-{width}.png", caret="initial")
    desk.get_by_label("Instructions", exact=True).fill("Which desk takes it?")
    page.locator("#editor").get_by_role("button", name="Save").click()
    expect(page.locator("#saved")).to_contain_text("Saved revision 2")
    version.refresh_from_db()
    expected = json.loads(before)
    expected["desk"]["instructions"] = "Which desk takes it?"
    assert version.document_text == services.document_text(expected)  # byte for byte
    # a JSON field that is not JSON is marked at its row, and nothing is saved
    field = (
        page.locator(".card", has=page.locator("input[value=desk]"))
        .locator(".rows > .row")
        .nth(0)
        .get_by_label("Entry as JSON")
    )
    field.fill('{"owns": [}')
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(
        page.locator(".card", has=page.locator("input[value=desk]"))
        .locator(".rows > .row")
        .nth(0)
        .locator(".slot")
    ).to_contain_text("not JSON")
