"""Batch runs: create, cancel, and every write of their execution — taking a run, claiming an
item, recording its outcome, finishing the run — plus the django-tasks task that executes one.

Items are claimed in chunks (SELECT … FOR UPDATE SKIP LOCKED, then a conditional UPDATE), so no
state is asked twice by two executors, and their outcomes are written in small batches, one
transaction each, by the one thread that holds the run's database connection; the provider
calls go out from the engine's asyncio loop. On PostgreSQL a run is enqueued as one task per
`batches.WORKER_CALLS` calls at a time (`task_widths`): each task a `db_worker` takes joins the
run, claims, asks and writes its share, and the last executor to end stores the run's end and
its summary (`_end`); on SQLite (one writer) a run is one task, executed alone. Every executor
keeps the run's heartbeat fresh; a run whose heartbeat is older than
`DECISIONS__BATCH_STALE_SECONDS` has no executor left alive: idle workers look for such runs
(`batch_sweep_stale`, from the console's `db_worker`) and queue them again, and the next
executor takes it over: its half-done items go back to pending and the run goes on. A worker
asked to stop (SIGTERM) hands its share back at once (`_end`). One state's failure, however
unexpected, fails that item alone. The concurrency and retry engine is `questions.batches`.
"""

from __future__ import annotations

import logging
import math
import time
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from questions import roles
from questions.core import attribution, check, gate, spec
from questions.engine import backends
from questions.models import BatchItem, BatchRun, SampleStateRevision, Version
from questions.services import budget
from questions.services.audit import audit_record
from questions.services.batch_execution import batch_run_task, is_stale, task_widths
from questions.services.budget import budget_reserve
from questions.services.errors import (
    Conflict,
    Invalid,
    NotConfigured,
    model_name,
    require,
)
from questions.services.summaries import store_summary
from questions.services.versions import InvalidContent, limits

log = logging.getLogger("questions.batches")

RUNNERS_ONLY = "Only authors and reviewers run batches."
# the run defaults, owned by the model
DEFAULT_CONCURRENCY = BatchRun.DEFAULT_CONCURRENCY
MAX_CONCURRENCY = BatchRun.MAX_CONCURRENCY
DEFAULT_THRESHOLD = BatchRun.DEFAULT_THRESHOLD


def batch_create(
    *,
    version: Version,
    backend: str,
    user: Any,
    concurrency: int = DEFAULT_CONCURRENCY,
    tag: str = "",
    threshold: float = DEFAULT_THRESHOLD,
    model: str | None = None,
    max_attempts: int | None = None,
    enqueue: bool = True,
    variants: int = 1,
    live_questions: list[str] | None = None,
    labelled: bool = False,
    sample_states: list[Any] | None = None,
    **kind: Any,
) -> BatchRun:
    """A run of `version` over the set's sample states (those tagged `tag`, if given), each at
    its current revision. Enqueued for a worker after the commit unless `enqueue` is off.
    A control or a drift run (`questions.services.controls`) names its `kind` fields and how
    many times each state is asked (`variants`). With `live_questions`, only those questions
    go to the backend; the others are replayed from its recordings (a try across states,
    `questions.services.tries`, which names its `baseline`). With `labelled`, only the states
    that expect an answer of one of the version's questions (a gate's, `services.gates`).
    `sample_states` names the states to run in place of the set's (an attribution: one state)."""
    require(user, roles.may_ask_live, RUNNERS_ONLY, on=version.question_set)
    chosen = _runnable(backend)
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise Invalid(f"Concurrency is 1 to {MAX_CONCURRENCY}, not {concurrency}.")
    if not 0 < threshold < 1:
        raise Invalid(f"The noul threshold lies strictly between 0 and 1, not {threshold}.")
    tag_limit = BatchRun._meta.get_field("tag").max_length
    if len(tag) > tag_limit:
        raise Invalid(f"A run's tag has {len(tag)} characters; at most {tag_limit}.")
    result = check.validate(version.document, limits=limits(), lints=False)
    if result.document is None:
        raise InvalidContent("version", result.errors)
    questions = result.document.questions
    if live_questions is not None and not set(live_questions) <= set(questions):
        raise Invalid("Only questions of the version are asked live.")
    states = list(
        version.question_set.sample_states.all() if sample_states is None else sample_states
    )
    if tag:
        states = [s for s in states if tag in s.tags]
    if labelled:
        states = [s for s in states if labelled_for(s.expected, questions)]
    if not states:
        raise Invalid(
            f"{version.question_set.slug} has no sample states"
            + (f" tagged {tag}" if tag else "")
            + (" with expected answers" if labelled else "")
            + " to run."
        )
    current = {s.pk: s.revision for s in states}
    revisions = {
        r.sample_state_id: r
        for r in SampleStateRevision.objects.filter(sample_state__in=states)
        if r.revision == current[r.sample_state_id]
    }
    return _new_run(
        version=version,
        backend=backend,
        model=model_name(model or chosen.default_model()),
        concurrency=concurrency,
        max_attempts=max_attempts or settings.DECISIONS_BATCH_ATTEMPTS,
        threshold=threshold,
        tag=tag,
        user=user,
        revisions=[revisions[s.pk] for s in states],
        enqueue=enqueue,
        variants=variants,
        live_questions=live_questions,
        question_hashes={qid: q.sha256 for qid, q in questions.items()},
        **kind,
    )


def labelled_for(expected: dict[str, Any] | None, questions: dict[str, spec.Question]) -> bool:
    """Whether a sample state's expected answers name one of `questions`."""
    return any(qid in questions for qid in expected or {})


def _runnable(backend: str) -> backends.Backend:
    """The backend a run goes through: a known name, configured when it is live."""
    try:
        chosen = backends.get(backend)
    except backends.DecisionError as exc:
        raise Invalid(exc.detail, code="unknown_backend") from None
    if chosen.live and not chosen.configured():
        raise NotConfigured(chosen.missing_configuration())
    return chosen


def batch_rerun_failed(*, run: BatchRun, user: Any, enqueue: bool = True) -> BatchRun:
    """A new run of `run`'s version, backend, model, concurrency, attempts and threshold over
    the very sample-state revisions that failed in it (not their current revisions: the new run
    answers what the first one could not). It points back at `run` (`rerun_of`). `Conflict`
    while `run` has not finished; `Invalid` when no state of it failed."""
    require(user, roles.may_ask_live, RUNNERS_ONLY, on=run.question_set)
    if not run.finished:
        raise Conflict(
            f"Run {run.pk} is still {run.status}; re-run its failed states once it has finished."
        )
    if run.kind != "run":  # a control's, a drift's or an attribution's report: all its calls
        raise Invalid(f"Run {run.pk} is a {run.kind} run: start it again as a whole.")
    failed = [
        item.sample_state
        for item in run.items.filter(status=BatchItem.Status.FAILED).select_related("sample_state")
    ]
    if not failed:
        raise Invalid(f"No state failed in run {run.pk}; there is nothing to re-run.")
    _runnable(run.backend)
    return _new_run(
        version=run.version,
        backend=run.backend,
        model=run.model,
        concurrency=run.concurrency,
        max_attempts=run.max_attempts,
        threshold=run.threshold,
        tag=run.tag,
        user=user,
        revisions=failed,
        rerun_of=run,
        live_questions=run.live_questions,
        question_hashes=run.question_hashes,
        baseline=run.baseline,
        enqueue=enqueue,
    )


def _new_run(
    *,
    version: Version,
    revisions: list[SampleStateRevision],
    user: Any,
    enqueue: bool,
    variants: int = 1,
    **fields: Any,
) -> BatchRun:
    """A queued run with an item per revision (per revision and variant: a control), enqueued
    for a worker after the commit; refused first when its calls would pass the team's daily
    budget (`budget.OverBudget`)."""
    with transaction.atomic():
        if budget.calls_through(fields["backend"]):
            budget_reserve(
                team=version.question_set,
                calls=len(revisions) * variants,
                what=_what(fields.get("kind", "run"), fields.get("live_questions")),
            )
        run = BatchRun.objects.create(
            question_set=version.question_set,
            version=version,
            created_by=roles.recorded_as(user),
            **fields,
        )
        BatchItem.objects.bulk_create(
            BatchItem(run=run, sample_state=r, state_id=r.sample_state_id, variant=v)
            for r in revisions
            for v in range(variants)
        )
        audit_record(
            action="run.started",
            actor=user,
            obj=run,
            question_set=version.question_set,
            detail={
                "kind": run.kind,
                "backend": run.backend,
                "version": version.number,
                "states": len(revisions),
                "calls": len(revisions) * variants,
            },
        )
        if enqueue:
            transaction.on_commit(lambda: _enqueue(run))
    return run


#: a drift run's kind (`services.controls`)
DRIFT = "drift"

#: what a refusal calls a run of each kind (a control's kind is one of `core.controls.KINDS`)
RUN_WORDS = {
    "run": "This run",
    attribution.KIND: "This attribution",
    gate.KIND: "This gate's run",
    DRIFT: "This drift run",
}


def _what(kind: str, live_questions: list[str] | None) -> str:
    if kind == "run" and live_questions is not None:
        return "This try"
    return RUN_WORDS.get(kind, "This control")


def _enqueue(run: BatchRun) -> None:
    """Queue a run's tasks (`task_widths`)."""
    for width in task_widths(run.concurrency):
        batch_run_task.enqueue(run.pk, width)


def batch_cancel(*, run: BatchRun, user: Any) -> BatchRun:
    """Ask the run to stop: no new state is asked; calls in flight finish and are kept."""
    require(user, roles.may_ask_live, RUNNERS_ONLY, on=run.question_set)
    if not run.finished:
        audit_record(action="run.cancelled", actor=user, obj=run, question_set=run.question_set)
        BatchRun.objects.filter(pk=run.pk).update(cancel_requested=True)
        # still queued in the database (`run` may be older: a worker may have taken it since,
        # and then its executor ends it, with what its calls in flight bring back)
        with transaction.atomic():
            queued = BatchRun.objects.filter(pk=run.pk, status=BatchRun.Status.QUEUED).update(
                status=BatchRun.Status.CANCELLED, finished_at=timezone.now()
            )
            if queued:
                run.items.filter(status=BatchItem.Status.PENDING).update(
                    status=BatchItem.Status.CANCELLED
                )
        run.refresh_from_db()
        if queued:
            store_summary(run)  # finished before it started: its (empty) summary, stored now
    return run


def batch_resume_if_stale(run: BatchRun) -> bool:
    """Queue `run`'s tasks again when its executors went quiet; whether they had."""
    if run.status == BatchRun.Status.RUNNING and is_stale(run):
        _enqueue(run)
        return True
    return False


def sweep_seconds() -> float:
    """How often a worker looks for runs whose worker died: often enough that one is taken
    over within a few seconds of going stale."""
    return min(5.0, max(0.2, settings.DECISIONS_BATCH_STALE_SECONDS / 4))


def batch_sweep_stale(queued: dict[int, float] | None = None) -> list[int]:
    """Queue again every running run whose worker went quiet; the ids queued. `queued` (run id
    → when) remembers what this caller queued, so a run that waits for a free worker is queued
    again only once per stale window rather than on every sweep. Taking a run stays
    at-most-once (`_take`), so a run queued twice is executed once."""
    queued = {} if queued is None else queued
    limit = timedelta(seconds=settings.DECISIONS_BATCH_STALE_SECONDS)
    now = time.monotonic()
    stale = BatchRun.objects.filter(status=BatchRun.Status.RUNNING).filter(
        Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=timezone.now() - limit)
    )
    resumed = []
    for run in stale:
        if now - queued.get(run.pk, -math.inf) < limit.total_seconds():
            continue
        if batch_resume_if_stale(run):
            log.warning("run %s: its worker went quiet; queued to be taken over", run.pk)
            queued[run.pk] = now
            resumed.append(run.pk)
    return resumed
