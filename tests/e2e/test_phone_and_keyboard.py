"""In a real browser at 1280 and 390 px, on the walkthrough's returns assistant: pages that fit a
phone (the review's lint path wraps, the editor's Save stays on the screen, the compare grid's
first column says which state and question a row is about however far it is scrolled, the
scorecard shows a figure on its first screen and its last column at 1280 px), and the keyboard
(a skip link to Save; a noul's criteria are one control)."""

import pytest
from playwright.sync_api import expect

from questions import services
from questions.dev import standin
from tests import factories
from tests.e2e.conftest import SHOTS, WIDTHS, overflow, sign_in_user
from tests.helpers import RETURNS_DOC, returns_set
from tests.providers import DUMMY_TASKS, KEY, Provider

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

LINT_PATH = "questions.return_reason.criteria.late_delivery"


@pytest.fixture
def provider(provider_factory):
    return provider_factory(
        Provider(default=lambda body: standin.respond(body)[1]), key=KEY, TASKS=DUMMY_TASKS
    )


def _run(version, user):
    run = services.batch_create(version=version, backend="typesafe", user=user, enqueue=False)
    return services.batch_execute(run.pk)


def _two_versions(writer):
    """v1 kept and v2 (its reasons reworded) of the returns set, each with a finished run."""
    qs = returns_set(writer)
    v1 = qs.versions.get()
    run_v1 = _run(v1, writer)
    draft = services.version_keep(version=v1, author=writer)
    edited = {**RETURNS_DOC, "return_reason": {**RETURNS_DOC["return_reason"]}}
    edited["return_reason"]["criteria"] = {
        **RETURNS_DOC["return_reason"]["criteria"],
        "damaged": "the item arrived broken: the message describes damage or a defect",
    }
    v2 = services.version_save(
        version=draft, document=edited, base_revision=draft.revision, author=writer
    )
    return qs, run_v1, _run(v2, writer)


def _open(page, live_server, user, width, height, path):
    sign_in_user(page, live_server.url, user)
    page.set_viewport_size({"width": width, "height": height})
    page.goto(live_server.url + path)
    page.wait_for_load_state()


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_the_review_page_wraps_a_long_lint_path(page, live_server, width, height):
    writer = factories.author("writer")
    version = returns_set(writer).versions.get()
    services.version_submit(version=version, author=writer)
    _open(page, live_server, writer, width, height, "/sets/returns/v1/review/")
    path = page.locator(".question-lints code", has_text=LINT_PATH).first
    expect(path).to_be_visible()
    card = page.locator("article.review-question", has=path).bounding_box()
    box = path.bounding_box()
    assert box["x"] + box["width"] <= card["x"] + card["width"] + 0.5
    assert overflow(page) == 0
    SHOTS.mkdir(parents=True, exist_ok=True)
    path.scroll_into_view_if_needed()
    page.screenshot(path=SHOTS / f"review-lint-path-{width}.png")


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_the_editor_s_save_stays_on_the_screen(page, live_server, width, height):
    writer = factories.author("writer")
    returns_set(writer)
    _open(page, live_server, writer, width, height, "/sets/returns/v1/")
    save = page.locator("#save")
    bar = page.locator(".editor-bar")
    total = page.evaluate("document.documentElement.scrollHeight")
    assert total > 1.5 * height  # a long page: Save at its end would be far away
    for y in (0, total // 2, total):
        page.evaluate(f"window.scrollTo(0, {y})")
        expect(save).to_be_in_viewport(ratio=1)
        box = bar.bounding_box()
        assert box["y"] + box["height"] <= height + 0.5
    if width < 700:  # one line on a phone, Save first
        assert bar.bounding_box()["height"] <= 64
        assert save.bounding_box()["x"] < 60
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=SHOTS / f"editor-save-in-view-{width}.png")
    assert overflow(page) == 0


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_the_compare_grid_keeps_which_state_and_question_in_view(
    page, live_server, provider, width, height
):
    writer = factories.author("writer")
    _, run_v1, run_v2 = _two_versions(writer)
    third = _run(run_v2.version, writer)
    columns = f"col=run:{run_v1.pk}&col=run:{run_v2.pk}&col=run:{third.pk}"
    _open(page, live_server, writer, width, height, f"/sets/returns/compare/?{columns}")
    grid = page.locator(".compare-wrap")
    row = page.locator("table.compare tbody tr").first
    first = row.locator("td").first
    qid = row.get_attribute("id").split("-", 2)[2]
    row.scroll_into_view_if_needed()
    grid.evaluate("el => { el.scrollLeft = el.scrollWidth; }")  # as far as it goes
    assert width >= 768 or grid.evaluate("el => el.scrollLeft") > 0  # a phone scrolls it
    frame = grid.bounding_box()
    cell = first.bounding_box()
    assert frame["x"] - 0.5 <= cell["x"] <= frame["x"] + 0.5  # stuck to the frame's left edge
    # the row says its state and its question where it is stuck (a phone folds them together)
    said = first if width < 768 else row.locator("td.question-col")
    expect(said).to_contain_text(qid)
    expect(said).to_be_in_viewport()
    expect(first).to_contain_text(row.locator(".state-link").inner_text())
    said_box = said.bounding_box()
    assert said_box["x"] + said_box["width"] <= frame["x"] + frame["width"]
    assert overflow(page) == 0
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / f"compare-scrolled-{width}.png")


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_the_scorecard_shows_a_figure_first_and_its_last_column(
    page, live_server, provider, width, height, settings
):
    settings.DECISIONS_STANDIN = True  # the banner a newcomer sees on every page
    writer = factories.author("writer")
    _two_versions(writer)
    _open(page, live_server, writer, width, height, "/sets/returns/scorecard/")
    figure = page.locator("table.scorecard tbody tr").first.locator("td", has_text="%").first
    expect(figure).to_contain_text("%")
    box = figure.bounding_box()  # on the first screen, not below it nor beside it
    assert box["y"] + box["height"] <= height and box["x"] + box["width"] <= width
    frame = page.locator(".scorecard-frame")
    if width == 1280:  # every column, the last one too, without a sideways scroll
        assert frame.evaluate("el => el.scrollWidth <= el.clientWidth")
        last = page.locator("table.scorecard thead th").last.bounding_box()
        frame_box = frame.bounding_box()
        assert last["x"] + last["width"] <= frame_box["x"] + frame_box["width"] + 0.5
    assert overflow(page) == 0
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / f"scorecard-first-screen-{width}.png")


def test_a_skip_link_reaches_save_in_two_tabs_and_enter_saves(page, live_server):
    writer = factories.author("writer")
    version = returns_set(writer).versions.get()
    _open(page, live_server, writer, 1280, 800, "/sets/returns/v1/")
    page.keyboard.press("Tab")
    expect(page.locator(":focus")).to_have_text("Skip to content")
    page.keyboard.press("Tab")
    skip = page.locator(":focus")
    expect(skip).to_contain_text("Skip to Save")
    expect(skip).to_be_in_viewport()  # shown while it has the focus
    page.keyboard.press("Enter")
    expect(page.locator("#save")).to_be_focused()
    assert page.locator("#save").get_attribute("aria-keyshortcuts") == "Control+S Meta+S"
    page.keyboard.press("Enter")
    expect(page.locator("#saved")).to_have_text(f"Saved revision {version.revision}.")
    expect(page.locator("#save")).to_be_focused()


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_a_noul_s_criteria_are_one_control(page, live_server, width, height):
    writer = factories.author("writer")
    version = returns_set(writer).versions.get()
    _open(page, live_server, writer, width, height, "/sets/returns/v1/")
    page.locator(".editor-bar").get_by_role("button", name="noul", exact=True).click()
    card = page.locator("#cards .card").last
    expect(card.get_by_label("Question id")).to_have_value("question_4")
    card.get_by_label("Question id").fill("angry")
    card.get_by_label("Instructions", exact=True).fill("Is the customer angry?")
    expect(card.locator(".case")).to_have_count(2)
    assert card.locator(".case select").count() == 0  # no select per case
    assert card.locator("select:not(.attribution select)").count() == 3  # type, form, criteria
    control = card.get_by_label("Noul criteria")
    control.select_option(label="describe true and false")  # one choice: both boxes
    true_box = card.get_by_label("true: Description", exact=True)
    false_box = card.get_by_label("false: Description", exact=True)
    expect(true_box).to_be_visible()
    expect(false_box).to_be_visible()
    # the boxes take the card's width, not the right half of it
    assert true_box.bounding_box()["width"] >= 0.7 * card.bounding_box()["width"]
    true_box.fill("the message is written in capitals or calls names")
    false_box.fill("a calm message")
    expect(card.locator(".card-status")).not_to_contain_text("error")  # checked as typed
    card.scroll_into_view_if_needed()
    SHOTS.mkdir(parents=True, exist_ok=True)
    card.screenshot(path=SHOTS / f"noul-one-control-{width}.png", caret="initial")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#saved")).to_contain_text("Saved revision 2")
    version.refresh_from_db()
    assert version.document["angry"]["criteria"] == {
        "true": "the message is written in capitals or calls names",
        "false": "a calm message",
    }
    control.select_option(label="describe true only")
    expect(false_box).to_be_hidden()
    expect(true_box).to_be_visible()
    page.keyboard.press("Control+s")
    expect(page.locator("#saved")).to_contain_text("Saved revision 3")
    version.refresh_from_db()
    assert version.document["angry"]["criteria"] == {
        "true": "the message is written in capitals or calls names"
    }
    control.select_option(label="none: the instructions alone")
    expect(card.locator(".case").first).to_be_hidden()
    assert overflow(page) == 0
