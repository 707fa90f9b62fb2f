"""What a finished run stores about each item so that its pages read an index, not every
item: its missed answers (`misses`), its place in the results table (`place`, in
`runs.results_order`), its copy of its state (`state`); and the paired verdicts stored
with its review baseline's comparison. Each is checked against what the answers say, and the
reads that use them against the reads they replace."""

import importlib
import re

import pytest
from django.apps import apps
from django.core.cache import cache
from django.db.models import Q
from django.urls import reverse

from questions import roles, services
from questions.core import metrics
from questions.models import BatchItem, BatchRun, RunReport
from questions.selectors import runs, sets
from questions.services.summaries import store_summary
from tests import factories
from tests.providers import DOC, stand_in_serving

# runs execute on threads
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def version(client, settings):
    with stand_in_serving(settings):
        writer = factories.author("writer")
        client.force_login(writer)
        qs = factories.question_set("s", owner=writer, doc=DOC)
        for i in range(8):
            services.sample_state_create(
                question_set=qs,
                name=f"s{7 - i}",  # made in the reverse of their names' order
                state={"n": i, "ticket": "urgent, we are down" if i % 3 == 0 else "a question"},
                author=writer,
                expected={"urgent": i % 2 == 0, "desk": "billing"} if i != 5 else {},
                tags=["even" if i % 2 == 0 else "odd"],
            )
        yield services.open_draft(qs)


def _without_tokens(body: str) -> str:
    return re.sub(r'(csrfmiddlewaretoken" value=|X-CSRFToken": )"[^"]+"', "", body)


def _run(version, threshold=0.5):
    run = services.batch_create(
        version=version, backend="typesafe", threshold=threshold, user=roles.OPERATOR, enqueue=False
    )
    return services.batch_execute(run.pk)


def _missed(item) -> int:
    """The answers of `item` that missed its state's expected one, worked out here from
    `metrics.passes` (the one check), not read from what the run stored."""
    expected = item.sample_state.expected or {}
    missed = 0
    for qid, answer in (item.answers or {}).items():
        case = metrics.Case("", qid, answer.get("type", ""), answer, expected.get(qid))
        if case.checked:
            missed += not metrics.passes(case.qtype, answer, case.expected, item.run.threshold)
    return missed


def _the_old_order(run) -> list[int]:
    """The results table's order as the run page sorted it before places were stored."""
    items = list(run.items.filter(variant=0).select_related("sample_state"))
    rank = {BatchItem.Status.FAILED: 0}
    return [
        i.pk
        for i in sorted(
            items,
            key=lambda i: (
                rank.get(i.status, 1 if (i.misses or 0) > 0 else 2),
                -(i.misses if i.misses is not None else -1),
                i.sample_state.name,
                i.pk,
            ),
        )
    ]


def _check_stored(run) -> None:
    items = list(run.items.select_related("sample_state", "run"))
    for item in items:
        assert item.state_id == item.sample_state.sample_state_id
        if item.status == BatchItem.Status.ANSWERED:
            assert item.misses == _missed(item), item.sample_state.name
    places = [pk for pk, _ in sorted(((i.pk, i.place) for i in items), key=lambda p: p[1])]
    assert sorted(i.place for i in items) == list(range(len(items)))
    assert places == _the_old_order(run)


def test_a_finished_run_stores_each_items_misses_place_and_state(version):
    run = _run(version)
    _check_stored(run)
    misses = dict(run.items.values_list("sample_state__name", "misses"))
    assert any(m > 0 for m in misses.values()) and any(m == 0 for m in misses.values())
    assert misses["s2"] == 0  # no expected answers: nothing to miss
    # an item that failed comes first, whatever its name: stored again as a run stores it
    last = run.items.get(sample_state__name="s7")
    BatchItem.objects.filter(pk=last.pk).update(status=BatchItem.Status.FAILED, answers=None)
    store_summary(BatchRun.objects.get(pk=run.pk))
    _check_stored(run)
    assert run.items.get(place=0).pk == last.pk


def test_a_rerun_and_an_item_made_one_at_a_time_have_their_state(version):
    run = _run(version)
    again = _run(version, threshold=0.9)  # the same states asked again: their own places
    _check_stored(again)
    assert set(again.items.values_list("state", flat=True)) == set(
        run.items.values_list("state", flat=True)
    )
    state = version.question_set.sample_states.get(name="s0")
    made = BatchItem.objects.create(run=again, sample_state=state.revisions.get(), variant=1)
    assert made.state_id == state.pk  # saved one at a time (as tests and the admin do)


def test_the_run_page_lists_its_items_in_their_stored_places(client, version):
    run = _run(version)
    url = reverse("run-detail", args=[run.pk])

    def names(**query) -> list[str]:
        body = client.get(url, query).content.decode()
        return [n for n in (f"s{i}" for i in range(8)) if f"<td>{n} <small" in body]

    ordered = [
        BatchItem.objects.get(pk=pk).sample_state.name
        for pk in runs.results_order(run.items.filter(variant=0)).values_list("pk", flat=True)
    ]
    assert ordered == [BatchItem.objects.get(pk=pk).sample_state.name for pk in _the_old_order(run)]
    page = client.get(url).content.decode()
    shown = sorted(ordered, key=lambda n: page.index(f"<td>{n} <small"))
    assert shown == ordered
    failing = client.get(url, {"show": "failing"}).content.decode()
    missed = [n for n in ordered if run.items.get(sample_state__name=n).misses]
    assert missed and sorted(missed, key=lambda n: failing.index(f"<td>{n} <small")) == missed
    assert all(f"<td>{n} <small" not in failing for n in ordered if n not in missed)
    assert names(q="s1") == ["s1"]


def test_the_failing_filter_reads_the_stored_fact_as_the_old_one_read_the_answers(version):
    run = _run(version)
    qs = version.question_set
    old = qs.sample_states.filter(  # the filter before items had their state
        pk__in=BatchItem.objects.filter(run=run, variant=0)
        .filter(Q(misses__gt=0) | Q(status=BatchItem.Status.FAILED))
        .values("sample_state__sample_state")
    ).order_by("name")
    failing = [s.name for s in old]
    assert failing  # some state missed
    page = sets.sample_states_page(qs, show="failing", failing_in=run)
    assert [s.name for s in page.rows] == failing and page.total == len(failing)
    named = sets.sample_states_page(qs, show="failing", failing_in=run, name=failing[0])
    assert [s.name for s in named.rows] == [failing[0]] and named.total == 1
    tagged = sets.sample_states_page(qs, show="failing", failing_in=run, tag="even")
    assert [s.name for s in tagged.rows] == [s.name for s in old.filter(tags__icontains="even")]
    assert sets.sample_states_page(qs, show="failing", failing_in=None).total == 0
    # by hand, from the answers: a state fails when one of its answers missed
    assert failing == sorted(
        i.sample_state.name
        for i in run.items.select_related("sample_state", "run")
        if i.status == BatchItem.Status.FAILED or _missed(i)
    )


def test_the_migration_fills_the_items_of_runs_finished_before_it(version):
    first, second = _run(version), _run(version)
    stored = {i.pk: (i.place, i.state_id) for i in BatchItem.objects.all()}
    BatchItem.objects.update(place=None, state=None)
    migration = importlib.import_module("questions.migrations.0022_fill_item_place_state")
    migration.fill_items(apps, None)
    assert {i.pk: (i.place, i.state_id) for i in BatchItem.objects.all()} == stored
    _check_stored(first)
    _check_stored(second)


def test_the_review_reads_the_paired_verdicts_stored_with_the_run(client, version, monkeypatch):
    checker = factories.reviewer("checker")
    first = _run(version)
    services.version_submit(version=version, author=version.author)
    services.version_approve(
        confirm_weak_evidence=True, version=version, reviewer=checker, label="production"
    )
    v2 = services.version_draft_from(version=version, author=version.author)
    second = _run(v2, threshold=0.99)
    services.version_submit(version=v2, author=version.author)
    computed = runs.paired_verdicts_computed(first, second)
    stored = RunReport.objects.get(run=second, against=first).data["paired"]
    assert runs.paired_from_json(stored) == computed
    assert [row[0] for row in stored] == list(computed)  # in their order, "overall" first
    client.force_login(checker)
    url = reverse("version-review", args=["s", v2.number])
    expected = client.get(url).content.decode()

    def refuse(*args, **kwargs):
        raise AssertionError("stored paired verdicts were worked out again")

    monkeypatch.setattr(runs, "paired_verdicts_computed", refuse)
    monkeypatch.setattr(runs, "run_readings", refuse)
    cache.clear()  # a process that never saw them: cold reads what warm reads
    cold = client.get(url).content.decode()
    assert _without_tokens(cold) == _without_tokens(expected)
    assert runs.paired_verdicts(first, second) == computed


def test_the_migration_runs_over_a_database_that_holds_finished_runs(version):
    """Migrating from 0020 with runs stored: the columns and indexes (0021), then the fill
    (0022; on PostgreSQL no index may be made in the transaction that updated the table)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    first = _run(version)
    stored = {i.pk: (i.place, i.state_id) for i in first.items.all()}
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes("questions")
    try:
        executor.migrate([("questions", "0020_run_reports")])
        executor = MigrationExecutor(connection)
        executor.migrate([("questions", "0022_fill_item_place_state")])
    finally:
        MigrationExecutor(connection).migrate(latest)
    assert {i.pk: (i.place, i.state_id) for i in BatchItem.objects.filter(run=first)} == stored
