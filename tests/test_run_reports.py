"""A finished run's reports are stored when it finishes (`services.summaries.store_reports`) and
read as stored: the run page and the review page work nothing out from the answers, on their
first view in any process as on the next, and a view writes nothing."""

import importlib

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from questions import roles, services
from questions.core import metrics
from questions.models import BatchRun, RunReport
from questions.selectors import review, runs
from tests import factories
from tests.providers import stand_in_serving

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_databases]


@pytest.fixture
def version(client, settings):
    with stand_in_serving(settings):
        writer = factories.author("writer")
        client.force_login(writer)
        yield factories.tickets_draft(writer)


def _run(version, threshold=0.5):
    run = services.batch_create(
        version=version, backend="typesafe", threshold=threshold, user=roles.OPERATOR, enqueue=False
    )
    return services.batch_execute(run.pk)


def _reviewed(version):
    """v1 run and approved under production; v2 run at 0.99 and submitted: (v1's run, v2's
    run, v2)."""
    checker = factories.reviewer("checker")
    first = _run(version)
    services.version_submit(version=version, author=version.author)
    services.version_approve(
        confirm_weak_evidence=True, version=version, reviewer=checker, label="production"
    )
    v2 = services.version_draft_from(version=version, author=version.author)
    second = _run(v2, threshold=0.99)
    services.version_submit(version=v2, author=version.author)
    return first, second, v2, checker


def _writes(queries) -> list[str]:
    verbs = ("INSERT", "UPDATE", "DELETE")
    return [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith(verbs)]


def _nothing_worked_out(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a stored report was worked out again")

    monkeypatch.setattr(runs, "run_report_computed", refuse)
    monkeypatch.setattr(runs, "run_delta_computed", refuse)
    monkeypatch.setattr(runs, "run_cases", refuse)
    monkeypatch.setattr(runs, "run_tag_slices_computed", refuse)


def test_a_finished_run_stores_its_report_and_the_run_page_reads_it(client, version, monkeypatch):
    run = _run(version)
    stored = RunReport.objects.get(run=run, against=None)
    assert stored.data == metrics.report_as_json(runs.run_report_computed(run)) | {
        "tags": [[s.tag, s.states, s.checked, s.passed] for s in runs.run_tag_slices(run)],
        "misses": [m.as_row() for m in runs.named_misses(runs.run_tally(run).misses_listed())],
    }
    assert [s.tag for s in runs.run_tag_slices(run)] == ["even", "odd"]
    again = metrics.report_from_json(stored.data)
    computed = runs.run_report_computed(run)
    assert (again.checked, again.passed, again.pass_rate) == (
        computed.checked,
        computed.passed,
        computed.pass_rate,
    )
    for qid, q in computed.questions.items():
        r = again.questions[qid]
        assert (r.checked, r.passed, r.mae, r.confusion) == (
            q.checked,
            q.passed,
            q.mae,
            q.confusion,
        )
    assert again.noul_calibration == computed.noul_calibration
    _nothing_worked_out(monkeypatch)
    url = reverse("run-detail", args=[run.pk])
    with CaptureQueriesContext(connection) as first:
        cold = client.get(url)
    with CaptureQueriesContext(connection) as second:
        warm = client.get(url)
    assert cold.status_code == warm.status_code == 200
    assert "Pass rate" in cold.content.decode() and "Confusion of" in cold.content.decode()
    assert len(first) == len(second)  # the first view in a process costs what the next does
    assert not _writes(first.captured_queries) and not _writes(second.captured_queries)
    assert RunReport.objects.count() == 1


def test_the_review_page_reads_the_comparison_stored_with_the_run(client, version, monkeypatch):
    first, second, v2, checker = _reviewed(version)
    stored = RunReport.objects.get(run=second, against=first)
    delta = runs.run_delta_computed(first, second, v2.document, review.REVIEW_FLIPS_SHOWN)
    assert stored.data["changed"] == delta.flips > 0
    assert (stored.data["checked"], stored.data["passed_after"]) == (
        delta.checked,
        delta.passed_after,
    )
    client.force_login(checker)
    url = reverse("version-review", args=["s", v2.number])
    expected = client.get(url).content.decode()
    _nothing_worked_out(monkeypatch)
    with CaptureQueriesContext(connection) as queries:
        body = client.get(url).content.decode()
    assert not _writes(queries.captured_queries)
    evidence = body.split('id="evidence-heading"')[1].split("</section>")[0]
    assert evidence == expected.split('id="evidence-heading"')[1].split("</section>")[0]
    assert f"<strong>{delta.flips}</strong> cell" in body
    assert '<tr class="change-regression">' in body


def test_the_stored_comparison_lists_the_first_changes_and_counts_them_all(version):
    first, second, v2, _checker = _reviewed(version)
    read = runs.run_delta(first, second, v2.document, 1)
    assert len(read.changes) <= max(1, review.REVIEW_FLIPS_SHOWN)
    computed = runs.run_delta_computed(first, second, v2.document, 1)
    assert read.flips == computed.flips
    assert [(c.state, c.question, c.kind) for c in read.changes[:1]] == [
        (c.state, c.question, c.kind) for c in computed.changes[:1]
    ]
    # more than it stored, or other questions: worked out from the answers
    more = runs.run_delta(first, second, v2.document, review.REVIEW_FLIPS_SHOWN + 1)
    assert more.flips == computed.flips and len(more.changes) == computed.flips
    fewer = {k: v for k, v in v2.document.items() if k != "desk"}
    assert all(c.question != "desk" for c in runs.run_delta(first, second, fewer, 5).changes)


def test_an_unfinished_run_or_one_without_a_stored_report_is_worked_out_and_not_stored(
    client, version
):
    run = _run(version)
    RunReport.objects.all().delete()
    with CaptureQueriesContext(connection) as queries:
        page = client.get(reverse("run-detail", args=[run.pk]))
    assert page.status_code == 200 and "Pass rate" in page.content.decode()
    assert not _writes(queries.captured_queries) and not RunReport.objects.exists()
    queued = services.batch_create(
        version=version, backend="typesafe", user=roles.OPERATOR, enqueue=False
    )
    assert runs.run_report(queued).checked == 0
    assert not RunReport.objects.exists()


def test_the_migration_stores_the_report_of_runs_finished_before_it(version):
    run = _run(version)
    RunReport.objects.all().delete()
    migration = importlib.import_module("questions.migrations.0020_run_reports")
    migration.fill_finished_runs(apps, None)
    stored = RunReport.objects.get(run=run, against=None)
    assert stored.data == metrics.report_as_json(runs.run_report_computed(run)) | {
        "tags": [[s.tag, s.states, s.checked, s.passed] for s in runs.run_tag_slices(run)],
        "misses": [m.as_row() for m in runs.named_misses(runs.run_tally(run).misses_listed())],
    }
    assert [s.tag for s in runs.run_tag_slices(run)] == ["even", "odd"]
    assert RunReport.objects.count() == 1  # the comparisons are worked out when read
    assert BatchRun.objects.get(pk=run.pk).checked == stored.data["checked"]


def test_a_comparison_that_cannot_be_worked_out_leaves_the_run_finished_with_its_report(
    client, version, monkeypatch
):
    def broken(*args, **kwargs):
        raise RuntimeError("no comparison")

    checker = factories.reviewer("checker")
    first = _run(version)
    services.version_submit(version=version, author=version.author)
    services.version_approve(
        confirm_weak_evidence=True, version=version, reviewer=checker, label="production"
    )
    v2 = services.version_draft_from(version=version, author=version.author)
    monkeypatch.setattr(runs, "run_delta_computed", broken)
    second = _run(v2)
    assert second.status == "done"
    assert RunReport.objects.filter(run=second, against=None).exists()
    assert not RunReport.objects.filter(run=second, against=first).exists()
    monkeypatch.undo()
    services.version_submit(version=v2, author=version.author)
    client.force_login(checker)
    page = client.get(reverse("version-review", args=["s", v2.number]))
    assert page.status_code == 200 and "cell" in page.content.decode()
