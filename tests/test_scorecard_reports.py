"""The scorecard reads its pass rates and its controls' findings from the reports the runs stored
when they finished: the same card as working them out from every answer, without reading one."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from questions.models import BatchRun, QuestionSet, RunReport
from questions.selectors import scorecard
from questions.services.summaries import store_reports
from tests.helpers import scorecard_world

pytestmark = pytest.mark.django_db


def test_the_stored_reports_give_the_card_the_answers_give():
    scorecard_world()
    question_set = QuestionSet.objects.get(slug="card")
    with CaptureQueriesContext(connection) as worked_out:
        computed = scorecard.scorecard(question_set)
    for run in BatchRun.objects.filter(question_set=question_set):
        store_reports(run)
    cache.clear()  # the labels' lines, kept since the first read, are worked out again
    with CaptureQueriesContext(connection) as read:
        stored = scorecard.scorecard(question_set)
    assert stored == computed
    assert [v["overall"]["n"] for v in stored["versions"] if v["overall"]] == [24, 24]
    assert not [q for q in read.captured_queries if '"answers"' in q["sql"]]
    # neither the plain runs' answers nor the controls' calls are read
    assert len(read.captured_queries) == len(worked_out.captured_queries) - 2


def test_a_control_report_stored_before_it_kept_its_findings_is_worked_out_from_its_calls():
    scorecard_world()
    question_set = QuestionSet.objects.get(slug="card")
    computed = scorecard.scorecard(question_set)
    for run in BatchRun.objects.filter(question_set=question_set):
        store_reports(run)
    for report in RunReport.objects.filter(against=None):
        report.data.pop("findings", None)
        report.save()
    with CaptureQueriesContext(connection) as read:
        assert scorecard.scorecard(question_set) == computed
    # the controls' calls are read again; the plain runs' answers are not
    assert len([q for q in read.captured_queries if '"answers"' in q["sql"]]) == 1
