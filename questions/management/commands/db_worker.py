"""`manage.py db_worker`: django-tasks' database worker, which also takes over batch runs whose
worker died, and queues again the webhook deliveries whose task died with one.

django_tasks_db's worker has no hook for its idle time, so this command wraps it: a thread looks
for running batch runs whose heartbeat is older than `DECISIONS__BATCH_STALE_SECONDS` every few
seconds and queues them again (`services.batch_sweep_stale`), and about once an hour deletes the
production states past their set's retention (`services.production_purge_due`); the worker
loop, this one or any
other sharing the database, then takes them over like any queued run. A stale run is taken
over within about DECISIONS__BATCH_STALE_SECONDS + 5 s by an idle worker, with nobody opening
a page.

Its garbage collector leaves alone what it loaded at start and collects young objects less
often (`batches.fewer_collections`): a run's states make many short-lived objects.

On SIGTERM (or Ctrl-C) a batch run in progress stops early and this worker's share of it is
queued again, so another worker goes on with it at once (`Worker`); a second signal ends the
process at once.

It overrides django_tasks_db's command of the same name because `questions` comes before
`django_tasks_db` in INSTALLED_APPS (Django uses the first app that has a command), so the
plain `manage.py db_worker` that `make run` and the README start is this one.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from django.utils.autoreload import DJANGO_AUTORELOAD_ENV
from django_tasks_db.management.commands import db_worker

from questions import services
from questions.engine import batches, workers

log = logging.getLogger("questions.batches")


class Worker(db_worker.Worker):
    """django_tasks_db's worker, which on SIGTERM/SIGINT also tells a batch run in progress to
    stop: its calls in flight finish and are recorded, what it claimed but had not sent goes
    back to pending, and its share of the run is queued again for another worker
    (`services.batch_execute`)."""

    def shutdown(self, signum, frame) -> None:
        batches.stopping.set()
        super().shutdown(signum, frame)


class Command(db_worker.Command):
    help = f"{db_worker.Command.help}; it also takes over batch runs whose worker died"

    def handle(self, *args: Any, **options: Any) -> None:
        if options.get("reload") and os.environ.get(DJANGO_AUTORELOAD_ENV) != "true":
            # the autoreloader's parent only restarts the child, which does the work
            return super().handle(*args, **options)
        queued: dict[int, float] = {}
        overdue: dict[int, float] = {}
        purged: dict[str, float] = {}

        def sweep() -> None:
            try:
                services.batch_sweep_stale(queued)
            except Exception:  # the next sweep tries again; the worker goes on regardless
                log.exception("looking for batch runs whose worker died failed")
            try:
                services.webhook_sweep_overdue(overdue)
            except Exception:  # likewise
                log.exception("looking for overdue webhook deliveries failed")
            try:
                services.production_purge_due(purged)
            except Exception:  # likewise: the next hour's purge tries again
                log.exception("deleting production states past their retention failed")

        batches.stopping.clear()
        plain, db_worker.Worker = db_worker.Worker, Worker  # the command builds the worker
        try:
            with (
                batches.fewer_collections(),
                workers.heartbeat(options["worker_id"]),
                batches.beating(sweep, every=services.batches.sweep_seconds()),
            ):
                return super().handle(*args, **options)
        finally:
            db_worker.Worker = plain
