"""In a real browser at 1280×800 and 390×844: states labelled by keyboard only, each key the
number shown beside its answer (a score's level, a noul's 1 / 2), saved without a reload and
echoed in words, the same state and question after a reload, undo after it, keys typed ahead
falling on their own questions, and the answer buttons inside the window however long the state;
and a CSV of states uploaded on the set page, then downloaded again."""

import re

import pytest
from playwright.sync_api import expect

from questions import services
from questions.models import BatchItem, BatchRun, LabelReservation, SampleState
from tests import factories
from tests.e2e.conftest import SHOTS, WIDTHS, overflow, sign_in_user

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

LEVELS = [
    "no hurry at all",
    "routine",
    "soon",
    "today",
    "now: the customer is waiting on the line",
    "complaint threatens to leave",
]
DOC = {
    "desk": {
        "type": "choice",
        "instructions": "Which desk?",
        "criteria": {"billing": "money", "shipping": "parcels", "other": "anything else"},
    },
    "urgency": {"type": "score", "instructions": "How urgent?", "criteria": LEVELS},
    "churn": {"type": "noul", "instructions": "Will they leave?"},
}


def _world():
    writer = factories.author("writer")
    qs = factories.question_set("tri", owner=writer, doc=DOC)
    version = factories.draft(qs)
    first = services.sample_state_create(
        question_set=qs,
        name="late parcel with a rather long name that must wrap on a phone",
        state={"message": "My parcel is late and I want my money back " * 12},
        author=writer,
    )
    services.sample_state_create(question_set=qs, name="second", state={"n": 2}, author=writer)
    run = BatchRun.objects.create(
        question_set=qs, version=version, backend="recorded", model="m", status="done"
    )
    BatchItem.objects.create(
        run=run,
        sample_state=first.current_revision(),
        status="answered",
        answers={
            "desk": {
                "type": "choice",
                "choice": "shipping",
                "probabilities": {"billing": 0.3, "shipping": 0.4, "other": 0.3},
                "confidence": 0.4,
            }
        },
    )
    return writer, first


#: every answer button's box, against the window's height
BUTTONS_OUT_OF_VIEW = """() => [...document.querySelectorAll('.label-choices button')]
  .map((b) => b.getBoundingClientRect())
  .filter((r) => r.top < 0 || r.bottom > window.innerHeight).length"""


def _in_view(page) -> None:
    expect(page.locator(".label-choices button").first).to_be_visible()
    assert page.evaluate(BUTTONS_OUT_OF_VIEW) == 0


def _expected(sample) -> dict:
    sample.refresh_from_db()
    return sample.expected


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=lambda v: str(v))
def test_labelling_by_keyboard_only(page, live_server, width, height):
    writer, first = _world()
    page.set_viewport_size({"width": width, "height": height})
    sign_in_user(page, live_server.url, writer)
    page.goto(f"{live_server.url}/sets/tri/label/")
    heading, question = page.locator("#label-heading"), page.locator("#question-heading")
    echo = page.locator("#label-echo")
    expect(heading).to_contain_text(first.name)
    expect(page.locator(".suggestion")).to_contain_text("v1 recorded: shipping")
    expect(page).to_have_url(re.compile(rf"state={first.pk}&question=desk"))
    _in_view(page)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"labelling-{width}.png"))
    assert overflow(page) <= 0
    page.evaluate("window.notReloaded = true")  # gone if a key press reloaded the page

    page.keyboard.press("2")  # the option shown as 2: shipping
    expect(echo).to_contain_text("desk: shipping — parcels")
    expect(question).to_contain_text("urgency")
    assert _expected(first) == {"desk": "shipping"}
    _in_view(page)
    page.keyboard.press("5")  # the level shown as 5, not 4
    expect(echo).to_contain_text("urgency: 5 — complaint threatens to leave")
    expect(question).to_contain_text("churn")
    assert _expected(first) == {"desk": "shipping", "urgency": 5}
    assert page.evaluate("window.notReloaded") is True
    expect(page).to_have_url(re.compile(rf"state={first.pk}&question=churn"))
    page.screenshot(path=str(SHOTS / f"labelling-saved-{width}.png"))

    page.reload()  # the same state and question, and undo still takes back the last label
    expect(heading).to_contain_text(first.name)
    expect(question).to_contain_text("churn")
    _in_view(page)
    page.evaluate("window.notReloaded = true")
    page.keyboard.press("u")
    expect(echo).to_contain_text("Undone for")
    expect(echo).to_contain_text("urgency: 5 — complaint threatens to leave")
    expect(question).to_contain_text("urgency")
    assert _expected(first) == {"desk": "shipping"}
    page.keyboard.press("3")
    expect(echo).to_contain_text("urgency: 3 — today")
    page.keyboard.press("2")  # a noul's 2 is false
    expect(echo).to_contain_text("churn: false")
    expect(heading).to_contain_text("second")  # every question of the first is labelled
    assert _expected(first) == {"desk": "shipping", "urgency": 3, "churn": False}

    second = SampleState.objects.get(name="second")
    for key in ("1", "0", "t"):  # typed without waiting: each falls on its own question
        page.keyboard.press(key)
    expect(page.locator(".label-done")).to_contain_text("Every sample state has an expected")
    assert _expected(second) == {"desk": "billing", "urgency": 0, "churn": True}
    assert page.evaluate("window.notReloaded") is True
    page.screenshot(path=str(SHOTS / f"labelling-done-{width}.png"), full_page=True)
    assert overflow(page) <= 0


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=lambda v: str(v))
def test_the_answers_stay_in_view_beside_a_long_state(page, live_server, width, height):
    writer, first = _world()
    services.sample_state_update(
        sample=first,
        name=first.name,
        state={"lines": [f"line {i}: the customer writes at length" for i in range(80)]},
        author=writer,
        base_revision=first.revision,
    )
    page.set_viewport_size({"width": width, "height": height})
    sign_in_user(page, live_server.url, writer)
    page.goto(f"{live_server.url}/sets/tri/label/?state={first.pk}&question=urgency")
    expect(page.locator("#question-heading")).to_contain_text("urgency")
    _in_view(page)
    page.screenshot(path=str(SHOTS / f"labelling-long-{width}.png"))
    page.mouse.wheel(0, 600)
    page.keyboard.press("1")
    expect(page.locator("#label-echo")).to_contain_text("urgency: 1 — routine")
    _in_view(page)
    assert overflow(page) <= 0


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=lambda v: str(v))
def test_blind_the_state_shown_is_held_and_the_model_shows_after_the_label(
    page, live_server, width, height
):
    writer, first = _world()
    services.labelling_configure(
        question_set=first.question_set, user=factories.reviewer("rev"), needed=2
    )
    page.set_viewport_size({"width": width, "height": height})
    sign_in_user(page, live_server.url, writer)
    page.goto(f"{live_server.url}/sets/tri/label/")
    expect(page.locator("#label-hold")).to_contain_text("Held for you until")  # its POST
    assert LabelReservation.objects.filter(sample_state=first, labeller=writer).exists()
    expect(page.locator(".suggestion")).to_contain_text("Blind: 2 labels a question")
    expect(page.locator(".label-progress")).to_contain_text("you 0 / 6")
    page.keyboard.press("1")
    expect(page.locator("#label-echo")).to_contain_text("desk: billing — money.")
    expect(page.locator("#label-echo")).to_contain_text(
        "The model answered shipping (v1 recorded)."
    )
    expect(page.locator(".label-progress")).to_contain_text("you 1 / 6")
    expect(page.locator("#label-hold")).to_contain_text("Held for you until")
    assert _expected(first) == {}  # one label of the two it needs
    _in_view(page)
    assert overflow(page) <= 0


def test_a_csv_uploaded_on_the_set_page_imports_and_downloads_again(page, live_server, tmp_path):
    writer = factories.author("writer")
    factories.question_set("tri", owner=writer, doc=DOC)
    path = tmp_path / "states.csv"
    path.write_text(
        "name,state,expected,tags\n"
        'a,"{""m"": ""hi""}","{""desk"": ""billing""}",new\n'
        'b,"{""m"": ""yo""}",,\n'
    )
    sign_in_user(page, live_server.url, writer)
    page.goto(f"{live_server.url}/sets/tri/")
    page.locator("input[name=states]").set_input_files(str(path))
    page.get_by_role("button", name="Import states").click()
    expect(page.locator(".messages")).to_contain_text("Added 2 sample states.")
    with page.expect_download() as download:
        page.get_by_role("link", name="CSV", exact=True).click()
    saved = tmp_path / "back.csv"
    download.value.save_as(saved)
    page.locator("input[name=states]").set_input_files(str(saved))
    page.get_by_role("button", name="Import states").click()
    expect(page.locator(".messages")).to_contain_text(
        "Added 0 sample states; skipped 2 as duplicates by content"
    )
    assert SampleState.objects.get(name="a").expected == {"desk": "billing"}
    page.screenshot(path=str(SHOTS / "states-upload-1280.png"), full_page=True)
    assert overflow(page) <= 0
    page.set_viewport_size({"width": 390, "height": 844})
    page.locator("#states-heading").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "states-upload-390.png"), full_page=True)
    assert overflow(page) <= 0


def test_a_refused_upload_says_which_line_and_links_back_to_the_set(page, live_server, tmp_path):
    writer = factories.author("writer")
    factories.question_set("tri", owner=writer, doc=DOC)
    path = tmp_path / "states.csv"
    path.write_text('name,state,expected\nx,1,"{""desk"": ""nonsense"", ""urgency"": 9}"\n')
    sign_in_user(page, live_server.url, writer)
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{live_server.url}/sets/tri/")
        page.locator("input[name=states]").set_input_files(str(path))
        page.get_by_role("button", name="Import states").click()
        expect(page.locator("#error-detail")).to_contain_text(
            "line 2 (x): desk in v1 takes billing, shipping, other, not 'nonsense'"
        )
        page.screenshot(path=str(SHOTS / f"states-upload-refused-{width}.png"), full_page=True)
        assert overflow(page) <= 0
    page.get_by_role("link", name="Back to tri").click()
    expect(page.locator("#states-heading")).to_be_visible()
    assert not SampleState.objects.exists()
