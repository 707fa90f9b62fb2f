"""The run pages: start a run, its live progress partial, its report, cancel, compare."""

import pytest
from django.urls import reverse

from questions import roles, services
from questions.core import stats
from questions.dev import standin
from questions.models import BatchRun
from questions.selectors.runs import paired_verdicts, run_report
from tests import factories
from tests.providers import DOC

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def setup(client, settings):
    server = standin.serve_in_thread()
    settings.TYPESAFE_API_KEY = standin.KEY
    settings.TYPESAFE_BASE_URL = f"http://127.0.0.1:{server.server_address[1]}"
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}
    writer = factories.author("writer")
    client.force_login(writer)
    qs = factories.question_set("s", owner=writer, doc=DOC)
    for i in range(4):
        services.sample_state_create(
            question_set=qs,
            name=f"s{i}",
            # the stand-in reads words: one state says what the noul asks, the others do not
            state={"n": i, "note": "urgent" if i == 0 else "routine"},
            author=writer,
            expected={"urgent": i % 2 == 0, "desk": "billing"},
        )
    yield client, services.open_draft(qs)
    server.shutdown()
    server.server_close()


def test_start_a_run_and_watch_it(setup):
    client, version = setup
    response = client.post(
        reverse("run-create", args=["s", version.number]),
        {"backend": "typesafe", "concurrency": "2", "threshold": "0.5"},
    )
    run = BatchRun.objects.get()
    assert response.url == reverse("run-detail", args=[run.pk])
    assert (run.status, run.concurrency) == ("queued", 2)
    page = client.get(response.url).content.decode()
    assert 'hx-trigger="every 1s"' in page and "0</span> / 4 states" in page
    assert "under way" not in page
    taken = list(run.items.values_list("pk", flat=True)[:2])  # claimed by a worker, not yet written
    run.items.filter(pk__in=taken).update(status="running")
    assert "2 under way." in client.get(response.url).content.decode()
    run.items.filter(pk__in=taken).update(status="pending")
    services.batch_execute(run.pk)
    partial = client.get(response.url, headers={"HX-Request": "true", "HX-Target": "run-progress"})
    body = partial.content.decode()
    assert "<html" not in body and "every 1s" not in body
    assert partial["HX-Refresh"] == "true"
    assert "4</span> / 4 states" in body
    page = client.get(response.url).content.decode()
    assert "Pass rate" in page and "Confusion of" in page and "Brier" in page
    # the stand-in answered, whatever model was asked: the header says so
    assert f"(answered by {standin.MODEL})" in page
    # 4 answers a type: too few for a reliability diagram, and the page says why
    assert page.count('class="chart reliability"') == 0
    assert page.count("Not enough answers: a bin of the diagram needs 5 or more") == 2
    # the results: a row per state and question with an expected answer, each linked to compare
    results = page.split('id="results-heading"')[1]
    assert results.count('<tr class="fail">') + results.count('<tr class="pass">') == 8
    assert results.index('<tr class="fail">') < results.index('<tr class="pass">')
    state = version.question_set.sample_states.get(name="s0")
    assert f"col=run:{run.pk}&amp;filter=all&amp;state={state.pk}#row-{state.pk}-desk" in results
    assert "Open in compare" in page
    run.refresh_from_db()
    assert (run.checked, run.failed_states) == (8, 0) and run.passed is not None


def test_a_state_not_asked_yet_is_marked_pending_not_wrong(setup):
    client, version = setup
    run = services.batch_create(version=version, backend="typesafe", user=roles.OPERATOR)
    url = reverse("run-detail", args=[run.pk])
    results = client.get(url).content.decode().split('id="results-heading"')[1]
    assert results.count('<tr class="not-asked">') == 4  # queued: every state waits
    assert "✗" not in results and 'class="error"' not in results and 'class="fail"' not in results
    assert results.count('class="pending-mark"') == 4 and "not answered yet" in results
    claimed = run.items.filter(pk=run.items.first().pk)
    claimed.update(status="running")  # claimed by a worker, not answered yet
    assert client.get(url).content.decode().count('<tr class="not-asked">') == 4
    claimed.update(status="pending")
    services.batch_execute(run.pk)
    results = client.get(url).content.decode().split('id="results-heading"')[1]
    assert "not-asked" not in results and "pending-mark" not in results
    assert results.count('<tr class="fail">') + results.count('<tr class="pass">') == 8


def test_the_confusion_matrix_keeps_declared_order_with_zeros_and_the_diagonal(setup):
    from questions.core import metrics
    from questions.views.runs import confusion_table

    q = metrics.QuestionReport("desk", "choice", confusion={"sales": {"billing": 2}})
    table = confusion_table(q, ["billing", "technical", "sales"])
    assert table["columns"] == ["billing", "technical", "sales"]
    assert table["rows"] == [
        ("billing", [(0, True), (0, False), (0, False)]),
        ("technical", [(0, False), (0, True), (0, False)]),
        ("sales", [(2, False), (0, False), (0, True)]),
    ]


def _two_runs(version):
    """Two finished runs of `version`: the second reads its nouls at 0.99."""
    runs = []
    for threshold in (0.5, 0.99):
        run = services.batch_create(
            version=version,
            backend="typesafe",
            threshold=threshold,
            user=roles.OPERATOR,
            enqueue=False,
        )
        services.batch_execute(run.pk)
        runs.append(run)
    return runs


def test_compare_two_runs_lists_regressions_first(setup):
    client, version = setup
    first, second = _two_runs(version)
    page = client.get(reverse("run-detail", args=[second.pk]), {"against": first.pk})
    body = page.content.decode()
    assert "Against another run" in body
    delta = body.split('id="vs-heading"')[1]
    kinds = [k.split('"')[0] for k in delta.split('<tr class="change-')[1:]]
    assert kinds and kinds == sorted(kinds, key=["regression", "fix", "flip"].index)
    assert "→ <strong>false " in delta  # before → after values of the noul read at 0.99
    # the change said as a paired verdict on the pairs both checked, its points with their
    # paired interval
    verdict = paired_verdicts(first, second)["overall"]
    assert 'McNemar\'s exact test): <span class="paired-overall">' in delta.replace("&#x27;", "'")
    assert verdict.words() in delta and verdict.difference_words() in delta


def test_cancel_from_the_page(setup):
    client, version = setup
    run = services.batch_create(
        version=version, backend="typesafe", user=roles.OPERATOR, enqueue=False
    )
    client.post(reverse("run-cancel", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == "cancelled"


def test_bad_run_settings_say_so(setup):
    client, version = setup
    response = client.post(
        reverse("run-create", args=["s", version.number]),
        {"backend": "typesafe", "concurrency": "0"},
        follow=True,
    )
    assert f"Concurrency is 1 to {BatchRun.MAX_CONCURRENCY}" in response.content.decode()
    assert not BatchRun.objects.exists()


def test_the_review_page_shows_both_versions_runs_side_by_side(setup):
    client, version = setup
    checker = factories.reviewer("checker")
    writer = version.author
    first = services.batch_create(
        version=version, backend="typesafe", user=roles.OPERATOR, enqueue=False
    )
    services.batch_execute(first.pk)
    services.version_submit(version=version, author=writer)
    services.version_approve(
        confirm_weak_evidence=True, version=version, reviewer=checker, label="production"
    )
    v2 = services.version_draft_from(version=version, author=writer)
    second = services.batch_create(
        version=v2, backend="typesafe", user=roles.OPERATOR, enqueue=False
    )
    services.batch_execute(second.pk)
    services.version_submit(version=v2, author=writer)
    body = client.get(f"/sets/s/v{v2.number}/review/").content.decode()
    assert f"run {first.pk}</a>" in body and f"run {second.pk}</a>" in body
    assert "Cost per call" in body and "$0.0000" in body
    assert f"col=run:{first.pk}&amp;col=run:{second.pk}&amp;filter=changes" in body


def _a_run_with_a_failure(version):
    run = services.batch_create(
        version=version, backend="typesafe", user=roles.OPERATOR, enqueue=False
    )
    services.batch_execute(run.pk)
    run.items.filter(sample_state__sample_state__name="s1").update(
        status="failed", error_status=502, error_detail="The provider failed.", answers=None
    )
    return run


def test_rerun_the_failed_states_from_the_page(setup):
    client, version = setup
    run = _a_run_with_a_failure(version)
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert reverse("run-rerun-failed", args=[run.pk]) in page
    assert "Re-run the 1 failed state<" in page
    response = client.post(reverse("run-rerun-failed", args=[run.pk]))
    rerun = BatchRun.objects.get(rerun_of=run)
    assert response.url == reverse("run-detail", args=[rerun.pk])
    assert [i.sample_state.sample_state.name for i in rerun.items.all()] == ["s1"]
    page = client.get(response.url).content.decode()
    assert f'Re-runs the failed states of <a href="/runs/{run.pk}/">run {run.pk}</a>' in page
    assert reverse("run-rerun-failed", args=[rerun.pk]) not in page  # queued, nothing failed


def test_no_rerun_button_without_failures_or_for_viewers(setup):
    client, version = setup
    clean = services.batch_create(
        version=version, backend="typesafe", user=roles.OPERATOR, enqueue=False
    )
    services.batch_execute(clean.pk)
    page = client.get(reverse("run-detail", args=[clean.pk])).content.decode()
    assert "run-rerun-failed" not in page and "/rerun-failed/" not in page
    run = _a_run_with_a_failure(version)
    client.force_login(factories.user("watcher"))
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "/rerun-failed/" not in page


def test_rerun_failed_refused_to_a_viewer(setup):
    client, version = setup
    run = _a_run_with_a_failure(version)
    client.force_login(factories.user("watcher"))
    response = client.post(reverse("run-rerun-failed", args=[run.pk]))
    assert response.status_code == 403
    assert not BatchRun.objects.filter(rerun_of=run).exists()


def test_rerun_failed_without_failures_says_so(setup):
    client, version = setup
    run = services.batch_create(
        version=version, backend="typesafe", user=roles.OPERATOR, enqueue=False
    )
    services.batch_execute(run.pk)
    response = client.post(reverse("run-rerun-failed", args=[run.pk]), follow=True)
    assert "No state failed in run" in response.content.decode()
    assert BatchRun.objects.count() == 1


def test_a_run_where_every_state_failed_says_so_in_red(setup, settings):
    client, version = setup
    settings.TYPESAFE_BASE_URL = "http://127.0.0.1:1"  # nobody listens there
    run = services.batch_create(
        version=version, backend="typesafe", user=roles.OPERATOR, max_attempts=1, enqueue=False
    )
    run = services.batch_execute(run.pk)
    assert run.status == "failed"
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert '<span class="run-status run-failed">failed</span>' in page
    assert 'class="run-progress run-failed"' in page  # the progress bar turns red
    assert (
        '<p class="message error">Every state failed: 502: The provider could not be reached.</p>'
        in page
    )
    assert "has expected answers" not in page
    assert "No state of this run was answered" in page


def test_a_run_some_of_whose_states_failed_is_amber_on_its_page_and_the_set_page(setup):
    client, version = setup
    run = _a_run_with_a_failure(version)
    services.run_summary_store(run)
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert '<span class="run-status run-partial">done, some failed</span>' in page
    assert 'class="run-progress run-partial' in page
    # the failed state comes first in the results, with what went wrong
    results = page.split('id="results-heading"')[1]
    assert results.index("s1") < results.index("s0")
    assert "no answer: 502: The provider failed." in results
    set_page = client.get(reverse("set-detail", args=["s"])).content.decode()
    assert '<span class="run-status run-partial">done, some failed</span>' in set_page
    run.refresh_from_db()
    assert stats.rate_words(run.passed, run.checked) in set_page
    assert run.checked == 6  # the failed state's two checks are not counted


def test_the_no_expectations_note_needs_answered_states(setup):
    client, version = setup
    for state in version.question_set.sample_states.all():
        services.sample_state_update(
            sample=state,
            name=state.name,
            state=state.state,
            author=version.author,
            base_revision=state.revision,
            expected={},
        )
    run = services.batch_create(
        version=version, backend="typesafe", user=roles.OPERATOR, enqueue=False
    )
    run = services.batch_execute(run.pk)
    assert run.status == "done"
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "No answered state of this run has expected answers" in page
    assert "Every state failed" not in page


def test_a_finished_run_stores_its_summary_and_the_set_list_shows_the_last_pass_rate(setup):
    client, version = setup
    first, second = _two_runs(version)
    first.refresh_from_db()
    second.refresh_from_db()
    report = run_report(second)
    assert (second.checked, second.passed) == (report.checked, report.passed) == (8, report.passed)
    assert second.pass_rate == report.pass_rate
    assert first.passed != second.passed  # the threshold moved some nouls
    body = client.get(reverse("set-list")).content.decode()
    assert stats.rate_words(second.passed, 8) in body  # with its interval and n
    assert reverse("run-detail", args=[second.pk]) in body


def test_the_migration_fills_the_summary_of_runs_finished_before_it(setup):
    import importlib

    from django.apps import apps

    _client, version = setup
    run = _a_run_with_a_failure(version)
    BatchRun.objects.filter(pk=run.pk).update(checked=None, passed=None, failed_states=None)
    run.items.update(misses=None)
    migration = importlib.import_module("questions.migrations.0014_run_summary")
    migration.fill_finished_runs(apps, None)
    run.refresh_from_db()
    assert (run.checked, run.failed_states) == (6, 1)
    assert run.items.filter(misses__isnull=True).count() == 1  # the failed state's


def _reviewed_v2(version, *, v2_threshold, reword=True):
    """v1 run and approved under production; v2 (desk descriptions reworded, a question
    added) run at `v2_threshold` and submitted."""
    checker = factories.reviewer("checker")
    writer = version.author
    first = services.batch_create(
        version=version, backend="typesafe", user=roles.OPERATOR, enqueue=False
    )
    services.batch_execute(first.pk)
    services.version_submit(version=version, author=writer)
    services.version_approve(
        confirm_weak_evidence=True, version=version, reviewer=checker, label="production"
    )
    v2 = services.version_draft_from(version=version, author=writer)
    document = dict(v2.document)
    if reword:
        document["desk"] = {
            **document["desk"],
            "criteria": {**document["desk"]["criteria"], "tech": "bugs and outages"},
        }
    document["tone"] = {"type": "score", "instructions": "How calm?", "criteria": ["calm", "cross"]}
    services.version_save(version=v2, document=document, base_revision=v2.revision, author=writer)
    second = services.batch_create(
        version=v2, backend="typesafe", threshold=v2_threshold, user=roles.OPERATOR, enqueue=False
    )
    services.batch_execute(second.pk)
    services.version_submit(version=v2, author=writer)
    return checker, first, second, v2


def test_the_review_page_shows_every_question_in_full_with_both_diffs_and_the_flips(setup, client):
    _client, version = setup
    checker, first, second, v2 = _reviewed_v2(version, v2_threshold=0.99)
    client.force_login(checker)
    body = client.get(f"/sets/s/v{v2.number}/review/").content.decode()
    # the whole content, added question included
    for text in ("Is it urgent?", "Which desk?", "money", "anything else", "How calm?", "cross"):
        assert text in body
    assert 'id="q-tone"' in body and "added since v1" in body
    assert "bugs <ins>and outages</ins>" in body or "and outages" in body
    # the evidence inline: both pass rates, the change in points, the flipped cells listed
    first.refresh_from_db()
    second.refresh_from_db()
    assert stats.rate_words(second.passed, second.checked) in body
    evidence = body.split('id="evidence-heading"')[1]
    assert "cells flipped" in evidence or "cell flipped" in evidence
    assert '<tr class="change-regression">' in evidence and "→ <strong>false " in evidence


def test_approving_a_version_that_passes_less_than_production_needs_a_confirmation(setup, client):
    from questions.models import ReviewEvent, Version

    _client, version = setup
    checker, first, second, v2 = _reviewed_v2(version, v2_threshold=0.99)
    first.refresh_from_db()
    second.refresh_from_db()
    assert second.pass_rate < first.pass_rate
    client.force_login(checker)
    url = f"/sets/s/v{v2.number}/review/"
    page = client.get(url).content.decode().replace("&#x27;", "'")
    assert 'name="confirm_weak"' in page and "fewer than the baseline's run" in page
    paired = paired_verdicts(first, second)["overall"]
    assert paired.after < paired.before
    assert (
        f"passes {paired.passed_after} of the {paired.n} question–state pairs both runs checked "
        f"({paired.after:.0%}), fewer than the baseline's run {first.pk} "
        f"({paired.passed_before} of {paired.n}, {paired.before:.0%})"
    ) in page
    refused = client.post(url, {"action": "approve", "note": "fine"})
    assert refused.status_code == 422 and "Approve anyway" in refused.content.decode()
    assert Version.objects.get(pk=v2.pk).status == "in_review"
    done = client.post(url, {"action": "approve", "note": "fine", "confirm_weak": "yes"})
    assert done.status_code == 302
    event = ReviewEvent.objects.filter(version=v2, kind="approved").get()
    assert event.note.startswith("Approved although this version passes ")
    assert event.note.endswith("(confirmed). fine")


def _v1_approved_then_v2(version, *, tag_v1="", tag_v2="", first=None):
    """v1 run (over the states tagged `tag_v1`, or all; or its run `first`) and approved under
    production; v2 (the same questions) run over the states tagged `tag_v2` (or all) and
    submitted."""
    checker, writer = factories.reviewer("checker"), version.author
    if first is None:
        first = services.batch_create(
            version=version, backend="typesafe", user=roles.OPERATOR, tag=tag_v1, enqueue=False
        )
        services.batch_execute(first.pk)
    services.version_submit(version=version, author=writer)
    services.version_approve(
        confirm_weak_evidence=True, version=version, reviewer=checker, label="production"
    )
    v2 = services.version_draft_from(version=version, author=writer)
    second = services.batch_create(
        version=v2, backend="typesafe", user=roles.OPERATOR, tag=tag_v2, enqueue=False
    )
    services.batch_execute(second.pk)
    services.version_submit(version=v2, author=writer)
    first.refresh_from_db()
    second.refresh_from_db()
    return checker, first, second, v2


def test_weak_evidence_reads_the_states_both_runs_checked_not_two_different_sets(setup, client):
    """v2 runs over more states than v1 did, and misses the new ones: its pass rate over all
    its states is below v1's, but on the states both checked it passes exactly as v1 did."""
    _client, version = setup
    writer = version.author
    first = services.batch_create(
        version=version, backend="typesafe", user=roles.OPERATOR, enqueue=False
    )
    services.batch_execute(first.pk)
    for i in range(4, 8):  # states the stand-in misses: it reads "urgent" and picks no sales
        services.sample_state_create(
            question_set=version.question_set,
            name=f"s{i}",
            state={"n": i, "note": "urgent"},
            author=writer,
            expected={"urgent": False, "desk": "tech"},
        )
    checker, v1_run, v2_run, v2 = _v1_approved_then_v2(version, first=first)
    assert v2_run.checked > v1_run.checked
    assert v2_run.pass_rate < v1_run.pass_rate  # what the old rule compared
    paired = paired_verdicts(v1_run, v2_run)["overall"]
    assert paired.n == 4 * 2 and paired.after == paired.before  # 4 states, 2 questions
    assert services.weak_evidence(v2) == ""
    client.force_login(checker)
    url = f"/sets/s/v{v2.number}/review/"
    assert 'name="confirm_weak"' not in client.get(url).content.decode()
    assert client.post(url, {"action": "approve", "note": "fine"}).status_code == 302


def test_weak_evidence_when_no_state_was_checked_by_both_runs(setup, client):
    _client, version = setup
    for sample in version.question_set.sample_states.all():
        services.sample_state_update(
            sample=sample,
            name=sample.name,
            state=sample.state,
            expected=sample.expected,
            tags=["early"] if sample.name in ("s0", "s1") else ["late"],
            author=version.author,
            base_revision=sample.revision,
        )
    checker, first, second, v2 = _v1_approved_then_v2(version, tag_v1="early", tag_v2="late")
    assert paired_verdicts(first, second)["overall"].n == 0
    weak = services.weak_evidence(v2)
    assert weak == (
        f"shares no checked question–state pair with the baseline's run {first.pk}: nothing "
        "shows it does as well"
    )
    client.force_login(checker)
    url = f"/sets/s/v{v2.number}/review/"
    page = client.get(url).content.decode().replace("&#x27;", "'")
    assert 'name="confirm_weak"' in page and weak in page
    assert client.post(url, {"action": "approve", "note": "fine"}).status_code == 422


def test_approving_a_version_that_passes_as_well_needs_no_confirmation(setup, client):
    _client, version = setup
    checker, first, second, v2 = _reviewed_v2(version, v2_threshold=0.5, reword=False)
    first.refresh_from_db()
    second.refresh_from_db()
    assert second.pass_rate == first.pass_rate  # the same questions asked the same way
    client.force_login(checker)
    url = f"/sets/s/v{v2.number}/review/"
    assert 'name="confirm_weak"' not in client.get(url).content.decode()
    assert client.post(url, {"action": "approve", "note": "fine"}).status_code == 302


def test_a_large_review_writes_out_changed_questions_and_loads_the_others_when_opened(
    setup, client, monkeypatch
):
    from questions.selectors import review

    _client, version = setup
    checker, _first, _second, v2 = _reviewed_v2(version, v2_threshold=0.5, reword=False)
    client.force_login(checker)
    monkeypatch.setattr(review, "INLINE_ENTRIES", 0)
    url = f"/sets/s/v{v2.number}/review/"
    body = client.get(url).content.decode()
    tone = body.split('id="q-tone"')[1].split("</article>")[0]
    assert "cross" in tone  # added: written out
    desk = body.split('id="q-desk"')[1].split("</article>")[0]
    assert "Which desk?" in desk and "anything else" not in desk  # unchanged: on opening
    assert 'class="lazy-entries" hx-get="?question=desk"' in desk
    part = client.get(url, {"question": "desk"}, headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in part and "anything else" in part
    assert client.get(url, {"question": "nope"}).status_code == 404
    full = client.get(url, {"full": "1"}).content.decode()
    assert 'class="lazy-entries"' not in full and "anything else" in full


def _writes(queries) -> list[str]:
    return [
        q["sql"]
        for q in queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]


@pytest.fixture
def counted(settings):
    """A live wire that answers as the stand-in does and keeps every request it got."""
    from tests.providers import Provider, point_every_wire_at

    provider = Provider(default=lambda body: standin.respond(body)[1])
    point_every_wire_at(settings, provider)
    yield provider
    provider.stop()


def test_a_get_of_the_run_review_and_compare_pages_asks_nothing_and_writes_nothing(setup, counted):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client, version = setup
    user = version.question_set.owner
    run = services.batch_create(version=version, backend="typesafe", user=user, enqueue=False)
    services.batch_execute(run.pk)
    services.version_submit(version=version, author=user)
    client.force_login(factories.reviewer("checker"))
    asked = len(counted.requests)
    assert asked == 4
    state = version.question_set.sample_states.get(name="s0")
    pages = [
        reverse("run-detail", args=[run.pk]),
        reverse("version-review", args=["s", version.number]),
        f"{reverse('set-compare', args=['s'])}?col=run:{run.pk}&col=v1:typesafe&state={state.pk}",
    ]
    for url in pages:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        assert _writes(queries.captured_queries) == [], url
    assert len(counted.requests) == asked


def test_a_review_of_a_run_without_a_stored_summary_reads_it_and_writes_nothing(setup):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client, version = setup
    user = version.question_set.owner
    run = services.batch_create(version=version, backend="typesafe", user=user, enqueue=False)
    services.batch_execute(run.pk)
    BatchRun.objects.filter(pk=run.pk).update(checked=None, passed=None, failed_states=None)
    services.version_submit(version=version, author=user)
    client.force_login(factories.reviewer("checker"))
    with CaptureQueriesContext(connection) as queries:
        page = client.get(reverse("version-review", args=["s", version.number]))
    assert page.status_code == 200 and _writes(queries.captured_queries) == []
    run.refresh_from_db()
    assert run.checked is None


def test_every_way_a_run_finishes_stores_its_summary(setup):
    from questions.models import Version

    _client, version = setup
    user = version.question_set.owner
    queued = services.batch_create(version=version, backend="typesafe", user=user, enqueue=False)
    services.batch_cancel(run=queued, user=user)
    queued.refresh_from_db()
    assert (queued.status, queued.checked, queued.passed) == ("cancelled", 0, 0)
    invalid = services.batch_create(version=version, backend="typesafe", user=user, enqueue=False)
    Version.objects.filter(pk=version.pk).update(document_text="[]")
    services.batch_execute(invalid.pk)
    invalid.refresh_from_db()
    assert (invalid.status, invalid.checked, invalid.passed) == ("failed", 0, 0)
