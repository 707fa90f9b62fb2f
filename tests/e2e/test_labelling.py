"""In a real browser: states labelled by keyboard only (digits for options and levels, t / f
for a noul, s to skip, u to undo) at 1280 and 390 px, nothing overflowing; and a CSV of states
uploaded on the set page, then downloaded again."""

import pytest
from playwright.sync_api import expect

from questions import services
from questions.models import BatchItem, BatchRun, SampleState
from tests import factories
from tests.e2e.conftest import SHOTS, WIDTHS, overflow, sign_in_user

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

DOC = {
    "desk": {
        "type": "choice",
        "instructions": "Which desk?",
        "criteria": {"billing": "money", "shipping": "parcels", "other": "anything else"},
    },
    "urgency": {"type": "score", "criteria": ["calm", "soon", "now"]},
    "churn": {"type": "noul", "instructions": "Will they leave?"},
}


def _world():
    writer = factories.author("writer")
    qs = factories.question_set("tri", owner=writer, doc=DOC)
    version = factories.draft(qs)
    first = services.sample_state_create(
        question_set=qs,
        name="late parcel with a rather long name that must wrap on a phone",
        state={"message": "My parcel is late and I want my money back " * 4},
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


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=lambda v: str(v))
def test_labelling_by_keyboard_only(page, live_server, width, height):
    writer, first = _world()
    page.set_viewport_size({"width": width, "height": height})
    sign_in_user(page, live_server.url, writer)
    page.goto(f"{live_server.url}/sets/tri/label/")
    heading = page.locator("#label-heading")
    expect(heading).to_contain_text(first.name)
    expect(page.locator(".suggestion")).to_contain_text("v1 recorded: shipping")
    page.screenshot(path=str(SHOTS / f"labelling-{width}.png"), full_page=True)
    assert overflow(page) <= 0

    page.keyboard.press("2")  # the second option, shipping
    expect(page.locator(".messages")).to_contain_text("expects shipping for desk")
    expect(page.locator(".labelling h3")).to_contain_text("urgency")
    page.keyboard.press("3")  # the third level, 2
    expect(page.locator(".labelling h3")).to_contain_text("churn")
    page.keyboard.press("t")
    expect(heading).to_contain_text("second")  # every question of the first is labelled
    first.refresh_from_db()
    assert first.expected == {"desk": "shipping", "urgency": 2, "churn": True}

    offered = page.url  # the address that offers the undo (?last=…)
    assert "last=" in offered
    page.keyboard.press("u")  # undo the last label: churn goes back to unlabelled
    expect(page.locator(".messages")).to_contain_text("Undone")
    expect(page.locator(".labelling h3")).to_contain_text("churn")
    page.goto(offered)  # that address again (a reload, the back button): no second undo
    expect(page.locator(".labelling h3")).to_contain_text("churn")
    expect(page.get_by_role("button", name="Undo the last label")).to_have_count(0)
    first.refresh_from_db()
    assert first.expected == {"desk": "shipping", "urgency": 2}
    assert first.revisions.count() == 5  # every save and the undo kept in the history

    page.keyboard.press("f")
    expect(heading).to_contain_text("second")
    page.keyboard.press("s")  # skip the second: nothing left but what was skipped
    expect(page.locator(".labelling")).to_contain_text("Start again from the top")
    assert SampleState.objects.get(name="second").expected == {}
    page.screenshot(path=str(SHOTS / f"labelling-done-{width}.png"), full_page=True)
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
