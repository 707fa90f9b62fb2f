"""In a real browser: from the set page to a label's export page, where the code that calls
the approved questions sits in tabs — a click or the arrow keys change the language, the copy
button copies the shown code — at a laptop's width and at a phone's, nothing wider than the
screen. With the local stand-in on (as `make run` starts it), the page names its address and
key, and every tab's code, as the page shows it, runs with them and prints the stand-in's
answers."""

import shutil

import pytest
from playwright.sync_api import expect

from questions import exports, roles, services
from questions.core import snippets, spec
from questions.dev import standin
from questions.models import Version
from tests import factories
from tests.e2e.conftest import SHOTS, WIDTHS, overflow
from tests.providers import DOC, StandInRuntime, exported_variables, run_snippet

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_export_page_shows_the_code_in_tabs_with_copy_buttons(page, sign_in):
    writer = factories.user("author", groups=(roles.AUTHORS,), password="pw-for-browser-tests")
    checker = factories.reviewer("checker")
    qs = factories.question_set("support", owner=writer, doc=DOC)
    version = services.version_submit(version=factories.draft(qs), author=writer)
    services.version_approve(
        version=version, reviewer=checker, label="production", confirm_weak_evidence=True
    )
    export = exports.export_document(Version.objects.get(pk=version.pk))
    url = sign_in("author")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"{url}/sets/support/")
    page.get_by_role("link", name="export & code").click()
    expect(page.get_by_role("heading", name="production → version 1")).to_be_visible()
    curl, python = page.locator("#panel-curl"), page.locator("#panel-python")
    expect(curl).to_be_visible()
    expect(python).to_be_hidden()
    page.get_by_text("Python (httpx)", exact=True).click()
    expect(python).to_be_visible()
    expect(curl).to_be_hidden()
    page.keyboard.press("ArrowRight")  # the focused tab's group moves to the next language
    expect(page.locator("#panel-typescript")).to_be_visible()
    code = page.locator("#snippet-typescript").inner_text()
    assert code.strip() == snippets.snippet("typescript", export, "production").strip()
    page.locator("#panel-typescript").get_by_role("button", name="Copy").click()
    expect(page.locator("#panel-typescript").get_by_role("button")).to_have_text("Copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == code.strip()
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in ((1280, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        assert overflow(page) <= 0, f"wider than {width} px"
        page.screenshot(path=SHOTS / f"label-export-{width}.png", full_page=True)


@pytest.fixture
def local(settings):
    runtime = StandInRuntime()
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = standin.KEY, runtime.url
    settings.DECISIONS_STANDIN = True
    yield runtime
    runtime.stop()


#: the tabs this machine can run (the TypeScript one needs node)
RUNNABLE = [lang for lang in snippets.LANGUAGES if lang != "typescript" or shutil.which("node")]


def test_with_the_stand_in_on_the_page_names_where_its_code_runs_and_it_runs(
    page, sign_in, local, tmp_path
):
    writer = factories.user("author", groups=(roles.AUTHORS,), password="pw-for-browser-tests")
    qs = factories.question_set("support", owner=writer, doc=DOC)
    version = services.version_submit(version=factories.draft(qs), author=writer)
    services.version_approve(
        version=version,
        reviewer=factories.reviewer("checker"),
        label="production",
        confirm_weak_evidence=True,
    )
    url = sign_in("author")
    page.goto(f"{url}/sets/support/labels/production/export/")
    block = page.locator("#local-run")
    expect(block).to_contain_text(f"at {local.url}")
    expect(block).to_contain_text(f"with the key {standin.KEY}")
    environment = exported_variables(page.locator("#local-environment").inner_text())
    assert environment == local.environment
    parsed = spec.parse(DOC, limits=spec.DEFAULT_LIMITS).questions
    wanted = {qid: standin.answer(q, snippets.PLACEHOLDER_STATE) for qid, q in parsed.items()}
    printed = {}
    for language in RUNNABLE:  # each tab's code as the page shows it, run as it is
        page.locator(f"label[for=tab-{language}]").click()
        code = page.locator(f"#snippet-{language}").inner_text()
        folder = tmp_path / language
        folder.mkdir()
        printed[language], _ = run_snippet(language, code, environment, folder)
    sdk = printed.pop("sdk")
    assert list(printed.values()) == [wanted] * len(printed)
    assert {q: (a["type"], a[a["type"]]) for q, a in sdk.items()} == {
        q: (a["type"], a[a["type"]]) for q, a in wanted.items()
    }
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        assert overflow(page) <= 0, f"wider than {width} px"
        page.screenshot(path=SHOTS / f"label-export-local-{width}.png", full_page=True)
