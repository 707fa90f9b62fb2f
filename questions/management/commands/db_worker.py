"""`manage.py db_worker`: django-tasks' database worker, which also takes over batch runs whose
worker died.

django_tasks_db's worker has no hook for its idle time, so this command wraps it: a thread looks
for running batch runs whose heartbeat is older than `DECISIONS__BATCH_STALE_SECONDS` every few
seconds and queues them again (`services.batch_sweep_stale`); the worker loop, this one or any
other sharing the database, then takes them over like any queued run. A stale run is taken
over within about DECISIONS__BATCH_STALE_SECONDS + 5 s by an idle worker, with nobody opening
a page.

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

from questions import batches, services, workers

log = logging.getLogger("questions.batches")


class Command(db_worker.Command):
    help = f"{db_worker.Command.help}; it also takes over batch runs whose worker died"

    def handle(self, *args: Any, **options: Any) -> None:
        if options.get("reload") and os.environ.get(DJANGO_AUTORELOAD_ENV) != "true":
            # the autoreloader's parent only restarts the child, which does the work
            return super().handle(*args, **options)
        queued: dict[int, float] = {}

        def sweep() -> None:
            try:
                services.batch_sweep_stale(queued)
            except Exception:  # the next sweep tries again; the worker goes on regardless
                log.exception("looking for batch runs whose worker died failed")

        with (
            workers.heartbeat(options["worker_id"]),
            batches.beating(sweep, every=services.batches.sweep_seconds()),
        ):
            return super().handle(*args, **options)
