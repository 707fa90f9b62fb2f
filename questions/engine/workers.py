"""Task workers' heartbeats: each `db_worker` process notes every few seconds that it is alive
and whether it is running a task; `/healthz` reads them. Workers on several machines share the
table through the database, like the queue itself.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, Literal

from django.utils import timezone
from django_tasks_db.compat import task_finished, task_started

from questions.engine import batches
from questions.models import WorkerHeartbeat

log = logging.getLogger("questions.workers")

#: how often a worker beats, and how long after its last beat it counts as gone
HEARTBEAT_SECONDS = 5.0
GONE_AFTER_SECONDS = 30.0

WorkerHealth = Literal["ok", "idle", "none"]


def worker_health() -> WorkerHealth:
    """ "ok" when a live worker is running a task, "idle" when live workers wait for one,
    "none" when no worker has beaten within GONE_AFTER_SECONDS."""
    since = timezone.now() - timedelta(seconds=GONE_AFTER_SECONDS)
    live = set(WorkerHeartbeat.objects.filter(beat_at__gte=since).values_list("busy", flat=True))
    if not live:
        return "none"
    return "ok" if True in live else "idle"


@contextmanager
def heartbeat(worker_id: str) -> Iterator[None]:
    """Beat for this process while the block runs (in a thread of its own, and at each task's
    start and end), and remove its row when the block ends."""
    worker_id = worker_id[:64]
    running = 0
    lock = threading.Lock()

    def started(**_: Any) -> None:
        nonlocal running
        with lock:
            running += 1
        beat()

    def finished(**_: Any) -> None:
        nonlocal running
        with lock:
            running -= 1
        beat()

    def beat() -> None:
        try:
            WorkerHeartbeat.objects.update_or_create(
                worker_id=worker_id,
                defaults={
                    "host": socket.gethostname()[:255],
                    "pid": os.getpid(),
                    "busy": running > 0,
                    "beat_at": timezone.now(),
                },
            )
        except Exception:  # the next beat tries again; the worker goes on regardless
            log.exception("worker heartbeat failed")

    beat()  # alive from the start, before the first interval has passed
    task_started.connect(started, weak=False)
    task_finished.connect(finished, weak=False)
    try:
        with batches.beating(beat, every=HEARTBEAT_SECONDS):
            yield
    finally:
        task_started.disconnect(started)
        task_finished.disconnect(finished)
        try:
            WorkerHeartbeat.objects.filter(worker_id=worker_id).delete()
        except Exception:  # its beat goes stale instead
            log.exception("removing the worker heartbeat failed")
