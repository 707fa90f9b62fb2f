"""The batch engine: ask one version about every sample state of a run, a bounded number at a
time, retrying what a provider says to retry, recording every call, and surviving its worker.

A run is executed by `batch_execute` — in a django-tasks worker (`questions.tasks`) or in the
foreground by `questions batch`. Items are claimed one by one with a conditional UPDATE, so no
state is asked twice by two executors. A worker keeps the run's heartbeat fresh; a run whose
heartbeat is older than `DECISIONS__BATCH_STALE_SECONDS` belongs to a worker that died, and the
next executor takes it over: its half-done items go back to pending and the run goes on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from questions import services, spec
from questions.models import BatchItem, BatchRun

log = logging.getLogger("questions.batches")

RETRY_AFTER_LIMIT = 60.0  # a provider asking for longer than this is not waited for


def retryable(outcome) -> bool:
    """429, 529 and the provider's 5xx are worth another try; nothing else is."""
    error = outcome.error
    if error is None:
        return False
    return error.status == 429 or (error.provider_status_code or 0) >= 500


def backoff(attempt: int, retry_after: float | None) -> float:
    """Capped exponential backoff, or what the provider asked for (Retry-After)."""
    if retry_after is not None:
        return min(retry_after, RETRY_AFTER_LIMIT)
    base = settings.DECISIONS_BATCH_BACKOFF_SECONDS
    return min(settings.DECISIONS_BATCH_BACKOFF_CAP_SECONDS, base * 2 ** (attempt - 1))


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


def _claim(item_id: int) -> bool:
    return bool(
        BatchItem.objects.filter(pk=item_id, status=BatchItem.Status.PENDING).update(
            status=BatchItem.Status.RUNNING, claimed_at=timezone.now()
        )
    )


def _cancelled(run_id: int) -> bool:
    return BatchRun.objects.filter(pk=run_id, cancel_requested=True).exists()


def _ask_one(run: BatchRun, document: dict, item_id: int, sleep: Callable[[float], None]) -> None:
    if not _claim(item_id):
        return
    item = BatchItem.objects.select_related("sample_state").get(pk=item_id)
    revision = item.sample_state
    attempt = 0
    while True:
        attempt += 1
        outcome = services.decision_ask(
            backend=run.backend,
            document=document,
            state=revision.state,
            model=run.model,
            user=run.created_by,
            version=run.version,
            sample_state=revision,
        )
        if outcome.error is None or not retryable(outcome) or attempt >= run.max_attempts:
            break
        if _cancelled(run.pk):
            break
        delay = backoff(attempt, outcome.error.retry_after)
        log.info(
            "run %s item %s: %s, retry %d in %.2fs",
            run.pk,
            item_id,
            outcome.error.status,
            attempt,
            delay,
        )
        sleep(delay)
    item.attempts = attempt
    if outcome.error is None:
        item.status = BatchItem.Status.ANSWERED
        item.answers = outcome.checked.answers
    else:
        item.status = BatchItem.Status.FAILED
        item.error_status = outcome.error.status
        item.error_detail = outcome.error.detail[:2000]
    item.decision_id = outcome.decision_id
    item.save(
        update_fields=[
            "status",
            "attempts",
            "answers",
            "error_status",
            "error_detail",
            "decision",
        ]
    )


def batch_execute(
    run_id: int,
    *,
    sleep: Callable[[float], None] = time.sleep,
    on_progress: Callable[[BatchRun], None] | None = None,
) -> BatchRun | None:
    """Execute a run to its end (or its cancellation). Returns None when there was nothing to
    do: the run is finished, or a live executor has it."""
    run = _take(run_id)
    if run is None:
        return None
    document = run.version.document
    if spec.validate(document, lints=False).document is None:
        BatchRun.objects.filter(pk=run.pk).update(
            status=BatchRun.Status.FAILED,
            finished_at=timezone.now(),
            detail="The version's document is invalid; nothing was asked.",
        )
        return BatchRun.objects.get(pk=run.pk)
    stop = threading.Event()

    def heartbeat() -> None:
        while not stop.wait(2.0):
            BatchRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now())
            if on_progress:
                on_progress(BatchRun.objects.get(pk=run.pk))
        connection.close()

    beat = threading.Thread(target=heartbeat, daemon=True)
    beat.start()
    pending = deque(run.items.filter(status=BatchItem.Status.PENDING).values_list("pk", flat=True))
    lock = threading.Lock()
    failures: list[BaseException] = []

    def worker() -> None:
        """One of `concurrency` workers: the next pending state until none is left (or the run
        is cancelled); one database connection for its whole life."""
        try:
            while True:
                with lock:
                    if not pending or failures:
                        return
                    item_id = pending.popleft()
                if _cancelled(run.pk):
                    return
                _ask_one(run, document, item_id, sleep)
        except BaseException as exc:  # surfaced below, after every worker stopped
            failures.append(exc)
        finally:
            connection.close()

    workers = [threading.Thread(target=worker) for _ in range(max(1, run.concurrency))]
    try:
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        if failures:
            raise failures[0]
    finally:
        stop.set()
        beat.join(5)
        close_old_connections()
    cancelled = _cancelled(run.pk)
    if cancelled:
        run.items.filter(status=BatchItem.Status.PENDING).update(status=BatchItem.Status.CANCELLED)
    BatchRun.objects.filter(pk=run.pk).update(
        status=BatchRun.Status.CANCELLED if cancelled else BatchRun.Status.DONE,
        finished_at=timezone.now(),
        heartbeat_at=timezone.now(),
    )
    run = BatchRun.objects.get(pk=run.pk)
    if on_progress:
        on_progress(run)
    return run


def resume_stale_runs() -> list[int]:
    """Queue again every running run whose worker went quiet; returns their ids."""
    from questions.tasks import batch_run_task

    limit = timezone.now() - timedelta(seconds=settings.DECISIONS_BATCH_STALE_SECONDS)
    stale = list(
        BatchRun.objects.filter(status=BatchRun.Status.RUNNING, heartbeat_at__lt=limit).values_list(
            "pk", flat=True
        )
    )
    for pk in stale:
        batch_run_task.enqueue(pk)
    return stale
