"""Background work through Django's tasks API (django-tasks, database backend): many worker
processes and machines can share one queue (`manage.py db_worker`). The task itself lives with
the batch runs it executes (`questions.services.batches`); this name is kept for task rows that
were queued under it."""

from questions.services.batches import batch_run_task

__all__ = ["batch_run_task"]
