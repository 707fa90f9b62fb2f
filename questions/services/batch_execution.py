"""Batch runs' execution: taking a run (or joining its executors), claiming its items, asking
the engine, recording each outcome, keeping the heartbeat and ending the run — the half of
`services.batches` that a task worker runs; the actions (create, re-run, cancel, the task, the
sweep) are in `services.batches`.

Items are claimed in chunks (SELECT … FOR UPDATE SKIP LOCKED, then a conditional UPDATE), so no
state is asked twice by two executors, and their outcomes are written in small batches, one
transaction each, by the one thread that holds the run's database connection; the provider
calls go out from the engine's asyncio loop (`questions.engine.batches`). The last executor to
end stores the run's end and its summary (`_end`). One state's failure, however unexpected,
fails that item alone.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone
from django_tasks import task

from questions import roles
from questions.core import attribution, check, controls, invariance, metrics, spec
from questions.engine import backends, batches
from questions.engine.backends import clients
from questions.models import BatchItem, BatchRun, SampleStateRevision
from questions.services import bulk
from questions.services.decisions import (
    decision_backend,
    decision_conclude,
    decision_rows,
    decision_state_refusal,
    decisions_record,
)
from questions.services.errors import (
    Refusal,
)
from questions.services.summaries import store_summary
from questions.services.versions import limits

log = logging.getLogger("questions.batches")

#: the engine's clients kept idle between runs, at most: enough for the widest run
IDLE_CLIENTS = BatchRun.MAX_CONCURRENCY


def task_widths(concurrency: int) -> list[int]:
    """The tasks a run of `concurrency` calls at a time is enqueued as, by how many calls at a
    time each makes: where executors claim side by side (PostgreSQL's SKIP LOCKED), one task
    per `batches.WORKER_CALLS` calls, in shares as equal as can be, for as many `db_worker`s to
    work at once; elsewhere (SQLite has one writer) one task of them all."""
    if not connection.features.has_select_for_update_skip_locked:
        return [concurrency]
    n = math.ceil(concurrency / batches.WORKER_CALLS)
    return [concurrency // n + (i < concurrency % n) for i in range(n)]


def is_stale(run: BatchRun) -> bool:
    """Whether a run's worker has not been heard from for DECISIONS__BATCH_STALE_SECONDS."""
    limit = timedelta(seconds=settings.DECISIONS_BATCH_STALE_SECONDS)
    return run.heartbeat_at is None or timezone.now() - run.heartbeat_at > limit


@transaction.atomic
def _take(run_id: int) -> BatchRun | None:
    """Take a run to execute: a queued one, or a running one whose executors went quiet (their
    half-done items go back to pending), or join a running one beside its live executors where
    executors claim side by side (PostgreSQL); None when there is nothing to take."""
    run = BatchRun.objects.select_for_update().filter(pk=run_id).first()
    if run is None or run.finished:
        return None
    if run.status == BatchRun.Status.RUNNING and not is_stale(run):
        if run.cancel_requested or not connection.features.has_select_for_update_skip_locked:
            return None  # its live executors end it, or (SQLite) one executor has it
        log.debug("run %s: joining its executors", run.pk)
    elif run.status == BatchRun.Status.RUNNING:
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
        try:
            chosen = decision_backend(
                backend=run.backend, user=self.user, model=run.model, on=run.question_set
            )
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

    def pipeline(self, concurrency: int, *, sleep: Callable[[float], Any] | None = None) -> bool:
        """The engine over this execution's claims, `concurrency` calls at a time; whether it
        stopped early (`batches.run_pipeline`)."""
        return batches.run_pipeline(
            claim=self.claim,
            ask=self.ask_async if self.asynchronous else self.ask_sync,
            write=self.write,
            tick=self.tick,
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
            item["decided"] = None if item["answers"] is None else metrics.decided(item["answers"])
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
    "status", "attempts", "answers", "decided", "error_status", "error_detail", "decision_id",
    "misses",
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
        decided=None,
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
    concurrency: int | None = None,
    sleep: Callable[[float], Any] | None = None,
    on_progress: Callable[[BatchRun], None] | None = None,
) -> BatchRun | None:
    """Execute a run, `concurrency` calls at a time (the run's when not given, never more),
    alone or beside its other executors (on PostgreSQL a run is several tasks, `task_widths`),
    until no state is left to claim, the run is cancelled, or this process is asked to stop
    (`batches.stopping`, SIGTERM in a worker): then calls in flight finish and are recorded,
    what was claimed but not sent goes back to pending, and this executor's share is queued
    again for another worker. The last executor to end ends the run and stores its summary
    (`_end`). Returns the run as this executor leaves it, or None when there was nothing to
    take: the run is finished, or a live executor has it (SQLite) or was asked to cancel it, or
    this process is stopping. The engine (`batches.run_pipeline`) asks the provider on an
    asyncio loop; this thread does every database write, in small batches."""
    if batches.stopping.is_set():  # this process is stopping: it takes no run
        return None
    run = _take(run_id)
    if run is None:
        return None
    parsed = check.validate(run.version.document, limits=limits(), lints=False).document
    if parsed is None:
        failed = BatchRun.objects.filter(pk=run.pk, status=BatchRun.Status.RUNNING).update(
            status=BatchRun.Status.FAILED,
            finished_at=timezone.now(),
            detail="The version's document is invalid; nothing was asked.",
        )
        run = BatchRun.objects.get(pk=run.pk)
        if failed:  # every finished run has its summary: a page only reads it
            store_summary(run)
        return run
    execution = _Execution(run, parsed.questions, on_progress)
    width = min(concurrency or run.concurrency, run.concurrency)
    ending = _AGAIN
    while ending == _AGAIN:
        execution.pipeline(width, sleep=sleep)
        ending = _end(execution, width)
    run = BatchRun.objects.get(pk=run.pk)
    span = time.monotonic() - execution.started
    calls = f"{execution.calls} calls ({execution.failed_calls} failed)"
    if ending == _HANDED_BACK:
        log.warning("run %s: this worker is stopping; its share is queued for another", run.pk)
    elif ending == _LEFT:  # with several executors each logs its calls: the last in its end
        log.info("run %s: this worker's share ended: %s in %.1f s", run.pk, calls, span)
    else:
        # the answers another executor wrote are not in this one's tally: then the summary
        # reads them all from the database
        store_summary(run, tally=execution.tally)
        counts = dict(run.items.values_list("status").annotate(n=Count("pk")).order_by())
        log.info(
            "run %s %s: %s answered, %s failed, %s cancelled; %s in %.1f s",
            run.pk,
            run.status,
            counts.get(BatchItem.Status.ANSWERED, 0),
            counts.get(BatchItem.Status.FAILED, 0),
            counts.get(BatchItem.Status.CANCELLED, 0),
            calls,
            span,
        )
    if on_progress:
        on_progress(run)
    return run


#: how an executor ends (`_end`)
_AGAIN, _LEFT, _HANDED_BACK, _ENDED = "again", "left", "handed back", "ended"


@transaction.atomic
def _end(execution: _Execution, width: int) -> str:
    """What an executor does once its pipeline has ended, decided under the run's row lock, so
    that executors that end together decide one after the other:
    - `_AGAIN`: states are pending again (an executor that stopped gave back what it had not
      sent): it claims them;
    - `_HANDED_BACK`: states are pending and this process is stopping: its share is queued
      again for another worker, and the run too when no executor holds a state (the database
      backend writes the task in this transaction: the run is never queued without one);
    - `_LEFT`: other executors hold states (in flight, or claimed by one that died, until the
      run is taken over): the last of them ends the run;
    - `_ENDED`: this one is the last: the run ends — done, cancelled (its pending states with
      it) or failed when every state failed — and this executor stores its summary."""
    run = BatchRun.objects.select_for_update().get(pk=execution.run.pk)
    if run.finished:  # the other executor that ended with this one was the last
        return _LEFT
    if run.cancel_requested:
        run.items.filter(status=BatchItem.Status.PENDING).update(status=BatchItem.Status.CANCELLED)
    left = run.items.filter(status__in=[BatchItem.Status.PENDING, BatchItem.Status.RUNNING])
    counts = dict(left.values_list("status").annotate(n=Count("pk")).order_by())
    if counts.get(BatchItem.Status.PENDING) and batches.stopping.is_set():
        if not counts.get(BatchItem.Status.RUNNING):
            BatchRun.objects.filter(pk=run.pk).update(
                status=BatchRun.Status.QUEUED, heartbeat_at=None
            )
        batch_run_task.enqueue(run.pk, width)
        return _HANDED_BACK
    if counts.get(BatchItem.Status.PENDING):
        if run.status != BatchRun.Status.RUNNING:  # the executor that stopped queued it
            BatchRun.objects.filter(pk=run.pk).update(
                status=BatchRun.Status.RUNNING, heartbeat_at=timezone.now()
            )
        return _AGAIN
    if counts.get(BatchItem.Status.RUNNING):
        return _LEFT
    ending = {"status": BatchRun.Status.DONE}
    if run.cancel_requested:
        ending = {"status": BatchRun.Status.CANCELLED}
    elif not run.items.exclude(status=BatchItem.Status.FAILED).exists():
        ending = {"status": BatchRun.Status.FAILED, "detail": _every_state_failed(run)}
    BatchRun.objects.filter(pk=run.pk).update(
        **ending, finished_at=timezone.now(), heartbeat_at=timezone.now()
    )
    return _ENDED


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
def batch_run_task(run_id: int, concurrency: int | None = None) -> None:
    """Execute a batch run, `concurrency` calls at a time (the run's when not given), in a
    django-tasks worker (`manage.py db_worker`): alone, or beside the run's other tasks."""
    batch_execute(run_id, concurrency=concurrency)
