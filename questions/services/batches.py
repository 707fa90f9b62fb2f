"""Batch runs: create, cancel, and every write of their execution — taking a run, claiming an
item, recording its outcome, finishing the run — plus the django-tasks task that executes one.

Items are claimed in chunks (SELECT … FOR UPDATE SKIP LOCKED, then a conditional UPDATE), so no
state is asked twice by two executors, and their outcomes are written in small batches, one
transaction each, by the one thread that holds the run's database connection; the provider
calls go out from the engine's asyncio loop. An executor keeps the run's heartbeat fresh; a
run whose heartbeat is older than `DECISIONS__BATCH_STALE_SECONDS` belongs to a worker that
died: idle workers look for such runs (`batch_sweep_stale`, from the console's `db_worker`) and
queue them, and the next executor takes it over: its half-done items go back to pending and
the run goes on. A worker asked to stop (SIGTERM) hands its run back at once (`_hand_back`).
On PostgreSQL a wide run is spread over the worker's helper processes (`_execute`,
`questions.processes`): each claims, asks and writes its share of the concurrency, the same way.
One state's failure, however unexpected, fails that item alone. The concurrency and retry
engine is `questions.batches`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent import futures
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Q
from django.utils import timezone
from django_tasks import task

from questions import roles
from questions.core import attribution, controls, invariance, metrics, spec
from questions.engine import backends, batches, processes
from questions.engine.backends import clients
from questions.models import BatchItem, BatchRun, SampleStateRevision, Version
from questions.services import bulk
from questions.services.decisions import (
    decision_backend,
    decision_conclude,
    decision_rows,
    decision_state_refusal,
    decisions_record,
)
from questions.services.errors import (
    Conflict,
    Invalid,
    NotConfigured,
    Refusal,
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
#: the engine's clients kept idle between runs, at most: enough for the widest run
IDLE_CLIENTS = MAX_CONCURRENCY
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
    require(user, roles.may_ask_live, RUNNERS_ONLY)
    chosen = _runnable(backend)
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise Invalid(f"Concurrency is 1 to {MAX_CONCURRENCY}, not {concurrency}.")
    if not 0 < threshold < 1:
        raise Invalid(f"The noul threshold lies strictly between 0 and 1, not {threshold}.")
    tag_limit = BatchRun._meta.get_field("tag").max_length
    if len(tag) > tag_limit:
        raise Invalid(f"A run's tag has {len(tag)} characters; at most {tag_limit}.")
    result = spec.validate(version.document, limits=limits(), lints=False)
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
    require(user, roles.may_ask_live, RUNNERS_ONLY)
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
    for a worker after the commit."""
    with transaction.atomic():
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
        if enqueue:
            transaction.on_commit(lambda: batch_run_task.enqueue(run.pk))
    return run


def batch_cancel(*, run: BatchRun, user: Any) -> BatchRun:
    """Ask the run to stop: no new state is asked; calls in flight finish and are kept."""
    require(user, roles.may_ask_live, RUNNERS_ONLY)
    if not run.finished:
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


# --- execution -----------------------------------------------------------------------------------


def is_stale(run: BatchRun) -> bool:
    """Whether a run's worker has not been heard from for DECISIONS__BATCH_STALE_SECONDS."""
    limit = timedelta(seconds=settings.DECISIONS_BATCH_STALE_SECONDS)
    return run.heartbeat_at is None or timezone.now() - run.heartbeat_at > limit


@transaction.atomic
def _take(run_id: int) -> BatchRun | None:
    """Take a run to execute: a queued one, or a running one whose worker went quiet."""
    run = BatchRun.objects.select_for_update().filter(pk=run_id).first()
    if run is None or run.finished:
        return None
    if run.status == BatchRun.Status.RUNNING and not is_stale(run):
        return None  # another executor is alive
    if run.status == BatchRun.Status.RUNNING:
        log.warning("run %s: its worker went quiet; taking it over", run.pk)
        run.items.filter(status=BatchItem.Status.RUNNING).update(
            status=BatchItem.Status.PENDING, claimed_at=None
        )
    run.status = BatchRun.Status.RUNNING
    run.started_at = run.started_at or timezone.now()
    run.heartbeat_at = timezone.now()
    run.save(update_fields=["status", "started_at", "heartbeat_at"])
    return run


def _claim(run_id: int, n: int) -> list[tuple[int, SampleStateRevision, int]]:
    """Claim up to `n` pending items of a run in one transaction: (item id, its revision with
    the state, what it expects and its tags, its variant). Rows another executor holds are
    skipped (PostgreSQL); SQLite's write lock serializes claims."""
    with transaction.atomic():
        rows = list(
            BatchItem.objects.filter(run_id=run_id, status=BatchItem.Status.PENDING)
            .order_by("pk")
            .select_for_update(skip_locked=True, of=("self",))
            .values_list(
                "pk", "sample_state_id", "sample_state__state_text", "sample_state__expected",
                "sample_state__tags", "variant",
            )[:n]
        )  # fmt: skip
        if rows:
            BatchItem.objects.filter(
                pk__in=[row[0] for row in rows], status=BatchItem.Status.PENDING
            ).update(status=BatchItem.Status.RUNNING, claimed_at=timezone.now())
    return [
        (pk, SampleStateRevision(pk=revision, state_text=text, expected=e, tags=t), variant)
        for pk, revision, text, e, t, variant in rows
    ]


class _Execution:
    """One run's execution: what the engine's claim, ask, write and tick do for it."""

    def __init__(self, run: BatchRun, questions: dict[str, spec.Question], on_progress):
        self.run = run
        live = run.live_questions
        # a try asks the changed questions only: the others come from recordings (`_replay`)
        self.questions = {q: v for q, v in questions.items() if live is None or q in live}
        self.replayed = {q: v for q, v in questions.items() if q not in self.questions}
        self.order = list(questions)
        self.recordings: dict[int, dict[str, Any]] = {}
        self.on_progress = on_progress
        self.user = run.created_by or roles.OPERATOR
        self.next_beat = time.monotonic() + batches.HEARTBEAT_SECONDS
        self.calls = self.failed_calls = 0  # calls asked, and those that failed (retries too)
        self.tally = metrics.Tally(run.threshold)  # the answers written, added up
        self.variants: dict[int, dict[str, spec.Question]] = {}  # `_questions`
        self.started = time.monotonic()
        self.lost = False  # a helper died: what it held is asked again (`_execute`)
        self.processes = 1  # this one, and the helpers that took a share (`_joined`)
        try:
            chosen = decision_backend(backend=run.backend, user=self.user, model=run.model)
        except Refusal as exc:  # e.g. the run's author may no longer ask: each state says so
            chosen = backends.Outcome(
                backend=run.backend,
                model_asked=run.model,
                live=False,
                error=backends.DecisionError(exc.status, str(exc)),
            )
        self.refused = chosen if isinstance(chosen, backends.Outcome) else None
        self.backend, self.model = (None, run.model) if self.refused else chosen

    @property
    def asynchronous(self) -> bool:
        """A backend with `aask` (every HTTP wire) is asked on the engine's asyncio loop; any
        other — a replay, which reads the database — in this thread, one state at a time."""
        return self.refused is None and hasattr(self.backend, "aask")

    def claim(self, n: int) -> list[tuple[int, SampleStateRevision, int]]:
        claimed = _claim(self.run.pk, n)
        if self.replayed and claimed:
            self.recordings.update(_replay(self.run, self.replayed, self.model, claimed))
        return claimed

    def _questions(self, variant: int) -> dict[str, spec.Question]:
        """The questions a variant asks: as written, or a control's (`questions.controls`),
        worked out once per variant for as long as the execution lasts (a `functools.cache`
        would keep every execution of the process alive, with its run and its tally)."""
        if variant not in self.variants:
            self.variants[variant] = self._variant_questions(variant)
        return self.variants[variant]

    def _variant_questions(self, variant: int) -> dict[str, spec.Question]:
        if self.run.kind == invariance.KIND:
            return invariance.asked(self.questions, invariance.variants(self.questions)[variant])
        if self.run.kind not in controls.KINDS:
            return self.questions
        return controls.variant_questions(
            self.questions, self.run.kind, self.run.control_seed, variant
        )

    @functools.cached_property
    def attributing(self) -> attribution.Plan | None:
        """An attribution run's plan: what each of its variants leaves out."""
        if self.run.kind != attribution.KIND or self.run.attribution is None:
            return None
        return attribution.Plan.from_json(self.run.attribution)

    def _asked(self, item: tuple[int, SampleStateRevision, int]) -> backends.Outcome | backends.Ask:
        """What is asked about one state, or the outcome that refuses it (nothing is sent)."""
        if self.refused:
            return self.refused
        state = item[1].state  # parsed from its text on every read
        if self.attributing is not None:  # the questions attributed, one part left out
            chosen = {qid: self.questions[qid] for qid in self.attributing.questions}
            part = self.attributing.part_of(item[2])
            questions, state = attribution.leave_out(chosen, state, part)
        else:
            questions = self._questions(item[2])
        refused = decision_state_refusal(backend=self.run.backend, model=self.model, state=state)
        return refused or backends.Ask(questions=questions, state=state, model=self.model)

    async def ask_async(
        self, item: tuple[int, SampleStateRevision, int], client
    ) -> backends.Outcome:
        asked = self._asked(item)
        if isinstance(asked, backends.Outcome):
            return asked
        return self._concluded(await self.backend.aask(asked, client), asked)

    def ask_sync(self, item: tuple[int, SampleStateRevision, int]) -> backends.Outcome:
        asked = self._asked(item)
        if isinstance(asked, backends.Outcome):
            return asked
        return self._concluded(self.backend.ask(asked), asked)

    def _concluded(self, outcome: backends.Outcome, asked: backends.Ask) -> backends.Outcome:
        """A call's outcome, concluded and counted: the run logs one line at its end, and
        each failed call its own."""
        self.calls += 1
        self.failed_calls += outcome.error is not None
        return decision_conclude(outcome, asked, logged=False)

    def pipeline(
        self,
        concurrency: int,
        *,
        tick: Callable[[], bool] | None = None,
        sleep: Callable[[float], Any] | None = None,
    ) -> bool:
        """The engine over this execution's claims, `concurrency` calls at a time; whether it
        stopped early (`batches.run_pipeline`)."""
        return batches.run_pipeline(
            claim=self.claim,
            ask=self.ask_async if self.asynchronous else self.ask_sync,
            write=self.write,
            tick=tick or self.tick,
            concurrency=concurrency,
            max_attempts=self.run.max_attempts,
            session=functools.partial(self.session, concurrency),
            sleep=sleep,
        )

    def session(self, concurrency: int) -> contextlib.AbstractAsyncContextManager[list]:
        """A client of one connection per slot, taken from this process's kept clients and given
        back at the end, its connection still open for the next run (`backends.clients`)."""
        return clients.slots(max(1, concurrency), keep=IDLE_CLIENTS)

    def write(self, batch: list[batches.Done]) -> None:
        """Record a batch of outcomes in one transaction: every call that went out, then each
        item. When that fails, each item is recorded alone, and one that still cannot be is
        failed alone; so is an item whose ask raised what nobody mapped (`_failed_unexpectedly`)."""
        try:
            with transaction.atomic():
                tally = self._write(batch)
        except Exception:
            if len(batch) == 1:
                return self._write_or_fail(batch[0])
            for done in batch:
                self._write_or_fail(done)
            return None
        self.tally.merge(tally)  # counted once written
        for done in batch:
            if done.error is not None:
                _failed_unexpectedly(self.run, done.item[0], done.attempts, done.error)
        return None

    def _write_or_fail(self, done: batches.Done) -> None:
        try:
            with transaction.atomic():
                tally = self._write([done])
        except Exception as exc:
            _failed_unexpectedly(self.run, done.item[0], done.attempts, exc)
        else:
            self.tally.merge(tally)
            if done.error is not None:
                _failed_unexpectedly(self.run, done.item[0], done.attempts, done.error)

    def _write(self, batch: list[batches.Done]) -> metrics.Tally:
        """Write a batch's calls and items; what its answered items add up to (`metrics.Tally`:
        it gives each its misses), for the run's tally once the batch is written."""
        rows, outcomes = [], []
        encoded: dict[int, dict[str, str]] = {}  # item id -> its last call's answers, encoded
        for done in batch:
            for outcome in done.tried:
                if outcome.request_body is not None:
                    row = decision_rows(
                        outcome=outcome,
                        ask=outcome.ask,
                        user=self.user,
                        version=self.run.version,
                        sample_state=done.item[1],
                    )
                    rows.append(row)
                    outcomes.append(outcome)
                    encoded[done.item[0]] = {a["question_id"]: a["answer"] for a in row[1]}
        for outcome, decision in zip(outcomes, decisions_record(rows), strict=True):
            outcome.decision_id = decision
        written = [d for d in batch if d.error is None and not d.released and d.tried]
        answered = [_item_of(d) for d in written]
        for item in answered if self.replayed else ():
            if item["status"] == BatchItem.Status.ANSWERED:
                both = {**self.recordings.pop(item["id"], {}), **item["answers"]}
                item["answers"] = {qid: both[qid] for qid in self.order if qid in both}
        tally = metrics.Tally(self.run.threshold)
        for item, done in zip(answered, written, strict=True):
            _pk, revision, variant = done.item
            if item["status"] == BatchItem.Status.ANSWERED and variant == 0:  # a real call
                item["misses"] = tally.add(
                    item["id"], revision.tags, revision.expected, item["answers"]
                )
        for item in answered:
            if item["answers"] is not None:  # each answer encoded once (`bulk.json_object`)
                texts = encoded.get(item["id"], {})
                item["answers"] = bulk.json_object(
                    {q: texts.get(q) or bulk.json_text(a) for q, a in item["answers"].items()}
                )
        if answered:
            _update_items(answered)
        released = [d.item[0] for d in batch if d.released]
        if released:
            BatchItem.objects.filter(pk__in=released, status=BatchItem.Status.RUNNING).update(
                status=BatchItem.Status.PENDING, claimed_at=None
            )
        return tally

    def tick(self) -> bool:
        """A cancel request, looked for every tick; the heartbeat (`beat`)."""
        self.beat()
        return self.cancelled()

    def beat(self) -> None:
        """The run's heartbeat (and progress), every HEARTBEAT_SECONDS."""
        if time.monotonic() >= self.next_beat:
            self.next_beat = time.monotonic() + batches.HEARTBEAT_SECONDS
            _beat(self.run.pk, self.on_progress)

    def helping(self) -> bool:
        """A helper's tick (`batch_execute_share`): a cancel request, or the executor that
        handed it its share stopping (`processes.stopping`). The executor keeps the heartbeat."""
        return self.cancelled() or processes.stopping()

    def add(self, share: Share) -> None:
        """What a helper did for this execution, added to its own."""
        self.tally.merge(share.tally)
        self.calls += share.calls
        self.failed_calls += share.failed_calls

    def cancelled(self) -> bool:
        """Whether the run was asked to cancel."""
        sql, params = self.cancel_query
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone() is not None

    @functools.cached_property
    def cancel_query(self) -> tuple[str, tuple[Any, ...]]:
        """The query `cancelled` sends, compiled once a run: a run looks for a cancel every
        tick (`batches.TICK_SECONDS`), and compiling the query cost six times the CPU of
        sending it (0.57 against 0.09 ms): at K = 8 and four ticks a second that was 0.2 ms a
        state, a sixth of the database thread's work."""
        asked = BatchRun.objects.filter(pk=self.run.pk, cancel_requested=True).values("pk")[:1]
        return asked.query.sql_with_params()


def _replay(
    run: BatchRun,
    questions: dict[str, spec.Question],
    model: str,
    claimed: list[tuple[int, SampleStateRevision, int]],
) -> dict[int, dict[str, Any]]:
    """The recorded answers of `questions` for each claimed item (item id → answers by id),
    from what the run's backend answered before: one query, no call."""
    name = run.backend if run.backend.startswith("recorded") else f"recorded:{run.backend}"
    replay = backends.get(name)
    shas = {pk: spec.state_sha256(revision.state) for pk, revision, _ in claimed}
    outcomes = replay.ask_many(questions, set(shas.values()), model)
    return {
        pk: outcomes[sha].checked.answers if outcomes[sha].checked else {}
        for pk, sha in shas.items()
    }


#: what a call's outcome writes to its item
_ITEM_FIELDS = [
    "status", "attempts", "answers", "error_status", "error_detail", "decision_id", "misses",
]  # fmt: skip


def _update_items(items: list[dict[str, Any]]) -> None:
    """Each item's outcome ({"id", and a value per `_ITEM_FIELDS` attname}) in one plain
    UPDATE by id (`bulk.update`)."""
    bulk.update(BatchItem, _ITEM_FIELDS, items)


def _item_of(done: batches.Done) -> dict[str, Any]:
    """An item's row as its last outcome leaves it: its id and the `_ITEM_FIELDS` values."""
    outcome = done.outcome
    item = {
        "id": done.item[0], "attempts": done.attempts, "decision_id": outcome.decision_id,
        "misses": None,  # an answered real call's are counted when it is written (`_write`)
    }  # fmt: skip
    if outcome.error is None:
        item.update(
            status=BatchItem.Status.ANSWERED, answers=outcome.checked.answers,
            error_status=None, error_detail="",
        )  # fmt: skip
    else:
        item.update(
            status=BatchItem.Status.FAILED, answers=None,
            error_status=outcome.error.status, error_detail=outcome.error.detail[:2000],
        )  # fmt: skip
    return item


def _failed_unexpectedly(run: BatchRun, item_id: int, attempts: int, exc: BaseException) -> None:
    """Fail one item over an exception nobody mapped: a refusal keeps its status and words;
    anything else is a 502 that names the kind of failure (never its message, which may quote
    the state or the provider's answer). The traceback goes to the server log."""
    if isinstance(exc, Refusal):
        status, detail = exc.status, str(exc)
    else:
        status = 502
        detail = (
            f"Asking about this state or recording the answer failed unexpectedly "
            f"({type(exc).__name__}); the server log has the details."
        )
    log.error(
        "run %s item %s: %s while asking or recording; the item failed",
        run.pk,
        item_id,
        type(exc).__name__,
        exc_info=(type(exc), exc, exc.__traceback__),
    )
    BatchItem.objects.filter(pk=item_id).update(
        status=BatchItem.Status.FAILED,
        attempts=attempts,
        answers=None,
        error_status=status,
        error_detail=detail[:2000],
    )


def _beat(run_id: int, on_progress: Callable[[BatchRun], None] | None) -> None:
    BatchRun.objects.filter(pk=run_id).update(heartbeat_at=timezone.now())
    if on_progress:
        on_progress(BatchRun.objects.get(pk=run_id))


def batch_execute(
    run_id: int,
    *,
    sleep: Callable[[float], Any] | None = None,
    on_progress: Callable[[BatchRun], None] | None = None,
) -> BatchRun | None:
    """Execute a run to its end, its cancellation, or until the process is asked to stop
    (`batches.stopping`, SIGTERM in a worker): then calls in flight finish and are recorded,
    what was claimed but not sent goes back to pending, and the run is queued again for
    another worker. Returns None when there was nothing to do: the run is finished, or a live
    executor has it, or this process is stopping. The engine (`batches.run_pipeline`) asks
    the provider on an asyncio loop; this thread does every database write, in small batches."""
    if batches.stopping.is_set():  # this process is stopping: it takes no run
        return None
    run = _take(run_id)
    if run is None:
        return None
    parsed = spec.validate(run.version.document, limits=limits(), lints=False).document
    if parsed is None:
        BatchRun.objects.filter(pk=run.pk).update(
            status=BatchRun.Status.FAILED,
            finished_at=timezone.now(),
            detail="The version's document is invalid; nothing was asked.",
        )
        run = BatchRun.objects.get(pk=run.pk)
        store_summary(run)  # every finished run has its summary: a page only reads it
        return run
    execution = _Execution(run, parsed.questions, on_progress)
    stopped = _execute(execution, sleep)
    cancelled = stopped and execution.cancelled()
    if stopped and not cancelled:
        return _hand_back(run)
    if cancelled:
        run.items.filter(status=BatchItem.Status.PENDING).update(status=BatchItem.Status.CANCELLED)
    ending = {"status": BatchRun.Status.CANCELLED if cancelled else BatchRun.Status.DONE}
    if not cancelled and not run.items.exclude(status=BatchItem.Status.FAILED).exists():
        ending = {"status": BatchRun.Status.FAILED, "detail": _every_state_failed(run)}
    BatchRun.objects.filter(pk=run.pk).update(
        **ending, finished_at=timezone.now(), heartbeat_at=timezone.now()
    )
    run = BatchRun.objects.get(pk=run.pk)
    store_summary(run, tally=execution.tally)  # a dead helper's answers: read from the database
    counts = dict(run.items.values_list("status").annotate(n=Count("pk")).order_by())
    log.info(
        "run %s %s: %s answered, %s failed, %s cancelled; %s calls (%s failed)%s in %.1f s",
        run.pk,
        run.status,
        counts.get(BatchItem.Status.ANSWERED, 0),
        counts.get(BatchItem.Status.FAILED, 0),
        counts.get(BatchItem.Status.CANCELLED, 0),
        execution.calls,
        execution.failed_calls,
        f" from {execution.processes} processes" if execution.processes > 1 else "",
        time.monotonic() - execution.started,
    )
    if on_progress:
        on_progress(run)
    return run


# --- a wide run spread over helper processes -----------------------------------------------------

#: one run at a time is spread over this process's helpers
_spreading = threading.Lock()


@dataclass
class Share:
    """What a helper did for a run (`batch_execute_share`), for its executor to add up."""

    tally: metrics.Tally
    calls: int
    failed_calls: int
    stopped: bool


def _shares(execution: _Execution) -> list[int]:
    """How many calls at a time each process makes for a run: its executor's first, then each
    helper's (`questions.processes`). A run is spread when one process would make more than
    DECISIONS__BATCH_PROCESS_CALLS calls at a time (its concurrency, or its pending states when
    fewer), over up to DECISIONS__BATCH_PROCESSES processes, when its calls go over HTTP,
    the database lets executors claim side by side (PostgreSQL's SKIP LOCKED; SQLite has one
    writer) and the run's rows are committed (a helper sees nothing of an open transaction)."""
    run, most = execution.run, settings.DECISIONS_BATCH_PROCESSES
    calls, alone = settings.DECISIONS_BATCH_PROCESS_CALLS, [run.concurrency]
    if (
        most < 2
        or run.concurrency <= calls
        or not execution.asynchronous
        or not connection.features.has_select_for_update_skip_locked
        or connection.in_atomic_block
    ):
        return alone
    wide = min(run.concurrency, run.items.filter(status=BatchItem.Status.PENDING).count())
    n = min(most, math.ceil(wide / calls))
    if n < 2:
        return alone
    return [run.concurrency // n + (i < run.concurrency % n) for i in range(n)]


def _execute(execution: _Execution, sleep: Callable[[float], Any] | None) -> bool:
    """Execute a run: in this process, or spread over its helpers (`_shares`), each claiming,
    asking and writing its share of the calls while this one keeps the heartbeat. Whether
    the run stopped early. A helper that died leaves its claimed states to this process,
    which asks them again once the others are done."""
    shares = _shares(execution)
    if len(shares) < 2 or not _spreading.acquire(blocking=False):
        return execution.pipeline(execution.run.concurrency, sleep=sleep)
    try:
        helping: list[Future] = []
        try:
            helpers = processes.pool(settings.DECISIONS_BATCH_PROCESSES - 1)
            helpers.stop.clear()
            for k in shares[1:]:
                helping.append(helpers.submit(batch_execute_share, execution.run.pk, k))
        except Exception:  # e.g. no process can be spawned here: this one asks them all
            log.exception("run %s: no helper process could be started", execution.run.pk)
            if helping:  # those started stop first (what they did stands)
                _joined(execution, helpers, helping, True)
            return execution.pipeline(execution.run.concurrency, sleep=sleep)
        stopped = True  # until this process's share has ended: its failure stops the helpers

        def tick() -> bool:  # this process's, passing a stop on to the helpers at once
            stopped = execution.tick()
            if stopped or batches.stopping.is_set():
                helpers.stop.set()
            return stopped

        try:
            stopped = execution.pipeline(shares[0], tick=tick, sleep=sleep)
        finally:  # also when this process's share failed: the helpers stop, what they did stands
            stopped = _joined(execution, helpers, helping, stopped)
    finally:
        _spreading.release()
    if execution.lost and not stopped:  # what the dead helper held is pending again
        execution.run.items.filter(status=BatchItem.Status.RUNNING).update(
            status=BatchItem.Status.PENDING, claimed_at=None
        )
        stopped = execution.pipeline(execution.run.concurrency, sleep=sleep)
    return stopped


def _joined(
    execution: _Execution, helpers: processes.Pool, helping: list[Future], stopped: bool
) -> bool:
    """Wait for the helpers' shares, keeping the run's heartbeat and passing on a stop (this
    run's, or this process's), and add up what they did; whether the run stopped."""
    waiting = set(helping)
    while waiting:
        if stopped or batches.stopping.is_set():
            helpers.stop.set()
        _, waiting = futures.wait(waiting, timeout=batches.TICK_SECONDS)
        execution.beat()
    for future in helping:
        try:
            share = future.result()
        except Exception:
            log.exception("run %s: a helper failed; its states are asked again", execution.run.pk)
            execution.lost = True
            continue
        if share is not None:
            execution.add(share)
            execution.processes += 1
            stopped = stopped or share.stopped
    return stopped


def batch_execute_share(run_id: int, concurrency: int) -> Share | None:
    """In a helper process (`_execute`): claim, ask and write `concurrency` calls at a time of a
    run another process executes, until none is left to claim, the run is cancelled or that
    process stops; what it added up. None when it cannot ask as that process does: the run
    is no longer running, or its calls would not go over HTTP here."""
    run = BatchRun.objects.filter(pk=run_id, status=BatchRun.Status.RUNNING).first()
    parsed = run and spec.validate(run.version.document, limits=limits(), lints=False).document
    if parsed is None:
        return None
    execution = _Execution(run, parsed.questions, None)
    if not execution.asynchronous:
        return None
    stopped = execution.pipeline(concurrency, tick=execution.helping)
    return Share(execution.tally, execution.calls, execution.failed_calls, stopped)


def _hand_back(run: BatchRun) -> BatchRun:
    """This process is stopping: queue the run again, so that another worker goes on with its
    pending items at once rather than after the stale window. The database backend writes
    the task in the same transaction, so the run is never queued without one."""
    with transaction.atomic():
        BatchRun.objects.filter(pk=run.pk, status=BatchRun.Status.RUNNING).update(
            status=BatchRun.Status.QUEUED, heartbeat_at=None
        )
        batch_run_task.enqueue(run.pk)
    log.warning("run %s: this worker is stopping; queued for another worker", run.pk)
    return BatchRun.objects.get(pk=run.pk)


def _every_state_failed(run: BatchRun) -> str:
    """What a run says when no state of it was answered: the most common failure."""
    commonest = (
        run.items.values("error_status", "error_detail")
        .annotate(n=Count("pk"))
        .order_by("-n", "error_status", "error_detail")
        .first()
    )
    status, detail = commonest["error_status"], commonest["error_detail"]
    return f"Every state failed: {f'{status}: ' if status else ''}{detail}"[:2000]


@task()
def batch_run_task(run_id: int) -> None:
    """Execute one batch run in a django-tasks worker (`manage.py db_worker`)."""
    batch_execute(run_id)


def batch_resume_if_stale(run: BatchRun) -> bool:
    """Queue `run` again when its worker went quiet; whether it was."""
    if run.status == BatchRun.Status.RUNNING and is_stale(run):
        batch_run_task.enqueue(run.pk)
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
