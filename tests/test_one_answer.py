"""One answer to "is v2 better than v1?" and a review page that says what changed: compare
opens with the older version (or production) as its baseline and swaps it in one click, the URL
naming the baseline; one overall figure (`runs.overall`) on compare, the scorecard and the
review page for the same runs; the difference between two runs with its paired interval beside
McNemar's p-value; badges only on the questions that changed; an attribution's run page counts
the one state it asked and draws no confusion matrix for one answer."""

from __future__ import annotations

import html as html_lib
import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.http import QueryDict
from django.test import Client

from questions import services
from questions.core import attribution, stats
from questions.models import BatchRun
from questions.selectors import runs
from questions.services import attribution as attribution_services
from questions.views.compare import selection_of
from tests import factories
from tests.helpers import _card_run, scorecard_world
from tests.providers import ROUTING, ROUTING_STATE, Provider, overlap_answers

#: an overall figure as every page writes it (`_paired.html#overall-figure`)
FIGURE = re.compile(r'<span class="overall-figure" data-run="(\d+)"[^>]*>([^<]*)</span>')
#: the compare page's baseline column head and its swap link
BASELINE_HEAD = re.compile(r'<th scope="col" class="col-head" data-baseline>(.*?)</th>', re.S)
SWAP = re.compile(
    r'<a href="\?([^"#]*)#evidence-heading" role="button" class="[^"]*swap-baseline">'
)


@pytest.fixture
def card(db):
    return scorecard_world()


def _client(name: str) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=name))
    return client


def _text(html: str) -> str:
    return html_lib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html)))


def _figures(html: str) -> dict[int, set[str]]:
    found: dict[int, set[str]] = {}
    for run, words in FIGURE.findall(html):
        found.setdefault(int(run), set()).add(words)
    return found


def _v1_again(card) -> BatchRun:
    """A run of v1 newer than v2's (the walkthrough's order), with v1's answers."""
    revisions = [s.current_revision() for s in card["set"].sample_states.order_by("name")]
    answers = list(
        card["run_v1"].items.filter(variant=0).order_by("id").values_list("answers", flat=True)
    )
    return _card_run(card["set"], card["v1"], revisions, answers_of=lambda i, v: answers[i])


# --- one overall figure ---------------------------------------------------------------------


def test_compare_the_scorecard_and_the_review_show_one_overall_figure_for_the_same_runs(card):
    client = _client("checker")
    pages = {
        "compare": client.get("/sets/card/compare/"),
        "scorecard": client.get("/sets/card/scorecard/"),
        "review": client.get("/sets/card/v2/review/"),
    }
    assert {name: r.status_code for name, r in pages.items()} == dict.fromkeys(pages, 200)
    found = {name: _figures(r.content.decode()) for name, r in pages.items()}
    for run in (card["run_try"], card["run_v2"]):  # v1's latest run and v2's, on every page
        words = stats.rate_words(run.passed, run.checked)  # every labelled pair: 14 and 21 of 24
        shown = {name: figures.get(run.pk) for name, figures in found.items()}
        assert shown == {name: {words} for name in pages}
    # not the states-with-every-question-right figure the scorecard showed (10 of 12 for v2)
    assert stats.rate_words(21, 24) == "88% (69–96%, n = 24)"
    cells = re.findall(r'<td class="overall">(.*?)</td>', pages["scorecard"].content.decode())
    assert stats.rate_words(10, 12) not in "".join(cells)
    assert [_text(cell) for cell in cells] == ["—", "88% (69–96%, n = 24)", "58% (39–76%, n = 24)"]


def test_the_scorecard_json_carries_the_same_overall_figure(card):
    from questions.selectors import scorecard

    rows = {row["version"]: row for row in scorecard.scorecard(card["set"])["versions"]}
    figure = runs.overall(card["run_v2"])
    assert rows[2]["overall"] == {
        "pass_rate": round(21 / 24, stats.PLACES),
        "pass_rate_interval": list(stats.wilson(21, 24)),
        "n": 24,
        "passed": 21,
        "words": figure.words,
    }
    assert rows[3]["overall"] is None  # the draft has no run


# --- the difference with its paired interval ------------------------------------------------


def test_the_overall_paired_verdict_counts_the_pairs_the_overall_figure_counts(card):
    found = runs.paired_verdicts(card["run_try"], card["run_v2"])
    overall = found["overall"]
    assert overall == stats.pooled([found["desk"], found["urgent"]])
    assert (overall.n, overall.passed_before, overall.passed_after) == (24, 14, 21)
    assert (overall.better, overall.worse, overall.unit) == (7, 0, stats.PAIR)
    assert overall.p_value == stats.mcnemar(7, 0)
    assert overall.difference_words() == "+29.2 points (+8.3 to +47.7)"
    assert overall.words() == "better on 24 question–state pairs (7 fixed, 0 broken, p = 0.016)"


def test_compare_and_the_review_give_the_difference_its_interval_beside_the_p_value(card):
    overall = runs.paired_verdicts(card["run_try"], card["run_v2"])["overall"]
    desk = runs.paired_verdicts(card["run_try"], card["run_v2"])["desk"]
    client = _client("checker")
    for url in ("/sets/card/compare/", "/sets/card/v2/review/"):
        text = _text(client.get(url).content.decode())
        assert f"{overall.difference_words()} (58% → 88%) — {overall.words()}" in text, url
        assert f"desk: {desk.difference_words()} (33% → 92%) — {desk.words()}" in text, url


def test_the_compare_json_carries_the_difference_and_its_interval(card):
    query = f"col=run:{card['run_try'].pk}&col=run:{card['run_v2'].pk}&format=json"
    data = json.loads(_client("writer").get(f"/sets/card/compare/?{query}").getvalue())
    overall = data["paired"]["overall"]
    assert overall["unit"] == stats.PAIR and overall["n"] == 24
    assert overall["difference"] == round(7 / 24, stats.PLACES)
    assert overall["difference_interval"] == [0.0831, 0.4774]  # "+8.3 to +47.7"
    assert data["paired"]["desk"]["unit"] == stats.STATE


def test_a_stored_comparison_reads_its_overall_from_the_questions(card):
    # a report stored before the overall counted pairs kept a per-state row: it is not read
    desk = stats.paired([(False, True)] * 7 + [(True, True)] * 4 + [(False, False)])
    urgent = stats.paired([(True, True)] * 10 + [(False, False)] * 2)
    stale = ["overall", 12, 4, 10, 6, 0, stats.mcnemar(6, 0)]
    found = runs.paired_from_json([stale, ["desk", *runs.paired_as_json({"d": desk})[0][1:]]])
    assert found["overall"] == stats.pooled([desk]) and found["overall"].n == 12
    rows = runs.paired_as_json(runs.with_overall({"desk": desk, "urgent": urgent}))
    assert [row[0] for row in rows] == ["overall", "desk", "urgent"]
    assert runs.paired_from_json(rows)["overall"].n == 24


# --- the baseline: the older version or production, and the swap ---------------------------


def test_compare_opens_with_the_older_version_as_the_baseline_though_its_run_is_newer(card):
    again = _v1_again(card)
    assert selection_of(QueryDict(""), card["set"]).columns == [
        f"run:{again.pk}",
        f"run:{card['run_v2'].pk}",
    ]
    html = _client("writer").get("/sets/card/compare/").content.decode()
    assert f"run {again.pk} · v1 · typesafe" in BASELINE_HEAD.search(html).group(1)
    text = _text(html)
    assert f"Baseline: run {again.pk} · v1 · typesafe, overall" in text
    # the verdict reads from v2's side: v2 fixes desk on 7 states
    assert "desk: +58.3 points" in text and "better on 12 states (7 fixed, 0 broken" in text


def test_compare_opens_with_production_as_the_baseline(card):
    services.version_approve(
        version=card["v2"],
        reviewer=factories.reviewer("second"),
        label="production",
        confirm_weak_evidence=True,
    )
    again = _v1_again(card)  # v1 is older, but v2 is what production runs
    assert selection_of(QueryDict(""), card["set"]).columns == [
        f"run:{card['run_v2'].pk}",
        f"run:{again.pk}",
    ]
    # a run of the next version: set against production's, not against the run before it
    revisions = [s.current_revision() for s in card["set"].sample_states.order_by("name")]
    answers = list(
        card["run_v2"].items.filter(variant=0).order_by("id").values_list("answers", flat=True)
    )
    v3 = card["set"].versions.get(number=3)
    newest = _card_run(card["set"], v3, revisions, answers_of=lambda i, v: answers[i])
    assert selection_of(QueryDict(""), card["set"]).columns == [
        f"run:{card['run_v2'].pk}",
        f"run:{newest.pk}",
    ]


def test_the_swap_makes_the_other_run_the_baseline_and_its_url_names_it(card):
    client = _client("writer")
    v1, v2 = f"run:{card['run_try'].pk}", f"run:{card['run_v2'].pk}"
    first = client.get("/sets/card/compare/").content.decode()
    swap = html_lib.unescape(SWAP.search(first).group(1))
    assert QueryDict(swap).getlist("col") == [v2, v1]  # the query names the baseline first
    swapped = client.get(f"/sets/card/compare/?{swap}").content.decode()
    assert f"run {card['run_v2'].pk} · v2" in BASELINE_HEAD.search(swapped).group(1)
    text = _text(swapped)
    assert "Swap: make run " + str(card["run_try"].pk) + " · v1 · typesafe the baseline" in text
    # the same two runs, read from the other side
    assert "desk: −58.3 points" in text and "worse on 12 states (0 fixed, 7 broken" in text
    assert "−29.2 points (−47.7 to −8.3)" in text
    back = html_lib.unescape(SWAP.search(swapped).group(1))
    assert QueryDict(back).getlist("col") == [v1, v2]
    assert QueryDict(back).dict() | {"col": ""} == QueryDict(swap).dict() | {"col": ""}


def test_every_other_column_can_become_the_baseline(card):
    cols = [f"run:{card[k].pk}" for k in ("run_v1", "run_try", "run_v2")]
    query = "&".join(f"col={c}" for c in cols)
    html = _client("writer").get(f"/sets/card/compare/?{query}").content.decode()
    links = re.findall(r'<a href="\?([^"]*)" class="rebase-col"', html)
    assert [QueryDict(html_lib.unescape(q)).getlist("col")[0] for q in links] == cols[1:]
    for q in links:  # the same columns, one moved to the front
        assert sorted(QueryDict(html_lib.unescape(q)).getlist("col")) == sorted(cols)


def test_the_compare_text_reads_the_overall_with_its_difference(card):
    from tests.providers import run_cli

    code, out, err = run_cli(
        "compare",
        "--set",
        "card",
        "--col",
        f"run:{card['run_try'].pk}",
        "--col",
        f"run:{card['run_v2'].pk}",
    )
    assert code == 0, err
    overall = runs.paired_verdicts(card["run_try"], card["run_v2"])["overall"]
    assert f"against [1], overall: {overall.difference_words()} — {overall.words()}" in out
    assert f"overall {runs.overall(card['run_v2']).words}" in out


# --- the review page badges what changed ----------------------------------------------------

BADGE = re.compile(r'<span class="badge change-badge"[^>]*>([^<]*)</span>')


def _badges(html: str) -> dict[str, list[str]]:
    """Per question card of the review page, its change badges."""
    found = {}
    for qid, body in re.findall(
        r'<article class="review-question[^"]*" id="q-(?:removed-)?([^"]+)">(.*?)</header>',
        html,
        re.S,
    ):
        found[qid] = BADGE.findall(body)
    return found


def test_the_review_badges_only_the_question_that_changed_since_the_parent(card):
    html = _client("checker").get("/sets/card/v2/review/").content.decode()
    # nothing approved: v2 reads against v1, the version it came from; only desk was edited
    assert _badges(html) == {"desk": ["changed since v1"], "urgent": []}
    heading = _text(html[html.index('id="diff-heading"') :])[:200]
    assert "changes since v1 (the version it came from, the latest kept one)" in heading
    assert "unchanged since v1" in _text(html)
    evidence = _text(html[html.index('<h2 id="evidence-heading"') :])[:200]
    assert "this version against v1 (the version it came from, the latest kept one)" in evidence
    assert "nothing approved yet" not in evidence


def test_the_review_badges_an_added_and_a_removed_question_and_nothing_else(card):
    writer = card["v2"].author
    v3 = card["set"].versions.get(number=3)
    document = json.loads(json.dumps(card["v2"].document))
    del document["urgent"]
    document["tone"] = {"type": "noul", "instructions": "Is the customer angry?"}
    v3 = services.version_save(
        version=v3, document=document, base_revision=v3.revision, author=writer
    )
    html = _client("checker").get("/sets/card/v3/review/").content.decode()
    assert _badges(html) == {
        "desk": [],
        "tone": ["added since v2"],
        "urgent": ["removed since v2"],
    }
    # once v2 is production, the same frame: production is the parent
    services.version_approve(
        version=card["v2"],
        reviewer=factories.reviewer("second"),
        label="production",
        confirm_weak_evidence=True,
    )
    html = _client("checker").get("/sets/card/v3/review/").content.decode()
    assert _badges(html) == {
        "desk": [],
        "tone": ["added since v2"],
        "urgent": ["removed since v2"],
    }
    assert "changes since v2 (production)" in _text(html)


def test_with_nothing_to_set_it_against_no_question_is_badged(db):
    writer = factories.author("writer")
    factories.reviewer("checker")
    qs = factories.question_set("alone", owner=writer, doc=factories.document(2))
    draft = qs.versions.get(number=1)
    services.version_submit(version=draft, author=writer)
    html = _client("checker").get("/sets/alone/v1/review/").content.decode()
    assert _badges(html) == {"q0": [], "q1": []}
    assert "every question is new" in _text(html)


# --- an attribution's run page counts what it asked -----------------------------------------


@pytest.fixture
def reader(settings):
    p = Provider(overlap_answers)
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = "k-one-answer", p.url
    yield p
    p.stop()


@pytest.mark.django_db(transaction=True)
def test_an_attribution_run_counts_its_one_state_and_draws_no_matrix_for_one_answer(reader):
    writer = factories.author("writer")
    qs = factories.question_set(owner=writer, doc=ROUTING)
    services.sample_state_create(
        question_set=qs,
        name="refund",
        state=ROUTING_STATE,
        author=writer,
        expected={"desk": "tech", "urgent": True, "tone": 0},
    )
    version = services.open_draft(qs)
    plan = attribution_services.attribution_plan(
        version=version, state="refund", backend="typesafe", user=writer, question="desk"
    )
    run = attribution_services.attribution_start(plan=plan, user=writer, enqueue=False)
    run = services.batch_execute(run.pk)
    assert run.kind == attribution.KIND and run.items.count() == plan.calls > 1
    client = Client()
    client.force_login(writer)
    html = client.get(f"/runs/{run.pk}/").content.decode()
    text = _text(html)
    assert f"done — 1 / 1 state ({plan.calls} / {plan.calls} calls): {plan.calls} answered" in text
    assert f"/ {plan.calls} states" not in text
    assert "Results (1 state; failures first)" in text
    assert 'class="confusion"' not in html  # one answer is a row, not a matrix
    assert "Brier" not in text  # nor calibration measures over one answer


@pytest.mark.django_db
def test_a_batch_run_still_draws_its_confusion_matrices(card):
    html = _client("writer").get(f"/runs/{card['run_v2'].pk}/").content.decode()
    assert html.count('<table class="confusion">') == 1  # desk's (urgent is a noul)
    assert "Results (12 states; failures first)" in _text(html)
