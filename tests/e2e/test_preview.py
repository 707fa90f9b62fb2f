"""In a real browser: ask the stand-in from the editor and read the bars; replay it recorded."""

import pytest
from playwright.sync_api import expect

from questions import roles, services
from questions.dev import standin
from tests import factories
from tests.helpers import TYPESAFE_DOCUMENT as DOCUMENT

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def stand_in(settings):
    server = standin.serve_in_thread()
    settings.TYPESAFE_API_KEY = standin.KEY
    settings.TYPESAFE_BASE_URL = f"http://127.0.0.1:{server.server_address[1]}"
    settings.DECISIONS_STANDIN = True
    yield server
    server.shutdown()
    server.server_close()


def test_ask_the_stand_in_and_read_the_bars(page, sign_in, stand_in):
    user = factories.user("author", groups=(roles.AUTHORS,), password="pw-for-browser-tests")
    qs = factories.question_set("support", owner=user, doc=DOCUMENT["questions"])
    services.sample_state_create(
        question_set=qs, name="payouts", state=DOCUMENT["state"], author=user
    )
    url = sign_in("author")
    expect(page.get_by_text("Answers come from the local stand-in, not from Jev.")).to_be_visible()
    page.goto(f"{url}/sets/support/v1/")
    page.wait_for_load_state()
    preview = page.locator("#preview")
    preview.get_by_label("Backend").select_option("typesafe")
    preview.get_by_role("button", name="Ask").click()
    result = page.locator("#preview-result")
    expect(result.locator("figure.answer")).to_have_count(3)
    department = result.locator("figure.answer-choice")
    expect(department.locator("svg .row")).to_have_count(3)
    labels = department.locator("svg .row text:not(.value)").all_text_contents()
    assert [label.removeprefix("▶ ") for label in labels] == ["billing", "technical", "sales"]
    values = [float(v) for v in department.locator("svg text.value").all_text_contents()]
    assert abs(sum(values) - 1) <= 0.015
    expect(result).to_contain_text("local-stand-in (not Jev)")
    expect(result).to_contain_text("provider_ms")

    # the same again, replayed: no call, same numbers
    preview.get_by_label("Backend").select_option("recorded")
    preview.get_by_role("button", name="Ask").click()
    expect(result).to_contain_text("no call made")
    replayed = [
        float(v) for v in result.locator("figure.answer-choice svg text.value").all_text_contents()
    ]
    assert replayed == values
