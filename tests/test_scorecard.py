"""The scorecard (`scorecard.scorecard`, its page and `questions scorecard`), the paired
verdicts it shares with the review page, the review page that leads with its verdict, and the
walkthrough's small fixes on the pages they touch."""

from __future__ import annotations

import json
import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from questions import roles, services
from questions.core import stats, thresholds
from questions.models import BatchRun, QuestionSet, Version
from questions.selectors import runs, scorecard, sets
from tests import factories
from tests.helpers import CARD_CALL_COST, CARD_STATES, _card_run, scorecard_world
from tests.providers import run_cli

pytestmark = pytest.mark.django_db


@pytest.fixture
def card():
    return scorecard_world()


def _client(name: str) -> Client:
    from django.contrib.auth import get_user_model

    client = Client()
    client.force_login(get_user_model().objects.get(username=name))
    return client


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


# --- paired verdicts -------------------------------------------------------------------------


def test_paired_verdicts_count_the_states_both_runs_checked(card):
    verdicts = runs.paired_verdicts(card["run_v1"], card["run_v2"])
    assert set(verdicts) == {"overall", "desk", "urgent"}
    desk = verdicts["desk"]
    # v1 right on states 0-3, v2 on 0-10: 7 fixed, none broken
    assert (desk.n, desk.better, desk.worse) == (CARD_STATES, 7, 0)
    assert desk.p_value == stats.mcnemar(7, 0) and desk.verdict == stats.BETTER
    urgent = verdicts["urgent"]
    assert (urgent.better, urgent.worse, urgent.verdict) == (0, 0, stats.NO_DIFFERENCE)
    overall = verdicts["overall"]  # every question–state pair both runs checked
    assert overall.n == 2 * CARD_STATES and overall.unit == stats.PAIR
    assert (overall.passed_before, overall.passed_after) == (4 + 10, 11 + 10)


# --- the scorecard ---------------------------------------------------------------------------


def test_scorecard_json_has_the_shape_the_issue_names(card):
    code, out, err = run_cli("scorecard", "--set", "card", "--json")
    assert code == 0, err
    found = json.loads(out)
    versions = found["versions"]
    assert [v["version"] for v in versions] == [3, 2, 1]  # newest first
    assert [v["status"] for v in versions] == [
        Version.Status.DRAFT,
        Version.Status.IN_REVIEW,
        Version.Status.KEPT,
    ]
    v2, v1 = versions[1], versions[2]
    desk = v2["questions"]["desk"]
    assert desk["pass_rate"] == round(11 / 12, 4) and desk["n"] == CARD_STATES
    assert desk["pass_rate_interval"] == list(stats.wilson(11, 12))
    assert desk["no_signal"] is True and desk["shuffle_run"] == card["run_shuffle"].pk
    assert desk["order_flip_rate"] == round(3 / 12, 4) and desk["order_compared"] == 12
    assert v2["questions"]["urgent"]["pass_rate_interval"] == list(stats.wilson(10, 12))
    assert v2["run"]["run"] == card["run_v2"].pk and v2["run"]["try"] is False
    # v1's latest run is the try: said so, with what it asked live
    assert v1["run"] == {**v1["run"], "run": card["run_try"].pk, "try": True}
    assert v1["run"]["live_questions"] == ["desk"] and v1["kept"] is True
    assert v1["questions"]["desk"]["pass_rate"] == round(4 / 12, 4)
    assert versions[0]["run"] is None and versions[0]["questions"] == {}
    assert v2["cost_per_1000_calls"] == pytest.approx(CARD_CALL_COST * 1000)
    calls = 12 * 3 + 12 * 2 * 2  # three plain runs, two controls of two variants
    assert found["spent"]["calls"] == calls
    assert found["spent"]["cost"] == pytest.approx(calls * CARD_CALL_COST)
    assert found["questions"] == ["desk", "urgent"]


def test_scorecard_text_names_the_run_the_interval_and_the_flags(card):
    code, out, err = run_cli("scorecard", "--set", "card")
    assert code == 0, err
    assert f"v2 (in review): run {card['run_v2'].pk}" in out
    assert "desk: 92% (65–99%, n = 12); shuffle control" in out and "no signal" in out
    assert "order flips 25% of 12 calls" in out
    assert f"v1 (kept): run {card['run_try'].pk} (a try: the rest replayed)" in out
    assert "v3 (draft): no finished run on the default backend" in out


def test_scorecard_of_an_unknown_set_is_a_404():
    code, out, _ = run_cli("scorecard", "--set", "nope", "--json")
    assert code == 1 and json.loads(out) == {"status": 404, "detail": "No set nope."}


def test_the_scorecard_reads_a_fixed_number_of_queries(card):
    question_set = QuestionSet.objects.get(slug="card")
    client = _client("writer")
    client.get("/sets/card/scorecard/")  # the session is read once, as on any later page
    cache.clear()  # the labels' lines are kept while nothing changes: each read works them out
    with CaptureQueriesContext(connection) as few:
        scorecard.scorecard(question_set)
    cache.clear()
    with CaptureQueriesContext(connection) as few_page:
        assert client.get("/sets/card/scorecard/").status_code == 200
    for _ in range(4):  # more versions with runs and controls: not one query more
        draft = question_set.versions.get(status=Version.Status.DRAFT)
        services.version_keep(version=draft, author=draft.author)
        draft.refresh_from_db()
        revisions = [s.current_revision() for s in question_set.sample_states.all()]
        _card_run(
            question_set,
            draft,
            revisions,
            answers_of=lambda i, v: (
                card["run_v2"].items.filter(variant=0).order_by("id")[i].answers
            ),
        )
        _card_run(
            question_set,
            draft,
            revisions,
            kind="shuffle",
            count=1,
            variants=2,
            answers_of=lambda i, v: (
                card["run_v2"].items.filter(variant=0).order_by("id")[i].answers
            ),
        )
    cache.clear()
    with CaptureQueriesContext(connection) as many:
        found = scorecard.scorecard(question_set)
    assert len(found["versions"]) == 7
    assert [v["run"] is not None for v in found["versions"]] == [False] + [True] * 6
    # 8 for the versions, their runs, controls and costs; 1 for the states marked ambiguous;
    # 3 for the fingerprint of the labels' lines and 4 to work them out
    assert len(many.captured_queries) == len(few.captured_queries) == 16
    cache.clear()
    with CaptureQueriesContext(connection) as many_page:
        assert client.get("/sets/card/scorecard/").status_code == 200
    assert len(many_page.captured_queries) == len(few_page.captured_queries)


def test_the_scorecard_page_is_linked_from_the_set_page_and_shows_the_cells(card):
    client = _client("writer")
    page = client.get("/sets/card/").content.decode()
    assert 'href="/sets/card/scorecard/"' in page
    response = client.get("/sets/card/scorecard/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "92% (65–99%, n = 12)" in html and "33% (14–61%, n = 12)" in html
    assert 'class="table-frame scorecard-frame"' in html  # scrolls inside its own box
    # a "no signal" flag links to the question's card and to the states behind it
    assert 'href="/sets/card/v2/#card-desk"' in html
    assert (
        f'href="/sets/card/compare/?col=run:{card["run_shuffle"].pk}&amp;filter=failures"' in html
    )
    assert "try: desk asked live, the rest replayed" in html
    assert "order flips 25% of 12 calls" in html


# --- the review page -------------------------------------------------------------------------


def test_the_review_page_leads_with_the_verdict_and_the_buttons(card):
    html = _client("checker").get("/sets/card/v2/review/").content.decode()
    verdict = html.index('id="verdict-heading"')
    approve = html.index('value="approve"')
    changes = html.index('value="request_changes"')
    questions = html.index('id="diff-heading"')
    evidence = html.index('id="evidence-heading"')
    assert verdict < approve < questions and changes < questions < evidence
    # nothing approved: against the version it came from (v1, kept: the latest kept one too)
    head = html[verdict:questions]
    assert "Against v1 (the version it came from, the latest kept one)" in head
    words = runs.paired_verdicts(card["run_try"], card["run_v2"])["desk"].words()
    assert words.startswith("better on 12 states (7 fixed, 0 broken") and words in head
    assert "no difference detected on 12 states" in head  # urgent
    assert "the words carry no signal here" in head and 'href="/sets/card/v2/#card-desk"' in head
    assert "flips in 3 of 12 reordered calls" in head
    assert "92% (65–99%, n = 12)" not in head  # overall, not per question, in the rates line
    assert "overall <span" in head and "88% (69–96%, n = 24)" in head  # v2's 21 of 24 checks
    assert "58% (39–76%, n = 24)" in head  # v1's try: 14 of 24


def test_the_review_compares_against_production_once_there_is_one(card):
    services.version_approve(
        version=card["v2"],
        reviewer=factories.reviewer("second"),
        label="production",
        confirm_weak_evidence=True,
    )
    html = _client("checker").get("/sets/card/v3/review/").content.decode()
    assert "Against v2 (production)" in html
    assert "This version has no finished run yet" in html


def test_after_approval_the_page_names_the_approver(card):
    client = _client("checker")
    response = client.post(
        "/sets/card/v2/review/",
        {"action": "approve", "label": "production", "confirm_weak": "yes", "note": "ok"},
    )
    assert response.status_code == 302
    html = client.get("/sets/card/v2/review/").content.decode()
    byline = html[html.index('class="review-byline"') :]
    byline = byline[: byline.index("</p>")]
    assert 'by <strong class="approver">checker</strong>' in byline
    assert "written by writer" in byline


def test_the_label_field_holds_production_as_a_value_not_a_placeholder(card):
    html = _client("checker").get("/sets/card/v2/review/").content.decode()
    field = html[html.index('<input name="label"') :]
    field = field[: field.index(">")]
    assert 'value="production"' in field and "placeholder" not in field


# --- walkthrough fixes on the run pages and the set list ------------------------------------


def test_a_control_run_says_its_counts_are_calls(card):
    html = _client("writer").get(f"/runs/{card['run_shuffle'].pk}/").content.decode()
    text = re.sub(r"<[^>]+>", "", html)
    assert "24 / 24 calls (12 states × 2 calls each): 24 answered" in text
    assert "/ 24 states" not in text
    assert "less than 15 points above it" in text
    assert "Results (12 states; failures first)" in text  # its states, not its calls


def test_a_try_run_is_marked_in_the_runs_table_and_on_its_page(card):
    client = _client("writer")
    words = "try: desk asked live, the rest replayed"
    assert words in client.get("/sets/card/").content.decode()
    assert (
        "Try: desk asked live, the rest replayed"
        in client.get(f"/runs/{card['run_try'].pk}/").content.decode()
    )
    full = client.get(f"/runs/{card['run_v2'].pk}/").content.decode()
    assert "asked live" not in full


def test_the_set_list_keeps_the_latest_run_that_checked_states(card):
    failed = BatchRun.objects.create(
        question_set=card["set"],
        version=card["v2"],
        backend="typesafe",
        model="m",
        status="failed",
        checked=0,
        passed=0,
        failed_states=12,
    )
    found = sets.question_sets(user=roles.OPERATOR).get(slug="card")
    assert found.last_run_id != failed.pk and found.last_checked == 24
    html = _client("writer").get("/").content.decode()
    row = html[html.index('href="/sets/card/"') :]
    assert "nothing checked" not in row[: row.index("</tr>")]


# --- the score chart -------------------------------------------------------------------------


def test_a_score_chart_marks_the_level_it_reads_as_and_the_most_likely_apart():
    from questions.core import charts

    answer = {  # the walkthrough's "chargeback threat": 0.75 reads as level 1, a 4% bar
        "type": "score",
        "score": 0.75,
        "probabilities": {"0": 0.64, "1": 0.04, "2": 0.32},
        "legend": {"0": "low", "1": "mid", "2": "high"},
        "confidence": 0.64,
    }
    svg = str(charts.score_bar_chart("urgency", answer, 3))
    assert "▶ 1 mid<" in svg and "◆ 0 low<" in svg
    assert ">▶ 0.04<" in svg and ">◆ 0.64<" in svg
    assert "▶ level 1: the level score 0.75 reads as (what is checked)" in svg
    assert "◆ level 0: the most likely (0.64)" in svg
    answer["probabilities"] = {"0": 0.1, "1": 0.8, "2": 0.1}
    answer["score"] = 1.0
    plain = str(charts.score_bar_chart("urgency", answer, 3))
    assert "◆" not in plain and plain.count("▶") == 1


# --- preview error text ----------------------------------------------------------------------


def test_a_refused_preview_shortens_the_path_and_renders_code_spans():
    from django.template.loader import render_to_string

    from questions.engine import backends

    writer = factories.author("writer")
    long_name = "refund_" + "x" * 193
    document = {
        "desk": {
            "type": "choice",
            "instructions": "Which desk?",
            "criteria": {long_name: "money", "other": "anything else"},
        }
    }
    outcome = services.decision_ask(
        backend="recorded", document=document, state={"n": 1}, model=None, user=writer
    )
    detail = outcome.error.detail
    assert outcome.error.status == 422 and long_name not in detail
    assert f'questions.desk.criteria["{long_name[:32]}…"]: ' in detail
    html = render_to_string(
        "questions/_preview_result.html", {"error": backends.DecisionError(422, detail)}
    )
    assert "<code>desk</code>" in html and "`" not in html


def test_a_no_signal_verdict_on_the_run_page_links_to_the_card_and_the_states(card):
    run = card["run_shuffle"]
    html = _client("writer").get(f"/runs/{run.pk}/").content.decode()
    verdict = html[html.index('class="message error control-verdict"') :]
    verdict = verdict[: verdict.index("</p>")]
    assert 'href="/sets/card/v2/#card-desk"' in verdict
    assert f'href="/sets/card/compare/?col=run:{run.pk}&amp;filter=failures"' in verdict


def test_the_advice_curves_write_their_text_at_11_px_or_more_on_a_phone():
    import re as regex

    from questions.core import charts

    points = [thresholds.CurvePoint(t / 10, 0.5, 0.5, 1 - t / 10, 5) for t in range(11)]
    svg = str(charts.threshold_chart("desk", points, points[5]))
    sizes = [float(s) for s in regex.findall(r'font-size="([0-9.]+)"', svg)]
    width = float(regex.search(r'viewBox="0 0 ([0-9.]+)', svg).group(1))
    phone_column = 330  # px the chart is drawn in at 390 px wide
    assert sizes and min(sizes) * phone_column / width >= 11
    assert ">threshold</text>" in svg  # the axis says what it is


def test_the_states_behind_a_no_signal_verdict_open_in_compare(card):
    run = card["run_shuffle"]
    response = _client("writer").get(f"/sets/card/compare/?col=run:{run.pk}&filter=failures")
    html = response.content.decode()
    assert response.status_code == 200
    assert "state-11" in html  # v2's real desk answer misses on state 11


def test_the_review_evidence_says_its_change_in_words_not_bare_points(card):
    services.version_approve(
        version=card["v2"],
        reviewer=factories.reviewer("second"),
        label="production",
        confirm_weak_evidence=True,
    )
    v3 = Version.objects.get(question_set__slug="card", number=3)
    services.version_submit(version=v3, author=v3.author)
    revisions = [s.current_revision() for s in card["set"].sample_states.all()]
    answers = list(
        card["run_v1"].items.filter(variant=0).order_by("id").values_list("answers", flat=True)
    )
    _card_run(card["set"], v3, revisions, answers_of=lambda i, v: answers[i])
    html = _client("checker").get("/sets/card/v3/review/").content.decode()
    evidence = html[html.index('id="evidence-heading"') :]
    line = evidence[evidence.index('class="pass-rate"') :]
    line = _text(line[: line.index("</p>")])
    # the change in points comes with its paired interval, beside the verdict's words
    assert "paired: −29.2 points (−47.7 to −8.3) (88% → 58%) — " in line
    assert "worse on 24 question–state pairs (0 fixed, 7 broken" in line


def test_an_order_control_says_what_its_flip_rate_counts(card):
    html = _client("writer").get(f"/runs/{card['run_orders'].pk}/").content.decode()
    assert "25%" in html and "of 12 reordered calls" in html
