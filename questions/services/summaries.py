"""A finished run's summary, stored on it: checked and passed pairs (its pass rate), failed
states, and per item the answers that missed the expected one (the run report lists failures
first by it) and its place in that list; and its reports (`RunReport`): the test report the
run page shows and the comparison (with its paired verdicts) the review of its version shows.
One call at the end of a run (`batch_execute`); the migrations that added the fields and the
reports filled the runs finished before."""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from django.db import transaction
from django.db.models import Q

from questions.core import deltas, metrics
from questions.services import bulk, labels

log = logging.getLogger("questions.batches")


def store_summary(
    run: Any, item_model: Any = None, tally: metrics.Tally | None = None
) -> metrics.Summary:
    """Work out a finished run's summary and store it on the run and its items (each answered
    item's misses, where the stored one differs: a run writes them with its answers), then
    its items' places (`store_places`) and its reports (`store_reports`). `tally`: what the
    run's execution added up as it wrote its answers (`metrics.Tally`), used when it counted
    every answered item the database holds (a run taken over from another worker counted only
    its own); otherwise the answers are read and added up here. `item_model` is the historical
    BatchItem model of the migration that filled the summaries of older runs (which stores no
    place and no report: they came later)."""
    from questions.models import BatchItem
    from questions.selectors import runs

    live = item_model is None
    item_model = item_model or BatchItem
    # a control's real calls (variant 0) only, as its report counts them
    items = list(run.items.filter(variant=0).values_list("pk", "status", "misses"))
    answered = {pk for pk, status, _ in items if status == BatchItem.Status.ANSWERED}
    if tally is None or tally.misses.keys() != answered:
        tally = runs.run_tally(run)
    summary = tally.summary(sum(status == BatchItem.Status.FAILED for _, status, _ in items))
    stored = {pk: misses for pk, _, misses in items}
    by_count: dict[int, list[int]] = defaultdict(list)
    for pk, misses in summary.misses.items():
        if stored[pk] != misses:
            by_count[misses].append(pk)
    for misses, pks in by_count.items():
        for start in range(0, len(pks), 500):  # SQLite caps a statement's parameters
            item_model.objects.filter(pk__in=pks[start : start + 500]).update(misses=misses)
    if live:  # the migrations that added the places and `decided` fill those of older runs
        store_places(run)
        store_decided(run)
    type(run).objects.filter(pk=run.pk).update(
        checked=summary.checked, passed=summary.passed, failed_states=summary.failed_states
    )
    run.checked, run.passed = summary.checked, summary.passed
    run.failed_states = summary.failed_states
    if live:
        store_reports(run, tally=tally)
        store_moves(run)
        # the answers the labelling queue ranks by have changed: ranked again by a worker (it
        # reads every recorded answer of the set, which the run's end does not)
        set_id = run.question_set_id
        transaction.on_commit(lambda: labels.label_queue_task.enqueue(set_id))
    return summary


def store_decided(run: Any, item_model: Any = None) -> None:
    """Store what each answered real call (variant 0) of a run decides (`metrics.decided`)
    where it was not written with its answers (a run's calls write it as they record; items
    written otherwise have none): their ids first, then only their answers, so a run whose
    calls wrote it reads no answer. `item_model`: the historical BatchItem model of the
    migration that filled those of older runs."""
    if item_model is None:
        from questions.models import BatchItem as item_model
    missing = list(
        item_model.objects.filter(
            run_id=run.pk, variant=0, status="answered", decided=None
        ).values_list("pk", flat=True)
    )
    rows = []
    for start in range(0, len(missing), 500):  # SQLite caps a statement's parameters
        chunk = item_model.objects.filter(pk__in=missing[start : start + 500])
        for pk, answers in chunk.values_list("pk", "answers"):
            found = metrics.decided(answers)
            if found is not None:
                rows.append({"id": pk, "decided": found})
    bulk.update(item_model, ["decided"], rows)


#: how many of a set's other finished runs a finishing run records its moves against (the
#: newest): "changes only" against an older one probes the items as before (`comparison._moved`)
PAIRED_RUNS = 20


def store_moves(run: Any) -> None:
    """Record, against each of the set's newest other finished runs (`PAIRED_RUNS`), the
    states whose real calls decide otherwise between the two (`runs.decides_otherwise`): one
    query a pair, so "changes only" in the comparison reads a few rows, not every state's items
    (`RunPairing`, `RunMove`). A run finished again (continued) records its pairs again."""
    from questions.models import BatchRun, RunMove, RunPairing
    from questions.selectors import runs

    others = list(
        BatchRun.objects.filter(
            question_set_id=run.question_set_id,
            status__in=[BatchRun.Status.DONE, BatchRun.Status.CANCELLED, BatchRun.Status.FAILED],
        )
        .exclude(pk=run.pk)
        .order_by("-pk")
        .values_list("pk", flat=True)[:PAIRED_RUNS]
    )
    with transaction.atomic():
        RunPairing.objects.filter(Q(first_id=run.pk) | Q(second_id=run.pk)).delete()
        for other in others:
            first, second = min(run.pk, other), max(run.pk, other)
            pairing = RunPairing.objects.create(first_id=first, second_id=second)
            moved = runs.decides_otherwise(other, [run.pk]).values_list("state_id", flat=True)
            RunMove.objects.bulk_create(
                [RunMove(pairing=pairing, state_id=s) for s in moved.iterator() if s is not None],
                batch_size=500,
            )


def store_places(run: Any, item_model: Any = None) -> None:
    """Store each of a finished run's items' place in its results table
    (`runs.results_order`, by the misses just stored): one UPDATE that numbers the items in
    that order (a window over it), so the database sorts them as a page would, and writes them
    in one statement (one UPDATE per item kept PostgreSQL busy 0.13 s at 1,000 items: the
    longest step of a finishing run). `item_model`: the historical BatchItem model of the
    migration that filled the places of older runs."""
    from django.db import connections, router
    from django.db.models import Window
    from django.db.models.functions import RowNumber

    from questions.selectors import runs

    if item_model is None:
        from questions.models import BatchItem as item_model
    ordered = runs.results_order(item_model.objects.filter(run_id=run.pk, variant=0))
    numbered = ordered.annotate(
        n=Window(RowNumber(), order_by=list(ordered.query.order_by))
    ).values_list("pk", "n")
    select, params = numbered.order_by().query.sql_with_params()
    connection = connections[router.db_for_write(item_model)]
    quote = connection.ops.quote_name
    meta = item_model._meta
    table, pk, place = (
        quote(meta.db_table),
        quote(meta.pk.column),
        quote(meta.get_field("place").column),
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET {place} = numbered.{quote('n')} - 1 "
            f"FROM ({select}) AS numbered WHERE {table}.{pk} = numbered.{quote('pk')}",
            params,
        )


def store_reports(run: Any, report_model: Any = None, tally: metrics.Tally | None = None) -> None:
    """Store a finished run's test report (with the misses it lists, the most confidently wrong
    first, each named by its state), and, for a plain run, the run set against the
    latest finished run of its version's review baseline: what the run page and the review
    page read, once, whatever the number of answers. Worked out again (replaced) if asked
    twice. `report_model` is the historical RunReport model of the migration that filled the
    test reports of older runs (it stores no comparison). `tally`: the run's answered items
    added up (`runs.run_tally`), when they were already."""
    from questions.models import RunReport
    from questions.selectors import review, runs, scorecard

    report_model = report_model or RunReport
    tally = runs.run_tally(run) if tally is None else tally
    data = metrics.report_as_json(tally.report())
    data["tags"] = [[s.tag, s.states, s.checked, s.passed] for s in tally.slices()]
    data["misses"] = [m.as_row() for m in runs.named_misses(tally.misses_listed())]
    if report_model is RunReport and run.kind in scorecard.SCORECARD_CONTROLS:
        found = scorecard.control_findings(
            run.kind, run.threshold, scorecard.control_calls([run.pk])[run.pk]
        )
        data["findings"] = scorecard.findings_as_json(found)  # what the scorecard shows of it
    report_model.objects.update_or_create(run_id=run.pk, against=None, defaults={"data": data})
    if report_model is not RunReport or run.kind != run.PLAIN:
        return  # a migration fills the test reports only; a control is not reviewed
    try:
        baseline, _name = review.review_baseline(run.version)
        base = runs.latest_run(baseline)
        if base is None or base.pk == run.pk:
            return
        delta = runs.run_delta_computed(base, run, run.version.document, review.REVIEW_FLIPS_SHOWN)
    except Exception:  # the review works it out when read; the run is finished all the same
        log.exception("run %s: its comparison with the review baseline was not stored", run.pk)
        return
    report_model.objects.update_or_create(
        run_id=run.pk,
        against_id=base.pk,
        defaults={
            "data": deltas.delta_as_json(delta, review.REVIEW_FLIPS_SHOWN)
            | {
                "types": runs.compared(run.version.document),
                "paired": runs.paired_as_json(runs.paired_verdicts_computed(base, run)),
            }
        },
    )
