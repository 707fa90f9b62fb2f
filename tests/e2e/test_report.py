"""In a real browser: the run report's results table (failures first, filtered, linked to the
compare cell), the review page's content and evidence, and — on every page this report
touches, at 1280 and at 390 px — no horizontal overflow and no SVG text outside its chart."""

from pathlib import Path

import pytest
from django.conf import settings as django_settings
from playwright.sync_api import expect

from questions import roles, services
from questions.core import charts
from questions.dev import standin
from tests import factories
from tests.e2e.conftest import CLIPPED_SVG_TEXT, WIDTHS

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
PASSWORD = "pw-for-browser-tests"

DOC = {
    "refund_action": {
        "type": "choice",
        "instructions": "What should we do about the refund request?",
        "criteria": {
            "full_refund": "Give all the money back: the product failed or never arrived.",
            "partial_refund": "Give part of it back: the product works but not as promised.",
            "store_credit": "Offer credit instead of money, when the policy allows it.",
            "deny": "Refuse: outside the refund window, or no reason given.",
        },
    },
    "urgency": {
        "type": "score",
        "instructions": "How urgent is the reply?",
        "criteria": [
            "Can wait: routine request, nothing at stake for anyone",
            "Normal: answer within 2 business days, as usual",
            "Soon: the customer is waiting on money they need",
            "Urgent: chargeback threatened, or a legal deadline close",
            "Now: the customer is in danger or the press is involved",
        ],
    },
    "churn_threat": {
        "type": "noul",
        "instructions": "The customer is threatening to cancel or leave for a competitor.",
    },
}


#: labels and values on one bar overlap nowhere
OVERLAPPING_TEXT = """() => {
  const out = [];
  for (const row of document.querySelectorAll('svg.chart g.row')) {
    const [label, value] = row.querySelectorAll('text');
    const a = label.getBoundingClientRect(), b = value.getBoundingClientRect();
    if (a.right > b.left) out.push(label.textContent);
  }
  return out;
}"""


@pytest.fixture
def world(settings):
    server = standin.serve_in_thread()
    settings.TYPESAFE_API_KEY = standin.KEY
    settings.TYPESAFE_BASE_URL = f"http://127.0.0.1:{server.server_address[1]}"
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}
    writer = factories.user("author", groups=(roles.AUTHORS,), password=PASSWORD)
    checker = factories.user("checker", groups=(roles.REVIEWERS,), password=PASSWORD)
    qs = factories.question_set("refund-triage", owner=writer, doc=DOC)
    actions = list(DOC["refund_action"]["criteria"])
    for i in range(12):
        services.sample_state_create(
            question_set=qs,
            name=f"ticket {i:02d}",
            state={"message": f"ticket {i}", "amount": 10 * i},
            author=writer,
            expected={
                "refund_action": actions[i % 4],
                "urgency": i % 5,
                "churn_threat": i % 3 == 0,
            },
        )
    v1 = services.open_draft(qs)
    first = services.batch_create(version=v1, backend="typesafe", user=writer, enqueue=False)
    services.batch_execute(first.pk)
    services.version_submit(version=v1, author=writer)
    services.version_approve(
        confirm_weak_evidence=True, version=v1, reviewer=checker, label="production"
    )
    v2 = services.version_draft_from(version=v1, author=writer)
    document = dict(v2.document)
    document["refund_action"] = {
        **document["refund_action"],
        "criteria": {**document["refund_action"]["criteria"], "deny": "Refuse, kindly."},
    }
    services.version_save(version=v2, document=document, base_revision=v2.revision, author=writer)
    second = services.batch_create(version=v2, backend="typesafe", user=writer, enqueue=False)
    services.batch_execute(second.pk)
    services.version_submit(version=v2, author=writer)
    yield {"set": qs, "first": first, "second": second, "v2": v2}
    server.shutdown()
    server.server_close()


def _sign_in(page, url, username):
    page.goto(f"{url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state()


def test_the_run_report_lists_results_failures_first_and_links_each_to_compare(
    page, live_server, world
):
    second = world["second"]
    _sign_in(page, live_server.url, "author")
    page.goto(f"{live_server.url}/runs/{second.pk}/")
    results = page.locator("table.results tbody tr")
    expect(results.first).to_be_visible()
    checks = [c.strip() for c in page.locator("table.results td.check").all_inner_texts()]
    assert "✗" in checks and "✓" in checks
    assert checks.index("✓") > checks.index("✗")  # failures first
    # the filter keeps the failures, one question's
    page.get_by_label("Show").select_option("failing")
    page.get_by_label("Question").select_option("refund_action")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_load_state()
    rows = page.locator("table.results tbody tr")
    assert rows.count() >= 1
    assert set(page.locator("table.results td.check").all_inner_texts()) == {"✗"}
    assert set(page.locator("table.results td:nth-child(2)").all_inner_texts()) == {"refund_action"}
    state = rows.first.locator("td").first.inner_text().split(" r")[0]
    rows.first.get_by_role("link", name="compare").click()
    page.wait_for_load_state()
    assert "/sets/refund-triage/compare/" in page.url and "#row-" in page.url
    row = page.locator(page.url.split("#")[1].join(["[id='", "']"]))
    expect(row).to_be_visible()
    expect(row).to_contain_text(state)
    # the run-vs-run table: before → after, against the previous run by default
    page.goto(f"{live_server.url}/runs/{second.pk}/")
    page.get_by_role("button", name="Compare").click()
    expect(page.get_by_text("Paired, overall (McNemar's exact test)")).to_be_visible()


def test_the_review_page_shows_the_content_and_the_evidence(page, live_server, world, monkeypatch):
    from questions.selectors import review

    monkeypatch.setattr(review, "INLINE_ENTRIES", 0)  # as in a large version
    _sign_in(page, live_server.url, "checker")
    page.goto(f"{live_server.url}/sets/refund-triage/v{world['v2'].number}/review/")
    card = page.locator("#q-urgency")
    expect(card).to_contain_text(DOC["urgency"]["instructions"])
    expect(card).not_to_contain_text(DOC["urgency"]["criteria"][4])  # unchanged: on opening
    card.locator("summary", has_text="levels").click()
    for level in DOC["urgency"]["criteria"]:
        expect(card).to_contain_text(level)
    expect(page.locator("#q-refund_action")).to_contain_text("Refuse, kindly.")
    expect(page.locator("#q-refund_action")).to_contain_text("What changed since v1")
    expect(page.locator("#evidence-heading")).to_be_visible()
    expect(page.locator("section[aria-labelledby=evidence-heading]")).to_contain_text("flipped")


def test_no_page_of_the_report_overflows_and_no_chart_text_is_clipped(browser, live_server, world):
    second, first, v2 = world["second"], world["first"], world["v2"]
    paths = [
        "/",
        "/sets/refund-triage/",
        f"/runs/{second.pk}/",
        f"/runs/{second.pk}/?against={first.pk}",
        f"/runs/{first.pk}/",
        f"/sets/refund-triage/v{v2.number}/review/",
        "/sets/refund-triage/v1/review/",
    ]
    for width, height in WIDTHS:
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        _sign_in(page, live_server.url, "checker")
        for path in paths:
            page.goto(live_server.url + path)
            page.wait_for_load_state()
            overflow = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, (width, path, overflow)
            assert page.evaluate(CLIPPED_SVG_TEXT) == [], (width, path)
        context.close()


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_bar_charts_fill_the_card_at_text_size_and_clip_no_label(browser, width, height):
    """The charts as the preview draws them, with the console's own style sheet, in a card
    of the page's width: the longest labels, the level numbers and the values all inside."""
    css = (Path(django_settings.BASE_DIR) / "static" / "console.css").read_text()
    probabilities = {str(i): p for i, p in enumerate([0.05, 0.1, 0.2, 0.6, 0.05])}
    legend = {str(i): text for i, text in enumerate(DOC["urgency"]["criteria"])}
    score = {"score": 2.9, "probabilities": probabilities, "legend": legend}
    choice = {
        "choice": "partial_refund",
        "confidence": 0.6,
        "probabilities": {
            "full_refund": 0.2,
            "partial_refund": 0.65,
            "store_credit": 0.1,
            "deny": 0.05,
        },
    }
    svgs = [
        charts.score_bar_chart("urgency", score, 5),
        charts.choice_bar_chart("refund_action", choice, list(DOC["refund_action"]["criteria"])),
        charts.noul_bar_chart("churn_threat", {"noul": 0.97}),
    ]
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_content(
        f"<html><head><style>body{{margin:0;padding:16px;font-size:18px}}{css}</style></head>"
        f"<body><main><figure class='answer'>{''.join(svgs)}</figure></main></body></html>"
    )
    assert page.evaluate(CLIPPED_SVG_TEXT) == []
    assert page.evaluate(OVERLAPPING_TEXT) == []
    body_width = page.evaluate("document.querySelector('figure').getBoundingClientRect().width")
    chart_width = page.evaluate("document.querySelector('svg.chart').getBoundingClientRect().width")
    assert chart_width >= body_width - 1  # the card's whole width
    size = page.evaluate("getComputedStyle(document.querySelector('svg.chart text')).fontSize")
    assert float(size.removesuffix("px")) >= 16  # the card's text size (18 px here, 0.95 em)
    labels = page.locator("svg.chart g.row text:not(.value)").all_text_contents()
    assert [label.removeprefix("▶ ")[:2] for label in labels[:5]] == ["0 ", "1 ", "2 ", "3 ", "4 "]
    assert labels[-2:] == ["▶ P(true)", "P(false)"]
    context.close()
