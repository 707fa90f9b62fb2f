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

from questions import metrics

log = logging.getLogger("questions.batches")


def summary_rows(run: Any):
    """A run's items as `metrics.summarize` reads them (not the states' contents): a control's
    real calls (variant 0) only, as its report counts them."""
    return run.items.filter(variant=0).values_list(
        "pk", "status", "sample_state__expected", "answers"
    )


def store_summary(run: Any, item_model: Any = None) -> metrics.Summary:
    """Work out a finished run's summary and store it on the run and its items: a query for
    the items, one update per distinct miss count, one for the run; then its reports
    (`store_reports`). `item_model` is the historical BatchItem model of the migration that
    filled the summaries of older runs (which stores no report: the reports came later)."""
    live = item_model is None
    if item_model is None:
        from questions.models import BatchItem as item_model

        # one read of the items for the summary and the reports alike
        items = list(
            run.items.filter(variant=0).values_list(
                "pk", "status", "sample_state__name", "sample_state__tags",
                "sample_state__expected", "answers",
            )
        )  # fmt: skip
        rows = [(pk, status, expected, answers) for pk, status, _, _, expected, answers in items]
        answered = [row[2:] for row in items if row[1] == item_model.Status.ANSWERED]
    else:
        rows, answered = summary_rows(run), None
    summary = metrics.summarize(rows, threshold=run.threshold)
    by_count: dict[int, list[int]] = defaultdict(list)
    for pk, misses in summary.misses.items():
        by_count[misses].append(pk)
    for misses, pks in by_count.items():
        for start in range(0, len(pks), 500):  # SQLite caps a statement's parameters
            item_model.objects.filter(pk__in=pks[start : start + 500]).update(misses=misses)
    if live:  # the migration that added the places fills those of older runs
        store_places(run)
    type(run).objects.filter(pk=run.pk).update(
        checked=summary.checked, passed=summary.passed, failed_states=summary.failed_states
    )
    run.checked, run.passed = summary.checked, summary.passed
    run.failed_states = summary.failed_states
    if live:
        store_reports(run, rows=answered)
    return summary


def store_places(run: Any, item_model: Any = None) -> None:
    """Store each of a finished run's items' place in its results table
    (`selectors.results_order`, by the misses just stored): one UPDATE that numbers the items in
    that order (a window over it), so the database sorts them as a page would, and writes them
    in one statement (one UPDATE per item kept PostgreSQL busy 0.13 s at 1,000 items: the
    longest step of a finishing run). `item_model`: the historical BatchItem model of the
    migration that filled the places of older runs."""
    from django.db import connections, router
    from django.db.models import Window
    from django.db.models.functions import RowNumber

    from questions import selectors

    if item_model is None:
        from questions.models import BatchItem as item_model
    ordered = selectors.results_order(item_model.objects.filter(run_id=run.pk, variant=0))
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


def store_reports(run: Any, report_model: Any = None, rows: list | None = None) -> None:
    """Store a finished run's test report, and, for a plain run, the run set against the
    latest finished run of its version's review baseline: what the run page and the review
    page read, once, whatever the number of answers. Worked out again (replaced) if asked
    twice. `report_model` is the historical RunReport model of the migration that filled the
    test reports of older runs (it stores no comparison). `rows`: the run's answered items as
    `selectors.run_item_rows` reads them, when they were read already."""
    from questions import selectors

    if report_model is None:
        from questions.models import RunReport as report_model
    rows = selectors.run_item_rows(run) if rows is None else rows
    data = metrics.report_as_json(selectors.run_report_computed(run, rows))
    data["tags"] = [
        [s.tag, s.states, s.checked, s.passed] for s in selectors.run_tag_slices_computed(run, rows)
    ]
    report_model.objects.update_or_create(run_id=run.pk, against=None, defaults={"data": data})
    if report_model is not selectors.RunReport or run.kind != run.PLAIN:
        return  # a migration fills the test reports only; a control is not reviewed
    try:
        baseline, _name = selectors.review_baseline(run.version)
        base = selectors.latest_run(baseline)
        if base is None or base.pk == run.pk:
            return
        delta = selectors.run_delta_computed(
            base, run, run.version.document, selectors.REVIEW_FLIPS_SHOWN
        )
    except Exception:  # the review works it out when read; the run is finished all the same
        log.exception("run %s: its comparison with the review baseline was not stored", run.pk)
        return
    report_model.objects.update_or_create(
        run_id=run.pk,
        against_id=base.pk,
        defaults={
            "data": metrics.delta_as_json(delta, selectors.REVIEW_FLIPS_SHOWN)
            | {
                "types": selectors.compared(run.version.document),
                "paired": selectors.paired_as_json(selectors.paired_verdicts_computed(base, run)),
            }
        },
    )
