"""Many eyes on a label, end to end in Chromium: on a set needing two labels, two labellers label
40 states blind by keyboard, each in their own browser; the disputes are listed with both labels
and settled by a third user, a reviewer, on the disputes page; the agreement page shows κ with its
interval and n, and the model against the settled answers; and a run's pass rate counts the
settled states only, before and after the settlement."""

import re

import pytest
from playwright.sync_api import expect

from questions import services
from questions.models import BatchItem, BatchRun, SampleState
from questions.services.summaries import store_summary
from tests import factories
from tests.e2e.conftest import PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

DESKS = ["billing", "shipping", "other"]
DOC = {
    "desk": {
        "type": "choice",
        "instructions": "Which desk?",
        "criteria": {"billing": "money", "shipping": "parcels", "other": "anything else"},
    }
}
STATES = 40


def ann_says(i: int) -> str:
    return DESKS[i % 3]


def bob_says(i: int) -> str:
    """Bob agrees with ann but on every fifth state, where he picks the next desk."""
    return DESKS[(i + 1) % 3] if i % 5 == 4 else DESKS[i % 3]


def _world():
    ann, bob, rev = factories.author("ann"), factories.author("bob"), factories.reviewer("rev")
    qs = factories.question_set("eyes", owner=ann, doc=DOC)
    services.labelling_configure(question_set=qs, user=rev, needed=2)
    for i in range(STATES):
        services.sample_state_create(
            question_set=qs, name=f"ticket-{i:02d}", state={"n": i}, author=ann
        )
    for user in (ann, bob, rev):
        user.set_password(PASSWORD)
        user.save()
    return qs, ann, bob, rev


def _run(qs) -> BatchRun:
    """A finished run over the states as they are now (their current revisions), the model's
    desk wrong on every fourth state; its pass rate as a run's end stores it."""
    run = BatchRun.objects.create(
        question_set=qs, version=qs.versions.get(), backend="recorded", model="m", status="done"
    )
    for sample in qs.sample_states.order_by("name"):
        i = int(sample.name.rsplit("-", 1)[1])
        chosen = ann_says(i) if i % 4 else DESKS[(i + 2) % 3]
        BatchItem.objects.create(
            run=run,
            sample_state=sample.current_revision(),
            status="answered",
            answers={
                "desk": {
                    "type": "choice",
                    "choice": chosen,
                    "probabilities": {d: 0.9 if d == chosen else 0.05 for d in DESKS},
                    "confidence": 0.9,
                }
            },
        )
    store_summary(run)
    return BatchRun.objects.get(pk=run.pk)


def _signed_in(browser, live_server, user):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(user.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state()
    return context, page


def _label_all(page, live_server, says) -> None:
    """Label every state the queue offers, by keyboard: the key shown beside the answer this
    labeller gives the state whose name the page shows."""
    page.goto(f"{live_server.url}/sets/eyes/label/")
    heading = page.locator("#label-heading")
    for done in range(STATES):
        expect(page.locator(".label-progress")).to_contain_text(f"you {done} / {STATES}")
        expect(page.locator(".suggestion")).to_contain_text("Blind")  # no model's answer shown
        name = heading.inner_text().split()[-1]
        i = int(name.rsplit("-", 1)[1])
        page.keyboard.press(str(DESKS.index(says(i)) + 1))
        expect(page.locator("#label-echo")).to_contain_text(f"Saved for {name}: desk: {says(i)}")
    expect(page.locator(".label-progress")).to_contain_text(f"you {STATES} / {STATES}")
    expect(page.locator(".label-done")).to_contain_text("Nothing is left for you to label")


def test_two_labellers_blind_a_third_settles_and_the_rates_count_settled_states(
    browser, live_server
):
    qs, ann, bob, rev = _world()
    disputed = [i for i in range(STATES) if ann_says(i) != bob_says(i)]
    for user, says in ((ann, ann_says), (bob, bob_says)):
        context, page = _signed_in(browser, live_server, user)
        _label_all(page, live_server, says)
        context.close()
    assert len(disputed) == 8
    before = _run(qs)
    assert before.checked == STATES - len(disputed)  # the disputed have no expected answer

    context, page = _signed_in(browser, live_server, rev)
    page.goto(f"{live_server.url}/sets/eyes/agreement/")
    card = page.locator("main")
    expect(card).to_contain_text("κ")
    assert re.search(r"κ 0\.\d\d \[0\.\d\d, [01]\.\d\d\]", card.inner_text())
    expect(card).to_contain_text("32 settled")
    page.goto(f"{live_server.url}/sets/eyes/disputes/")
    cards = page.locator(".dispute")
    expect(cards).to_have_count(len(disputed))
    first = cards.first
    expect(first).to_contain_text("ann")
    expect(first).to_contain_text("bob")
    for i in disputed:  # the reviewer sides with ann each time
        row = page.locator(".dispute", has_text=f"ticket-{i:02d}")
        row.get_by_role("button", name=re.compile(rf"^{ann_says(i)}")).click()
        expect(row).to_contain_text("rev")
    for i in disputed:
        assert SampleState.objects.get(name=f"ticket-{i:02d}").expected == {"desk": ann_says(i)}
    assert _run(qs).checked == STATES
    page.goto(f"{live_server.url}/sets/eyes/agreement/")
    expect(page.locator("main")).to_contain_text("40 settled")
    expect(page.locator("main")).to_contain_text("model")
    context.close()
