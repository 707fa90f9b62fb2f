"""A run's report lists its misses, the most confidently wrong first: 1 − the probability the
answer gave the expected one (`metrics.wrong_confidence`), the first `MISSES_LISTED`, added up
as the run writes and stored with its report; the run page and `questions batch` show them."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from questions import roles, services
from questions.core import metrics
from questions.models import RunReport
from questions.selectors import runs
from tests import factories
from tests.providers import run_cli, stand_in_serving


def noul(p: float) -> dict:
    return {"type": "noul", "noul": p}


def choice(chosen: str, **probabilities: float) -> dict:
    return {"type": "choice", "choice": chosen, "probabilities": probabilities}


def test_wrong_confidence_is_one_minus_the_probability_of_the_expected_answer():
    assert metrics.wrong_confidence("noul", noul(0.1), True) == pytest.approx(0.9)
    assert metrics.wrong_confidence("noul", noul(0.8), False) == pytest.approx(0.8)
    picked = choice("a", a=0.7, b=0.2, c=0.1)
    assert metrics.wrong_confidence("choice", picked, "c") == pytest.approx(0.9)
    assert metrics.wrong_confidence("choice", picked, "missing") == 1.0
    score = {"type": "score", "score": 2.1, "probabilities": {"0": 0.05, "1": 0.15, "2": 0.8}}
    assert metrics.wrong_confidence("score", score, 0) == pytest.approx(0.95)
    assert metrics.wrong_confidence("score", {"type": "score", "score": 2}, 0) is None


def test_a_tally_lists_the_most_confidently_wrong_first_and_keeps_only_the_first():
    tally = metrics.Tally()
    # item i answers P(true) = i / 100 where true is expected: the lower, the surer it was wrong
    for i in range(60):
        tally.add(i, (), {"q": True}, {"q": noul(i / 100)})
    listed = tally.misses_listed()
    assert [m.item for m in listed] == list(range(metrics.MISSES_LISTED))
    assert listed[0].wrong == 1.0 and listed[0].answered == "false 0.00"
    assert [m.wrong for m in listed] == sorted((m.wrong for m in listed), reverse=True)
    assert len(tally.worst) <= 2 * metrics.MISSES_LISTED  # bounded as it adds up


def test_tallies_merged_list_what_one_tally_of_every_item_lists():
    whole, first, second = metrics.Tally(), metrics.Tally(), metrics.Tally()
    answers = [
        (i, {"q": "b"}, {"q": choice("a", a=(i % 7) / 10 + 0.3, b=0.7 - (i % 7) / 10)})
        for i in range(50)
    ]
    for pk, expected, answer in answers:
        whole.add(pk, (), expected, answer)
        (first if pk % 2 else second).add(pk, (), expected, answer)
    first.merge(second)
    assert first.misses_listed() == whole.misses_listed()


def test_a_miss_with_no_probability_comes_last():
    tally = metrics.Tally()
    tally.add(1, (), {"s": 0}, {"s": {"type": "score", "score": 2}})
    tally.add(2, (), {"s": 0}, {"s": {"type": "score", "score": 2, "probabilities": {"0": 0.4}}})
    assert [m.item for m in tally.misses_listed()] == [2, 1]


@pytest.fixture
def version(client, settings):
    with stand_in_serving(settings):
        writer = factories.author("writer")
        client.force_login(writer)
        yield factories.tickets_draft(writer, count=12, urgent_every=3)


@pytest.mark.django_db(transaction=True)
def test_the_run_page_and_the_summary_list_the_misses_most_confidently_wrong_first(client, version):
    run = services.batch_create(
        version=version, backend="typesafe", user=roles.OPERATOR, enqueue=False
    )
    run = services.batch_execute(run.pk)
    report, misses = runs.run_report_and_misses(run)
    assert len(misses) == report.checked - report.passed > 1
    assert [m.wrong for m in misses] == sorted((m.wrong for m in misses), reverse=True)
    assert all(re.fullmatch(r"s\d+", m.item) for m in misses)  # named by their states
    stored = RunReport.objects.get(run=run, against=None).data["misses"]
    assert stored == [m.as_row() for m in misses]
    html = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    table = html.split('<table class="compact misses">', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr><td>(s\d+)</td><td><code>(\w+)</code>", table)
    assert rows == [(m.item, m.question) for m in misses]
    summary = runs.run_summary(run)["misses"]
    assert [(m["state"], m["question"]) for m in summary] == rows
    code, out, _ = run_cli("batch", "--set", "s", "--version", "1", "--backend", "typesafe")
    assert code == 0  # misses fail no batch without --min-pass-rate
    lines = out.splitlines()
    start = lines.index("  misses, the most confidently wrong first:")
    printed = [line.split()[0] for line in lines[start + 1 :] if line.startswith("    ")]
    assert printed == [m.item for m in misses][: len(printed)] and printed
    code, out, _ = run_cli(
        "batch", "--set", "s", "--version", "1", "--backend", "typesafe", "--json"
    )
    assert [m["state"] for m in json.loads(out)["misses"]] == [m.item for m in misses]
