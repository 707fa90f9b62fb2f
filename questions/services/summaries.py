"""A finished run's summary, stored on it: checked and passed pairs (its pass rate), failed
states, and per item the answers that missed the expected one (the run report lists failures
first by it). One call at the end of a run (`batch_execute`); the migration that added the
fields filled the runs finished before."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from questions import metrics


def summary_rows(run: Any):
    """A run's items as `metrics.summarize` reads them (not the states' contents): a control's
    real calls (variant 0) only, as its report counts them."""
    return run.items.filter(variant=0).values_list(
        "pk", "status", "sample_state__expected", "answers"
    )


def store_summary(run: Any, item_model: Any = None) -> metrics.Summary:
    """Work out a finished run's summary and store it on the run and its items: a query for
    the items, one update per distinct miss count, one for the run. `item_model` is the
    BatchItem model (a migration passes its historical one)."""
    if item_model is None:
        from questions.models import BatchItem as item_model
    summary = metrics.summarize(summary_rows(run), threshold=run.threshold)
    by_count: dict[int, list[int]] = defaultdict(list)
    for pk, misses in summary.misses.items():
        by_count[misses].append(pk)
    for misses, pks in by_count.items():
        for start in range(0, len(pks), 500):  # SQLite caps a statement's parameters
            item_model.objects.filter(pk__in=pks[start : start + 500]).update(misses=misses)
    type(run).objects.filter(pk=run.pk).update(
        checked=summary.checked, passed=summary.passed, failed_states=summary.failed_states
    )
    run.checked, run.passed = summary.checked, summary.passed
    run.failed_states = summary.failed_states
    return summary
