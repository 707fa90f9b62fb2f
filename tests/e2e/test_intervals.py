"""In a real browser, at 1280 and 390 px: the run page says each pass rate with its interval
and n, its tag slices and the paired verdict against another run; compare says the verdict
and marks flips within the noise floor; the advice designer reads its held-out choice;
nothing overflows."""

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from questions.core import controls, stats
from questions.models import BatchItem, BatchRun
from tests import factories
from tests.e2e.conftest import SHOTS, WIDTHS, overflow, sign_in_user
from tests.helpers import ADVICE_DOC, desk, paired_runs

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world():
    writer = factories.author("interval-author")
    qs = factories.question_set("refund-triage-with-a-long-name", owner=writer, doc=ADVICE_DOC)
    version = qs.versions.get()
    outcomes = [(False, True)] * 9 + [(True, False)] * 2 + [(True, True)] * 4
    tags = [["priority-customers-europe"], ["eu"], []] * 5
    before, after = paired_runs(qs, version, writer, outcomes, tags=tags)
    repeat = BatchRun.objects.create(
        question_set=qs,
        version=version,
        backend="recorded",
        model="m",
        status="done",
        kind=controls.REPEAT,
        control_count=2,
        finished_at=timezone.now(),
    )
    for state in qs.sample_states.all():
        for variant, p in enumerate((0.9, 0.1)):
            BatchItem.objects.create(
                run=repeat,
                sample_state=state.current_revision(),
                status="answered",
                variant=variant,
                answers={"urgent": {"type": "noul", "noul": p}, "desk": desk("billing", {})},
            )
    return {"writer": writer, "set": qs, "before": before, "after": after}


def test_the_run_page_and_compare_say_rates_with_intervals_and_verdicts(page, live_server, world):
    before, after = world["before"], world["after"]
    sign_in_user(page, live_server.url, world["writer"])
    SHOTS.mkdir(parents=True, exist_ok=True)
    verdict = "better on 15 states (9 fixed, 2 broken, p = 0.065)"
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{live_server.url}/runs/{after.pk}/?against={before.pk}")
        expect(page.locator("p.pass-rate").first).to_contain_text(stats.rate_words(28, 30))
        expect(page.locator("table.tag-slices")).to_contain_text("priority-customers-europe")
        expect(page.locator(".run-evidence")).to_contain_text("no difference detected on 15")
        assert overflow(page) <= 0, f"the run page overflows at {width}px"
        page.locator(".run-report").screenshot(path=str(SHOTS / f"intervals-report-{width}.png"))
        page.locator(".run-evidence").screenshot(path=str(SHOTS / f"intervals-vs-{width}.png"))
        slug = world["set"].slug
        page.goto(f"{live_server.url}/sets/{slug}/compare/?col=run:{before.pk}&col=run:{after.pk}")
        evidence = page.locator(".compare-evidence")
        expect(evidence).to_contain_text(stats.rate_words(21, 30))
        expect(evidence).to_contain_text("no difference detected on 15 states")
        assert verdict not in evidence.inner_text()
        expect(page.locator(".noise-mark").first).to_be_visible()
        assert page.evaluate(
            "() => [...document.querySelectorAll('.compare-evidence')]"
            ".every(e => e.scrollWidth <= e.clientWidth + 1)"
        ), f"the compare evidence overflows at {width}px"
        evidence.screenshot(path=str(SHOTS / f"intervals-compare-{width}.png"))
        number = after.version.number
        page.goto(f"{live_server.url}/sets/{slug}/v{number}/advice/?run={after.pk}")
        held = page.locator(".advice-held-out").first
        expect(held).to_contain_text("held out")
        assert overflow(page) <= 0, f"the advice page overflows at {width}px"
        held.screenshot(path=str(SHOTS / f"intervals-advice-{width}.png"))
