""" "Changes only" between runs: the database finds the states whose items decide otherwise
(`BatchItem.decided`), and the grid shows the same rows, page by page, as reading every
state did."""

from __future__ import annotations

import pytest
from django.http import QueryDict
from django.utils import timezone

from questions import services
from questions.core import metrics
from questions.models import BatchItem, BatchRun, RunMove, RunPairing
from questions.selectors import comparison
from questions.selectors import runs as runs_module
from questions.services.summaries import store_decided, store_moves, store_summary
from questions.views.compare import selection_of
from tests import factories
from tests.helpers import COMPARE_DOC as DOC
from tests.helpers import answers, desk

pytestmark = pytest.mark.django_db

STATES = 40


def base_answers(i: int) -> dict:
    return answers(desk("billing", {"billing": 0.7, "tech": 0.3}), 0.6, 1.2)


def later_answers(i: int) -> dict | None:
    """What the second run answered about state i: some flip, some move without flipping."""
    if i == 17:
        return None  # no item
    chosen = "tech" if i % 7 == 0 else "billing"
    found = answers(
        desk(chosen, {"billing": 0.6, "tech": 0.4} if i % 5 == 0 else {"billing": 0.7}),
        0.4 if i % 11 == 0 else 0.7 if i % 5 == 0 else 0.6,
        1.6 if i % 13 == 0 else 1.2,
    )
    if i == 31:  # the score is a noul in this run: a change of type
        found["level"] = {"type": "noul", "noul": 0.9}
    return found


def third_answers(i: int) -> dict:
    return answers(desk("other" if i % 9 == 4 else "billing", {"billing": 0.7}), 0.6, 1.2)


def finished_run(qs, version, revisions, answers_of) -> BatchRun:
    run = BatchRun.objects.create(
        question_set=qs,
        version=version,
        backend="recorded",
        model="m",
        status="done",
        finished_at=timezone.now(),
    )
    for i, revision in enumerate(revisions):
        found = answers_of(i)
        if found is not None:
            BatchItem.objects.create(
                run=run, sample_state=revision, status="answered", answers=found
            )
    store_decided(run)
    return run


@pytest.fixture
def three_runs():
    writer = factories.author("writer")
    qs = factories.question_set("moved", owner=writer, doc=DOC)
    revisions = [
        services.sample_state_create(
            question_set=qs,
            name=f"s{i:03d}",
            state={"n": i},
            author=writer,
            expected={"desk": "billing"},
        ).current_revision()
        for i in range(STATES)
    ]
    version = services.open_draft(qs)
    runs = [
        finished_run(qs, version, revisions, answers_of)
        for answers_of in (base_answers, later_answers, third_answers)
    ]
    failed = BatchItem.objects.get(run=runs[1], sample_state=revisions[23])
    BatchItem.objects.filter(pk=failed.pk).update(status="failed", answers=None, decided=None)
    unknown = BatchItem.objects.get(run=runs[1], sample_state=revisions[29])
    BatchItem.objects.filter(pk=unknown.pk).update(decided=None)  # not worked out
    return qs, runs


def pages(qs, query: str) -> list[tuple[list[comparison.Row], int, int | None]]:
    """Every page of the grid: its rows, how many states it shows, where the next starts."""
    out, start = [], 0
    while start is not None:
        selection = selection_of(QueryDict(f"{query}&start={start}"), qs)
        _columns, rows = comparison.build(qs, selection, qs.owner)
        out.append((rows, selection.shown, selection.next_start))
        start = selection.next_start
    return out


@pytest.fixture(params=["probed", "recorded"])
def runs_as_finished(request, three_runs):
    """The three runs as the comparison finds them: with nothing recorded (it probes the
    items), or with the moves each recorded when it finished (`store_moves`)."""
    qs, runs = three_runs
    if request.param == "recorded":
        for run in runs:
            store_moves(run)
    return qs, runs


@pytest.mark.parametrize("columns", [2, 3])
def test_changes_only_shows_the_rows_reading_every_state_showed(
    runs_as_finished, monkeypatch, columns
):
    qs, runs = runs_as_finished
    query = "&".join(f"col=run:{run.pk}" for run in runs[:columns]) + "&filter=changes"
    monkeypatch.setattr(comparison, "PAGE_STATES", 4)
    found = pages(qs, query)
    with monkeypatch.context() as every_state:  # as before: no state left to the database
        every_state.setattr(comparison, "_moved", lambda *args: None)
        before = pages(qs, query)
    assert found == before
    assert len(found) > 3  # several pages, each cut where reading every state cut it
    changed = {row.state.name for rows, *_ in found for row in rows}
    assert {"s000", "s007", "s011", "s013", "s031"} <= changed
    assert not changed & {"s005", "s017", "s023", "s029"}  # moved, absent, failed, unknown


def test_the_database_leaves_out_the_states_that_decide_alike(runs_as_finished):
    qs, runs = runs_as_finished
    query = f"col=run:{runs[0].pk}&col=run:{runs[1].pk}&filter=changes"
    selection = selection_of(QueryDict(query), qs)
    states, columns = comparison._open(qs, selection, qs.owner)
    moved = {state.name for state in comparison._moved(states, columns, selection)}
    flipped = {f"s{i:03d}" for i in range(STATES) if i % 7 == 0 or i % 11 == 0 or i % 13 == 0}
    assert moved == flipped | {"s031", "s029"}  # a change of type; one not worked out
    # another threshold, or a column of recordings: the database cannot tell
    assert (
        comparison._moved(states, columns, selection_of(QueryDict(query + "&threshold=0.3"), qs))
        is None
    )


def test_a_finished_run_records_its_moves_against_the_runs_before_it(three_runs):
    _qs, runs = three_runs
    for run in runs:
        store_summary(run)
    pairs = set(RunPairing.objects.values_list("first_id", "second_id"))
    assert pairs == {(runs[0].pk, runs[1].pk), (runs[0].pk, runs[2].pk), (runs[1].pk, runs[2].pk)}
    first_two = RunPairing.objects.get(first=runs[0], second=runs[1])
    recorded = set(first_two.moves.values_list("state__name", flat=True))
    probed = set(
        runs_module.decides_otherwise(runs[1].pk, [runs[0].pk]).values_list(
            "state__name", flat=True
        )
    )
    assert recorded == probed and "s007" in recorded and "s005" not in recorded
    store_summary(runs[1])  # finished again (continued): its pairs are recorded again
    assert RunPairing.objects.count() == 3
    assert (
        set(
            RunPairing.objects.get(
                pk__gt=first_two.pk, first=runs[0], second=runs[1]
            ).moves.values_list("state__name", flat=True)
        )
        == recorded
    )
    runs[2].delete()  # a deleted run takes its pairs with it
    assert RunPairing.objects.count() == 1
    assert RunMove.objects.filter(pairing__first=runs[0], pairing__second=runs[1]).count() == len(
        recorded
    )


def test_changes_only_against_a_run_recorded_with_some_but_not_all_pairs_probes(three_runs):
    qs, runs = three_runs
    store_moves(runs[1])  # paired with run 0 only (run 2 had not finished)
    RunPairing.objects.filter(second=runs[2]).delete()
    query = "&".join(f"col=run:{run.pk}" for run in runs) + "&filter=changes"
    selection = selection_of(QueryDict(query), qs)
    states, columns = comparison._open(qs, selection, qs.owner)
    moved = comparison._moved(states, columns, selection)
    assert "runmove" not in str(moved.query).lower()  # one pair missing: it probes the items
    store_moves(runs[2])
    recorded = comparison._moved(states, columns, selection)
    assert "runmove" in str(recorded.query).lower()
    assert {s.name for s in recorded} == {s.name for s in moved}


def test_decided_is_what_flipped_reads():
    one = answers(desk("billing", {"billing": 0.7}), 0.6, 1.49)
    same = answers(desk("billing", {"billing": 0.9, "tech": 0.1}), 0.51, 0.5)
    other = answers(desk("billing", {"billing": 0.7}), 0.49, 1.2)
    assert metrics.decided(one) == metrics.decided(same)  # nearest level 1, true, billing
    assert metrics.decided(one) != metrics.decided(other)  # the noul crossed 0.5
    assert metrics.decided(one, threshold=0.55) != metrics.decided(same, threshold=0.55)
    assert metrics.decided({"desk": {"choice": "billing"}}) is None  # no type: unknown
    assert len(metrics.decided(one)) == 32  # short enough for an index to hold
