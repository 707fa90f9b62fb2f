"""In a real browser: a shuffle control started from the controls page, its report section on
the run page (real pass rate beside the shuffled floor, a question flagged when its words carry
no signal), at a laptop's width and at a phone's."""

import pytest
from playwright.sync_api import expect

from questions import roles, services
from questions.core import controls
from questions.models import BatchRun
from tests import factories
from tests.e2e.conftest import SHOTS, overflow
from tests.providers import DOC, DUMMY_TASKS, TOPICS, Provider, reads_the_words

#: how far right an element or anything in it reaches, but for what scrolls in its own box
WIDEST = """e => Math.max(...[e, ...e.querySelectorAll('*')].filter(c => {
  const box = c.parentElement && c.parentElement.closest('.table-scroll');
  return !box || !['auto', 'scroll'].includes(getComputedStyle(box).overflowX);
}).map(c => c.getBoundingClientRect().right))"""

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

WORDLESS = {
    "team": {
        "type": "choice",
        "instructions": "Which team?",
        "criteria": {"alpha": "the first team", "beta": "the second team"},
    }
}


def answer(body):
    """The desk follows its words; the team is always alpha, whatever its words say."""
    asked = {k: q for k, q in body["questions"].items() if k != "team"}
    out = reads_the_words({**body, "questions": asked})
    out["answers"]["team"] = {
        "type": "choice",
        "choice": "alpha",
        "probabilities": {"alpha": 0.9, "beta": 0.1},
        "confidence": 0.85,
    }
    return out


@pytest.fixture
def provider(provider_factory):
    return provider_factory(Provider(answer), key="k-e2e", TASKS=DUMMY_TASKS)


def test_a_shuffle_control_report_at_a_laptops_and_a_phones_width(page, sign_in, provider):
    user = factories.user("author", groups=(roles.AUTHORS,), password="pw-for-browser-tests")
    qs = factories.question_set("ctl", owner=user, doc={**DOC, **WORDLESS})
    for i, (option, topic) in enumerate([*TOPICS.items(), ("billing", "money")]):
        services.sample_state_create(
            question_set=qs,
            name=f"state-{i}",
            state={"topic": topic},
            author=user,
            expected={"desk": option, "team": "alpha" if i % 2 else "beta"},
        )
    url = sign_in("author")
    page.goto(f"{url}/sets/ctl/")
    page.get_by_role("link", name="Controls and drift").click()
    form = page.locator("form.control-form").first
    form.locator("select[name=kind]").select_option("shuffle")
    form.get_by_label("Shuffles, orders or calls").fill("2")
    form.get_by_label("Seed").fill("4")
    form.locator("select[name=backend]").select_option("typesafe")
    page.get_by_role("button", name="Start the control").click()
    expect(page.locator("#run-progress")).to_be_visible()
    run = BatchRun.objects.get(kind="shuffle")
    assert (run.control_count, run.control_seed, run.backend, run.items.count()) == (
        2,
        4,
        "typesafe",
        12,
    )
    services.batch_execute(run.pk)  # the worker, here in the test's thread
    page.reload()
    section = page.locator(".run-control")
    expect(section.get_by_role("heading", name="Shuffle control")).to_be_visible()
    desk = section.locator("tr", has=page.locator("code", has_text="desk"))
    expect(desk).to_contain_text("100%")
    expect(desk).to_contain_text("0%")
    expect(desk).to_contain_text("clearly above the floor")
    team = section.locator("tr.no-signal")
    expect(team).to_contain_text("team")
    expect(team).to_contain_text(controls.NO_SIGNAL)
    expect(section.locator(".control-verdict")).to_contain_text("team")
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in ((1280, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        # the report section: nothing in it reaches past the viewport (a table wider than a
        # phone scrolls inside its own box)
        assert section.evaluate(WIDEST) <= width, f"the report is wider than {width} px"
        page.screenshot(path=SHOTS / f"shuffle-control-{width}.png", full_page=True)
    page.goto(f"{url}/sets/ctl/controls/")
    expect(page.get_by_role("link", name=f"run {run.pk}")).to_be_visible()
    for width, height in ((1280, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        assert overflow(page) <= 0, f"the controls page is wider than {width} px"
